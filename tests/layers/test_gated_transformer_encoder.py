import warnings

import keras
import numpy as np
import pytest

from ganet_tf.layers import GatedAttentionPooling
from ganet_tf.layers import GatedTransformerEncoder
from tests.layer_harness import run_layer_test
from tests.lazy_import import tensorflow as tf

RNG = np.random.default_rng(1)
X = RNG.normal(size=[3, 10, 8]).astype("float32")
GATES = (RNG.random([3, 10]) > 0.5).astype("float32")
GATES[:, 0] = 1.0
PADDING = np.ones([3, 10], bool)
PADDING[1, 7:] = False
OPEN = (GATES > 0.5) & PADDING


def blocks(normalize_first=False, **kwargs):
    """A dense and a token-dropping block with the same weights."""
    dense = GatedTransformerEncoder(16, 2, normalize_first=normalize_first, **kwargs)
    dropping = GatedTransformerEncoder(
        16, 2, normalize_first=normalize_first, token_dropping=True, sparse_buckets=[0.3, 0.6], **kwargs
    )
    dense(X)
    dropping(X)
    dropping.set_weights(dense.get_weights())
    return dense, dropping


@pytest.mark.backends
def test_layer_harness(tmp_path):
    run_layer_test(
        GatedTransformerEncoder,
        {
            "intermediate_dim": 16,
            "num_heads": 2,
            "dropout": 0.1,
            "activation": "gelu",
            "normalize_first": True,
            "token_dropping": True,
            "sparse_inference": True,
            "sparse_buckets": [0.5, 1.0],
        },
        X,
        tmp_path,
        call_kwargs={"gates": GATES, "padding_mask": PADDING},
    )


@pytest.mark.backends
def test_layer_harness_sparse_training(tmp_path):
    run_layer_test(
        GatedTransformerEncoder,
        {
            "intermediate_dim": 16,
            "num_heads": 2,
            "sparse_training": True,
            "training_density": 0.4,
            "sparse_bucket_multiple": 4,
        },
        X,
        tmp_path,
        call_kwargs={"gates": RELAXED, "padding_mask": PADDING},
    )


@pytest.mark.backends
def test_layer_harness_sliding_window(tmp_path):
    run_layer_test(
        GatedTransformerEncoder,
        {"intermediate_dim": 16, "num_heads": 2, "sliding_window": 3},
        X,
        tmp_path,
        call_kwargs={"gates": GATES, "padding_mask": PADDING},
    )


def test_sliding_window_equals_a_banded_attention_mask():
    local = GatedTransformerEncoder(16, 2, sliding_window=3)
    dense = GatedTransformerEncoder(16, 2)
    local(X)
    dense(X)
    dense.set_weights(local.get_weights())
    positions = np.arange(10)
    band = np.abs(positions[:, None] - positions[None, :]) < 3
    band = np.broadcast_to(band, [3, 10, 10])
    for gates in (None, GATES):
        got = np.asarray(local(X, padding_mask=PADDING, gates=gates))[PADDING]
        expected = np.asarray(dense(X, padding_mask=PADDING, attention_mask=band, gates=gates))[PADDING]
        np.testing.assert_allclose(got, expected, atol=1e-5)
        unbanded = np.asarray(dense(X, padding_mask=PADDING, gates=gates))[PADDING]
        assert not np.allclose(got, unbanded, atol=1e-3)


def test_all_gates_open_equals_the_ungated_block():
    dense, dropping = blocks()
    ones = np.ones([3, 10], "float32")
    expected = np.asarray(dense(X, padding_mask=PADDING))[PADDING]
    for layer in (dense, dropping):
        got = np.asarray(layer(X, padding_mask=PADDING, gates=ones))[PADDING]
        np.testing.assert_allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize("normalize_first,multiple", [(False, 1), (True, 1), (False, 4)])
def test_token_dropping_keeps_open_tokens_and_passes_closed_ones(normalize_first, multiple):
    dense, dropping = blocks(normalize_first, sparse_bucket_multiple=multiple)
    attention_mask = RNG.random([3, 10, 10]) > 0.2
    kwargs = {"padding_mask": PADDING, "attention_mask": attention_mask, "gates": GATES}
    expected = np.asarray(dense(X, **kwargs))
    got = np.asarray(dropping(X, **kwargs))
    np.testing.assert_allclose(got[OPEN], expected[OPEN], atol=1e-5)
    np.testing.assert_array_equal(got[~OPEN], X[~OPEN])


@pytest.mark.backends
def test_token_dropping_in_mixed_precision():
    # Regression: under JAX on CPU the token-dropping path failed in
    # float16. The gathered tokens attend without gates, through Keras'
    # `MultiHeadAttention.call` and its fused kernel, which XLA's CPU
    # backend cannot compile in float16; Keras falls back where that fails
    # eagerly, not inside the `keras.ops.switch` branch (traced and
    # compiled as a whole, in an eager call too).
    dense = GatedTransformerEncoder(16, 2, dtype="mixed_float16")
    dropping = GatedTransformerEncoder(16, 2, token_dropping=True, sparse_buckets=[0.3, 0.6], dtype="mixed_float16")
    half = X.astype("float16")
    dense(half)
    dropping(half)
    dropping.set_weights(dense.get_weights())
    expected = np.asarray(dense(half, padding_mask=PADDING, gates=GATES), "float32")
    got = dropping(half, padding_mask=PADDING, gates=GATES)
    assert keras.backend.standardize_dtype(got.dtype) == "float16"
    got = np.asarray(got, "float32")
    np.testing.assert_allclose(got[OPEN], expected[OPEN], atol=2e-2)
    np.testing.assert_array_equal(got[~OPEN], half[~OPEN])


def test_two_dropping_blocks_and_gated_pooling_equal_the_dense_stack():
    first, first_dropping = blocks()
    second, second_dropping = blocks()
    pooling = GatedAttentionPooling(units=4, return_attention_scores=False)

    def model(a, b):
        x = b(a(X, padding_mask=PADDING, gates=GATES), padding_mask=PADDING, gates=GATES)
        return pooling(x, gates=GATES, mask=PADDING)

    np.testing.assert_allclose(model(first_dropping, second_dropping), model(first, second), atol=1e-5)


def test_training_uses_every_token_and_reaches_the_gates():
    _, dropping = blocks()
    gates = tf.Variable(np.clip(RNG.random([3, 10]), 0.1, 1.0).astype("float32"))
    with tf.GradientTape() as tape:
        out = dropping(X, gates=gates, training=True)
        loss = tf.reduce_sum(out**2)
    grad = np.asarray(tape.gradient(loss, gates))
    assert np.all(np.isfinite(grad)) and np.all(grad != 0)


@pytest.mark.backends
def test_errors():
    with pytest.raises(ValueError, match="multiple of `num_heads`"):
        GatedTransformerEncoder(16, 3)(X)
    with pytest.raises(ValueError, match="intermediate_dim"):
        GatedTransformerEncoder(0, 2)
    with pytest.raises(ValueError, match="sparse_buckets"):
        GatedTransformerEncoder(16, 2, sparse_buckets=[2.0])
    with pytest.raises(ValueError, match="sparse_bucket_multiple"):
        GatedTransformerEncoder(16, 2, sparse_bucket_multiple=0)
    with pytest.raises(ValueError, match="dropout"):
        GatedTransformerEncoder(16, 2, dropout=1.0)
    with pytest.raises(ValueError, match="dropout"):
        GatedTransformerEncoder(16, 2, dropout=float("nan"))
    with pytest.raises(ValueError, match="training_density"):
        GatedTransformerEncoder(16, 2, sparse_training=True)
    with pytest.raises(ValueError, match="training_density"):
        GatedTransformerEncoder(16, 2, sparse_training=True, training_density=1.5)
    with pytest.raises(ValueError, match="sparse_training"):
        GatedTransformerEncoder(16, 2, sparse_training="yes", training_density=0.5)
    with pytest.raises(ValueError, match="sliding_window"):
        GatedTransformerEncoder(16, 2, sliding_window=0)
    with pytest.raises(ValueError, match="compacted"):
        GatedTransformerEncoder(16, 2, sliding_window=4, token_dropping=True)
    with pytest.raises(ValueError, match="compacted"):
        GatedTransformerEncoder(16, 2, sliding_window=4, sparse_training=True, training_density=0.5)
    assert keras.saving.get_registered_object("ganet_tf>GatedTransformerEncoder") is GatedTransformerEncoder


# Sparse training: the top_k rule keeps round(rho T) real tokens per row.
SPARSE_RNG = np.random.default_rng(7)
RELAXED = np.clip(SPARSE_RNG.random([3, 10]), 0.05, 0.95).astype("float32")


def sparse_training_pair(density, **kwargs):
    """A dense block and a sparse-training block with the same weights."""
    dense = GatedTransformerEncoder(16, 2, **kwargs)
    sparse = GatedTransformerEncoder(16, 2, sparse_training=True, training_density=density, **kwargs)
    dense(X)
    sparse(X)
    sparse.set_weights(dense.get_weights())
    return dense, sparse


# A fixed random readout: the sum of squares of a layer-normed output is
# nearly constant, so its gradients would be rounding noise.
READOUT = SPARSE_RNG.normal(size=[3, 10, 8]).astype("float32")


def loss_and_gradients(layer, gates, positions, **kwargs):
    """A random readout of the outputs at `positions` and its gradients on
    the gates and the layer's weights, in training."""
    gates = tf.Variable(gates)
    with tf.GradientTape() as tape:
        out = layer(X, gates=gates, training=True, **kwargs)
        loss = tf.reduce_sum(tf.where(positions[..., None], out * READOUT, 0.0))
    return np.asarray(loss), [np.asarray(g) for g in tape.gradient(loss, [gates, *layer.trainable_weights])]


@pytest.mark.parametrize("normalize_first", [False, True])
def test_sparse_training_with_every_gate_open_equals_dense_training(normalize_first):
    dense, sparse = sparse_training_pair(1.0, normalize_first=normalize_first)
    ones = np.ones([3, 10], "float32")
    attention_mask = SPARSE_RNG.random([3, 10, 10]) > 0.2
    kwargs = {"padding_mask": PADDING, "attention_mask": attention_mask}
    expected_loss, expected = loss_and_gradients(dense, ones, PADDING, **kwargs)
    loss, got = loss_and_gradients(sparse, ones, PADDING, **kwargs)
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-6)
    assert np.any(expected[0] != 0)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_sparse_training_runs_the_kept_tokens_with_straight_through_gates():
    dense, sparse = sparse_training_pair(0.3)
    # A real token is kept when fewer than round(0.3 T) real tokens have a
    # higher gate (no ties in RELAXED).
    higher = ((RELAXED[:, None, :] > RELAXED[:, :, None]) & PADDING[:, None, :]).sum(-1)
    kept = (higher < np.round(0.3 * PADDING.sum(1, keepdims=True))) & PADDING
    np.testing.assert_array_equal(kept.sum(1), [3, 2, 3])
    # Forward: the block of inference on binary gates (the kept tokens open);
    # the others pass through unchanged.
    out = np.asarray(sparse(X, padding_mask=PADDING, gates=RELAXED, training=True))
    binary = np.asarray(dense(X, padding_mask=PADDING, gates=kept.astype("float32")))
    np.testing.assert_allclose(out[kept], binary[kept], atol=1e-5)
    np.testing.assert_array_equal(out[~kept], X[~kept])
    # Backward: the kept gates get the dense path's gradient at binary gates
    # (log g has slope 1 at g = 1), times 1 / g; the dropped ones none.
    _, (expected, *_) = loss_and_gradients(dense, kept.astype("float32") + 1e-12, kept, padding_mask=PADDING)
    _, (got, *_) = loss_and_gradients(sparse, RELAXED, kept, padding_mask=PADDING)
    assert np.all(got[kept] != 0) and np.all(got[~kept] == 0)
    np.testing.assert_allclose(got[kept], expected[kept] / RELAXED[kept], rtol=1e-4, atol=1e-5)


def test_sparse_training_fits_under_xla_and_trains_the_gate_network():
    inputs = keras.Input((10, 8))
    gates = keras.layers.Dense(1, activation="sigmoid", name="gate_network")(inputs)[..., 0]
    x = GatedTransformerEncoder(16, 2, sparse_training=True, training_density=0.3, sparse_buckets=[0.5])(
        inputs, gates=gates
    )
    model = keras.Model(inputs, keras.layers.Dense(1)(keras.layers.GlobalAveragePooling1D()(x)))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", jit_compile=True)
    gate_kernel = model.get_layer("gate_network").kernel
    before = np.array(gate_kernel)
    history = model.fit(X, np.ones([3, 1], "float32"), epochs=2, batch_size=3, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert not np.allclose(before, np.array(gate_kernel))


@pytest.mark.backends
def test_sparse_training_with_dropout_fits():
    # Under JAX the block's dropout seeds are drawn outside the
    # `keras.ops.switch` branches: seeds drawn inside leak out of the step.
    layer = GatedTransformerEncoder(
        intermediate_dim=16,
        num_heads=2,
        dropout=0.3,
        sparse_buckets=[0.25, 1.0],
        sparse_training=True,
        training_density=0.5,
    )
    states, gates = keras.Input(X.shape[1:]), keras.Input(RELAXED.shape[1:])
    outputs = keras.layers.Dense(1)(keras.layers.Flatten()(layer(states, gates=gates)))
    model = keras.Model([states, gates], outputs)
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit([X, RELAXED], np.zeros((len(X), 1), "float32"), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


@pytest.mark.backends
def test_one_open_token_attends_without_a_softmax_over_one_key():
    # The smallest bucket holds two slots: Keras' Softmax warns on an axis of
    # size 1 ("likely not what you intended"), which a row with one open
    # token would otherwise give. The result still equals the dense block.
    gates = np.zeros([3, 10], "float32")
    gates[:, 4] = 1.0
    dense, dropping = blocks(dropout=0.1)  # with dropout Keras' attention takes its softmax path
    dropping.sparse_buckets = [0.1, 1.0]  # a bucket of one slot, if nothing kept it at two
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = dropping(X, padding_mask=PADDING, gates=gates)
    expected = np.asarray(dense(X, padding_mask=PADDING, gates=gates))
    np.testing.assert_allclose(np.asarray(got)[:, 4], expected[:, 4], atol=1e-5)
    np.testing.assert_allclose(np.asarray(got)[:, :4], X[:, :4])  # closed tokens pass through
