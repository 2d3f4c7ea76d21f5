import numpy as np
import pytest

from ganet_tf.data.synthetic_selection import keyword
from ganet_tf.data.synthetic_selection import selection_task


@pytest.mark.parametrize("share", [0.05, 0.2, 0.5])
def test_shares_lengths_and_keywords_are_as_asked(share):
    texts, labels, masks = selection_task(600, keyword_share=share, seed=3)
    words = [text.split() for text in texts]
    lengths = np.array([len(w) for w in words])
    assert lengths.min() >= 5 and lengths.max() <= 400 and masks.shape == (600, 400)
    # Log-uniform lengths: short and long texts both present.
    assert np.mean(lengths < 20) > 0.2 and np.mean(lengths >= 200) > 0.1
    shares = masks.sum(axis=1) / lengths
    assert np.all(masks.sum(axis=1) >= 1)
    # Long texts hit the asked share (short ones round up to one keyword).
    long = lengths >= 100
    assert np.mean(shares[long]) == pytest.approx(share, rel=0.1)
    assert shares[long].std() > 0.05 * share  # varies by text
    for row in range(600):
        expected = {keyword(labels[row], j) for j in range(10)}
        found = {w for t, w in enumerate(words[row]) if masks[row, t]}
        assert found <= expected
        assert all(w.startswith("w") for t, w in enumerate(words[row]) if not masks[row, t])
        assert not masks[row, lengths[row] :].any()
    assert set(labels) == {0, 1, 2, 3}


def test_seeded_and_standardisation_proof():
    first = selection_task(20, 0.2, seed=7)
    again = selection_task(20, 0.2, seed=7)
    other = selection_task(20, 0.2, seed=8)
    assert first[0] == again[0] and np.array_equal(first[2], again[2])
    assert first[0] != other[0]
    assert all(text == text.lower() and text.replace(" ", "").isalnum() for text in first[0])


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"size": 0}, "size"),
        ({"keyword_share": 0.0}, "keyword_share"),
        ({"keyword_share": 1.5}, "keyword_share"),
        ({"min_length": 10, "max_length": 5}, "max_length"),
        ({"num_classes": 1}, "num_classes"),
        ({"share_spread": 1.0}, "share_spread"),
    ],
)
def test_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        selection_task(**{"size": 4, "keyword_share": 0.2, **arguments})
