import keras
import numpy as np
import pytest

from ganet_tf.layers import SparseAttentionPooling
from tests.layer_harness import run_layer_test
from tests.layers.test_sparse_normalizers import numpy_entmax15
from tests.layers.test_sparse_normalizers import numpy_sparsemax
from tests.lazy_import import tensorflow as tf

RNG = np.random.default_rng(0)
STATES = RNG.normal(size=[5, 6, 4]).astype("float32")
MASK = np.array(
    [
        [1, 1, 1, 1, 1, 1],  # no padding
        [1, 1, 1, 0, 0, 0],  # padded
        [1, 0, 0, 0, 0, 0],  # one real token
        [0, 0, 0, 0, 0, 0],  # empty text
        [1, 1, 1, 1, 1, 0],
    ],
    bool,
)
REFERENCES = {"sparsemax": numpy_sparsemax, "entmax15": numpy_entmax15}


def reference(layer, states, mask):
    """The layer's scores, weights and context in float64 NumPy."""
    w, b = [v.astype("float64") for v in layer.hidden.get_weights()]
    (v,) = [x.astype("float64") for x in layer.score.get_weights()]
    scores = (np.tanh(states.astype("float64") @ w + b) @ v)[..., 0]
    weights = np.stack([REFERENCES[layer.normalizer](row, real) for row, real in zip(scores, mask, strict=True)])
    return np.einsum("bt,btf->bf", weights, states), weights


def sharp_layer(normalizer):
    """A layer whose scores are spread wide enough for exact zeros."""
    layer = SparseAttentionPooling(units=3, normalizer=normalizer)
    layer(STATES)
    # Fixed weights: drawn from the global RNG, the score network could give
    # some seeds (test order under xdist) single-token supports, whose
    # weights get no gradient.
    kernel = np.random.default_rng(7).normal(scale=0.6, size=[4, 3]).astype("float32")
    layer.hidden.set_weights([kernel, np.zeros([3], "float32")])
    layer.score.set_weights([np.array([[4.0], [-3.0], [5.0]], "float32")])
    layer.attended_density.reset_state()
    return layer


@pytest.mark.backends
@pytest.mark.parametrize("normalizer", ["sparsemax", "entmax15"])
def test_matches_numpy_reference_with_padded_and_empty_rows(normalizer):
    layer = sharp_layer(normalizer)
    context, weights = layer(STATES, mask=MASK)
    expected_context, expected_weights = reference(layer, STATES, MASK)
    np.testing.assert_allclose(np.asarray(weights), expected_weights, atol=1e-6)
    np.testing.assert_allclose(np.asarray(context), expected_context, atol=1e-5)
    weights = np.asarray(weights)
    assert np.all(weights[~MASK] == 0)
    assert weights[2, 0] == 1.0 and np.all(np.asarray(context)[3] == 0)
    np.testing.assert_allclose(weights.sum(axis=1), [1, 1, 1, 0, 1], atol=1e-6)
    # Exact zeros among the real tokens (the point of the layer).
    assert np.any(weights[MASK] == 0)


@pytest.mark.parametrize("normalizer", ["sparsemax", "entmax15"])
def test_attended_density_counts_real_tokens_with_weight(normalizer):
    layer = sharp_layer(normalizer)
    _, weights = layer(STATES, mask=MASK)
    attended = (np.asarray(weights) > 0) & MASK
    expected = np.mean([attended[row].sum() / MASK[row].sum() for row in (0, 1, 2, 4)])
    assert float(layer.attended_density.result()) == pytest.approx(expected, rel=1e-6)
    assert expected < 1.0


def test_attended_density_is_logged_by_fit_and_evaluate():
    states = keras.Input((6, 4))
    context, _ = SparseAttentionPooling(units=3)(states)
    model = keras.Model(states, context)
    model.compile("sgd", "mse")
    history = model.fit(STATES, np.zeros([5, 4]), epochs=1, verbose=0)
    logs = model.evaluate(STATES, np.zeros([5, 4]), return_dict=True, verbose=0)
    assert 0 < logs["attended_density"] <= 1 and "attended_density" in history.history


@pytest.mark.parametrize("normalizer", ["sparsemax", "entmax15"])
def test_float16_policy_is_finite_and_close(normalizer):
    layer = SparseAttentionPooling(units=3, normalizer=normalizer, dtype="mixed_float16")
    context, weights = layer(STATES, mask=MASK)
    assert weights.dtype == "float16" and context.dtype == "float16"
    _, expected = reference(layer, STATES, MASK)
    assert np.all(np.isfinite(np.asarray(context)))
    np.testing.assert_allclose(np.asarray(weights).astype("float32"), expected, atol=2e-3)
    assert np.all(np.asarray(weights)[~MASK] == 0)


@pytest.mark.parametrize("normalizer", ["sparsemax", "entmax15"])
def test_gradients_are_finite_and_reach_states_and_weights(normalizer):
    states = tf.Variable(STATES)
    layer = sharp_layer(normalizer)
    with tf.GradientTape() as tape:
        context, _ = layer(states, mask=MASK)
        loss = tf.reduce_sum(context * tf.range(1.0, 5.0))
    gradients = tape.gradient(loss, [states, *layer.trainable_weights])
    for gradient in gradients:
        assert np.all(np.isfinite(np.asarray(gradient))) and np.any(np.asarray(gradient) != 0)
    assert np.all(np.asarray(gradients[0])[~MASK] == 0)


@pytest.mark.backends
@pytest.mark.parametrize("normalizer", ["sparsemax", "entmax15"])
def test_layer_harness(normalizer, tmp_path):
    run_layer_test(
        SparseAttentionPooling,
        {"units": 3, "normalizer": normalizer, "return_attention_scores": True},
        STATES,
        tmp_path,
        mask=MASK,
    )


def test_output_shapes_and_flops():
    layer = SparseAttentionPooling(units=7, return_attention_scores=False)
    assert layer.compute_output_shape((2, 6, 4)) == (2, 4)
    assert SparseAttentionPooling(units=2).compute_output_shape((2, 6, 4)) == ((2, 4), (2, 6))
    assert layer(STATES).shape == (5, 4)
    assert layer.flops_per_token() == 2 * 4 * 7 + 4 * 7 + 3 + 2 * 4


@pytest.mark.backends
@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"units": 0}, "units"),
        ({"units": 2.5}, "units"),
        ({"units": True}, "units"),
        ({"normalizer": "softmax"}, "normalizer"),
        ({"normalizer": "entmax"}, "normalizer"),
    ],
)
def test_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        SparseAttentionPooling(**arguments)


@pytest.mark.backends
def test_bad_inputs():
    with pytest.raises(ValueError, match="inputs"):
        SparseAttentionPooling(units=2)(np.zeros([2, 4], "float32"))
