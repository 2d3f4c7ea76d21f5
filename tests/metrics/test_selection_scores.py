import numpy as np
import pytest

from ganet_tf.metrics import selection_scores

# Three texts of lengths 4, 2 and 6 (padded to 6), and an empty one.
REAL = np.array(
    [[1, 1, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0]],
    bool,
)
KEYWORDS = np.array(
    [[1, 0, 0, 0, 1, 0], [0, 1, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]],
    bool,
)  # the keyword on padding (row 0, step 4) and in the empty row do not count
ATTENDED = np.array(
    [[1, 1, 0, 0, 0, 1], [1, 1, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1]],
    bool,
)


def test_hand_made_example():
    scores = selection_scores(ATTENDED, KEYWORDS, REAL, length_edges=(1, 3, 5, 10))
    # Attended real tokens: 2 + 2 + 1 = 5, of which keywords 1 + 1 + 1 = 3;
    # keywords: 1 + 1 + 3 = 5.
    assert scores["all"] == {
        "texts": 3,
        "precision": pytest.approx(3 / 5),
        "recall": pytest.approx(3 / 5),
        "attended_density": pytest.approx((2 / 4 + 2 / 2 + 1 / 6) / 3),
        "true_share": pytest.approx((1 / 4 + 1 / 2 + 3 / 6) / 3),
    }
    by_length = scores["by_length"]
    assert list(by_length) == ["1-2", "3-4", "5-10"]
    assert by_length["1-2"] == {"texts": 1, "precision": 0.5, "recall": 1.0, "attended_density": 1.0, "true_share": 0.5}
    assert by_length["3-4"]["precision"] == 0.5 and by_length["3-4"]["recall"] == 1.0
    assert by_length["5-10"]["recall"] == pytest.approx(1 / 3) and by_length["5-10"]["precision"] == 1.0


def test_empty_selections_and_lengths_outside_the_edges():
    nothing = selection_scores(np.zeros_like(REAL), KEYWORDS, REAL, length_edges=(3, 5))
    assert nothing["all"]["precision"] is None and nothing["all"]["recall"] == 0.0
    assert list(nothing["by_length"]) == ["<3", "3-5", ">5"]
    no_keywords = selection_scores(ATTENDED, np.zeros_like(REAL), REAL)
    assert no_keywords["all"]["recall"] is None and no_keywords["all"]["precision"] == 0.0


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"attended": ATTENDED[:, :4]}, "one shape"),
        ({"real": REAL[0]}, "one shape"),
        ({"length_edges": (5,)}, "length_edges"),
        ({"length_edges": (5, 5)}, "length_edges"),
    ],
)
def test_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        selection_scores(**{"attended": ATTENDED, "keywords": KEYWORDS, "real": REAL, **arguments})
