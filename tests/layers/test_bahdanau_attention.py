import numpy as np
import pytest

from ganet_tf.layers.bahdanau_attention import BahdanauAttention
from tests.layer_harness import run_layer_test
from tests.lazy_import import tensorflow as tf

RNG = np.random.default_rng(0)
VALUES = RNG.normal(size=[3, 6, 4]).astype("float32")
QUERY = RNG.normal(size=[3, 5]).astype("float32")
MASK = np.array([[1] * 6, [1, 1, 1, 0, 0, 0], [0] * 6], bool)  # full, padded, empty


def reference(layer, query, values, mask):
    """alpha = softmax_j v^T tanh(W_q q + W_k h_j + b) over real j, float64."""
    (wq,) = [w.astype("float64") for w in layer.query_dense.get_weights()]
    wk, bk = [w.astype("float64") for w in layer.key_dense.get_weights()]
    (v,) = [w.astype("float64") for w in layer.score_dense.get_weights()]
    scores = np.tanh((query @ wq)[..., None, :] + values @ wk + bk) @ v
    scores = scores[..., 0]
    weights = np.where(mask, np.exp(scores - scores.max(-1, keepdims=True)), 0.0)
    weights = weights / np.maximum(weights.sum(-1, keepdims=True), 1e-300)
    return np.einsum("...s,...sf->...f", weights, values), weights


@pytest.mark.backends
def test_matches_numpy_reference_with_padded_and_empty_rows():
    layer = BahdanauAttention(units=3)
    context, weights = layer(QUERY, VALUES, values_mask=MASK)
    expected_context, expected_weights = reference(layer, QUERY, VALUES, MASK)
    np.testing.assert_allclose(np.asarray(weights), expected_weights, atol=1e-6)
    np.testing.assert_allclose(np.asarray(context), expected_context, atol=1e-5)
    np.testing.assert_allclose(np.asarray(weights).sum(-1), [1, 1, 0], atol=1e-6)
    assert np.all(np.asarray(weights)[~MASK] == 0)


def test_all_target_steps_at_once_match_single_steps():
    layer = BahdanauAttention(units=3)
    queries = RNG.normal(size=[3, 2, 5]).astype("float32")
    context, weights = layer(queries, VALUES, values_mask=MASK)
    for step in range(2):
        one_context, one_weights = layer(queries[:, step], VALUES, values_mask=MASK)
        np.testing.assert_allclose(np.asarray(weights)[:, step], np.asarray(one_weights), atol=1e-6)
        np.testing.assert_allclose(np.asarray(context)[:, step], np.asarray(one_context), atol=1e-6)


def test_float16_policy_is_finite_and_close():
    layer = BahdanauAttention(units=3, dtype="mixed_float16")
    context, weights = layer(QUERY, VALUES, values_mask=MASK)
    assert weights.dtype == "float16" and np.all(np.isfinite(np.asarray(context)))
    _, expected = reference(layer, QUERY, VALUES, MASK)
    np.testing.assert_allclose(np.asarray(weights).astype("float32"), expected, atol=2e-3)


@pytest.mark.backends
def test_layer_harness(tmp_path):
    run_layer_test(
        BahdanauAttention,
        {"units": 3, "return_attention_scores": True},
        QUERY,
        tmp_path,
        call_kwargs={"values": VALUES},
        mask=MASK,
        mask_argument="values_mask",
        masked_input="values",
    )


def test_output_shapes():
    assert BahdanauAttention(units=3).compute_output_shape((3, 5), (3, 6, 4)) == ((3, 4), (3, 6))
    assert BahdanauAttention(units=3, return_attention_scores=False).compute_output_shape((3, 5), (3, 6, 4)) == (3, 4)


def test_gradients_reach_query_and_values():
    query, values = tf.Variable(QUERY), tf.Variable(VALUES)
    layer = BahdanauAttention(units=3)
    with tf.GradientTape() as tape:
        context, _ = layer(query, values, values_mask=MASK)
        loss = tf.reduce_sum(context * tf.range(1.0, 5.0))
    query_gradient, values_gradient = tape.gradient(loss, [query, values])
    assert np.all(np.asarray(values_gradient)[~MASK] == 0)
    assert np.any(np.asarray(values_gradient)[MASK] != 0) and np.any(np.asarray(query_gradient) != 0)


def test_flops_count():
    layer = BahdanauAttention(units=3)
    layer(QUERY, VALUES)
    assert layer.flops_per_node() == 2 * 4 * 3 + 5 * 3 + 3 + 2 * 4
    assert layer.flops_per_node(projected_keys=True) == 4 * 3 + 3 + 2 * 4
    assert layer.flops_per_query() == 2 * 5 * 3


@pytest.mark.backends
@pytest.mark.parametrize("units", [0, 2.5, True])
def test_bad_arguments(units):
    with pytest.raises(ValueError, match="units"):
        BahdanauAttention(units=units)


@pytest.mark.backends
def test_bad_inputs():
    with pytest.raises(ValueError, match="values"):
        BahdanauAttention(units=2)(QUERY, VALUES[:, 0])
