import numpy as np
import pytest

from ganet_tf.layers import LocalAttentionPooling
from tests.layer_harness import run_layer_test

RNG = np.random.default_rng(1)
STATES = RNG.normal(size=[3, 12, 4]).astype("float32")
QUERY = RNG.normal(size=[3, 5]).astype("float32")
MASK = np.array([[1] * 12, [1] * 5 + [0] * 7, [0] * 12], bool)


def reference(layer, states, query, mask):
    wh, bh = layer.centre_hidden.get_weights()
    wc, bc = layer.centre.get_weights()
    (wa,) = layer.score_projection.get_weights()
    weights = np.zeros(states.shape[:2])
    for row in range(len(states)):
        length = mask[row].sum()
        if length == 0:
            continue
        centre = (length - 1) / (1 + np.exp(-(np.tanh(query[row] @ wh + bh) @ wc + bc)[0]))
        positions = np.arange(states.shape[1])
        allowed = mask[row] & (np.abs(positions - centre) <= layer.window)
        scores = (states[row] @ wa) @ query[row]
        soft = np.where(allowed, np.exp(scores - scores[allowed].max()), 0.0)
        soft /= soft.sum()
        sigma = layer.window / 2
        weights[row] = soft * np.exp(-((positions - centre) ** 2) / (2 * sigma**2))
    return np.einsum("bt,btf->bf", weights, states), weights


@pytest.mark.backends
def test_matches_numpy_reference_with_masked_rows():
    layer = LocalAttentionPooling(window=2, units=3)
    context, weights = layer(STATES, query=QUERY, mask=MASK)
    expected_context, expected_weights = reference(layer, STATES, QUERY, MASK)
    np.testing.assert_allclose(np.asarray(weights), expected_weights, atol=1e-5)
    np.testing.assert_allclose(np.asarray(context), expected_context, atol=1e-5)
    assert np.all(np.asarray(weights)[~MASK] == 0)
    assert np.count_nonzero(np.asarray(weights)[0]) <= 2 * 2 + 1


def test_default_query_is_the_last_real_state():
    layer = LocalAttentionPooling(window=3, units=3)
    context, _ = layer(STATES[:2], mask=MASK[:2])
    last = np.stack([STATES[0, 11], STATES[1, 4]])
    expected, _ = reference(layer, STATES[:2], last, MASK[:2])
    np.testing.assert_allclose(np.asarray(context), expected, atol=1e-5)


def test_output_shapes():
    layer = LocalAttentionPooling(window=4, units=6, return_attention_scores=False)
    assert layer.compute_output_shape((3, 12, 4)) == (3, 4)


@pytest.mark.backends
@pytest.mark.parametrize(
    "arguments, message",
    [({"window": 0}, "window"), ({"window": 1.5}, "window"), ({"units": -1}, "units")],
)
def test_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        LocalAttentionPooling(**arguments)


@pytest.mark.backends
def test_layer_harness(tmp_path):
    run_layer_test(
        LocalAttentionPooling,
        {"window": 2, "units": 3, "return_attention_scores": True},
        STATES,
        tmp_path,
        call_kwargs={"query": QUERY},
        mask=MASK,
    )
