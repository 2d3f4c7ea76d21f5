import keras
import numpy as np
import pytest

from ganet_tf.layers import GatedMultiHeadAttention
from ganet_tf.layers.gated_multi_head_attention import _fused_kernel_fails
from tests.layer_harness import run_layer_test
from tests.lazy_import import tensorflow as tf

RNG = np.random.default_rng(0)
X = RNG.normal(size=[4, 9, 8]).astype("float32")
OTHER = RNG.normal(size=[4, 9, 6]).astype("float32")
GATES = (RNG.random([4, 9]) > 0.6).astype("float32")
GATES[:, 0] = 1.0  # every query keeps an open key ...
GATES[3] = 0.0  # ... but the last row, where every gate is closed
PADDING = np.ones([4, 9], bool)
PADDING[1, 6:] = False


def pair(**kwargs):
    """A dense and a sparse gated layer and a Keras MHA, same weights."""
    dense = GatedMultiHeadAttention(num_heads=2, key_dim=4, **kwargs)
    sparse = GatedMultiHeadAttention(
        num_heads=2, key_dim=4, sparse_inference=True, sparse_buckets=[0.25, 0.5], **kwargs
    )
    mha = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4, **kwargs)
    for layer in (dense, sparse, mha):
        layer(X, OTHER)
    sparse.set_weights(dense.get_weights())
    mha.set_weights(dense.get_weights())
    return dense, sparse, mha


@pytest.mark.backends
def test_layer_harness(tmp_path):
    run_layer_test(
        GatedMultiHeadAttention,
        {
            "num_heads": 2,
            "key_dim": 4,
            "sparse_inference": True,
            "sparse_buckets": [0.5, 1.0],
            "query_dropping": True,
            "sparse_bucket_multiple": 4,
        },
        X,
        tmp_path,
        call_kwargs={"value": OTHER, "gates": GATES},
    )


# Keras' own options, read from its config: an output gate (Keras 3.14), a
# window (3.15) that leaves every query an open key.
@pytest.mark.parametrize("options", [{}, {"use_gate": True}, {"sliding_window": 4}])
def test_all_gates_open_equals_multi_head_attention(options):
    dense, sparse, mha = pair(**options)
    ones = np.ones([4, 9], "float32")
    expected = mha(X, OTHER, value_mask=PADDING)
    for layer in (dense, sparse):
        for training in (False, True):
            got = layer(X, OTHER, value_mask=PADDING, gates=ones, training=training)
            np.testing.assert_allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_binary_gates_equal_masked_attention_dense_and_sparse(causal):
    dense, sparse, mha = pair()
    allowed = (GATES > 0.5) & PADDING
    expected = mha(X, OTHER, attention_mask=np.repeat(allowed[:, None, :], 9, 1), use_causal_mask=causal)
    got_dense = dense(X, OTHER, value_mask=PADDING, gates=GATES, use_causal_mask=causal)
    got_sparse = sparse(X, OTHER, value_mask=PADDING, gates=GATES, use_causal_mask=causal)
    np.testing.assert_allclose(got_dense[:3], expected[:3], atol=1e-5)
    np.testing.assert_allclose(got_sparse, got_dense, atol=1e-5)
    # Every gate closed: a zero context, i.e. the output projection's bias.
    bias = np.asarray(dense.output_dense.bias)
    np.testing.assert_allclose(got_sparse[3], np.broadcast_to(bias, (9, 8)), atol=1e-6)


def test_sparse_paths_equal_dense_with_attention_mask_exact_k_and_xla():
    dense, sparse, _ = pair(sliding_window=4)
    exact = GatedMultiHeadAttention(
        num_heads=2, key_dim=4, sparse_inference=True, sparse_buckets=None, sliding_window=4
    )
    exact(X, OTHER)
    exact.set_weights(dense.get_weights())
    attention_mask = RNG.random([4, 9, 9]) > 0.2
    expected = dense(X, OTHER, attention_mask=attention_mask, gates=GATES)
    for layer in (sparse, exact):
        np.testing.assert_allclose(layer(X, OTHER, attention_mask=attention_mask, gates=GATES), expected, atol=1e-5)
    compiled = tf.function(lambda *a: sparse(a[0], a[1], attention_mask=a[2], gates=a[3]), jit_compile=True)
    np.testing.assert_allclose(compiled(X, OTHER, attention_mask, GATES), expected, atol=1e-5)


def test_closed_keys_and_values_have_no_influence():
    dense, sparse, _ = pair()
    key = RNG.normal(size=[4, 9, 6]).astype("float32")
    closed = GATES < 0.5
    noisy_value, noisy_key = OTHER.copy(), key.copy()
    noisy_value[closed] = 1e3
    noisy_key[closed] = -1e3
    for layer in (dense, sparse):
        clean = layer(X, OTHER, key=key, gates=GATES)
        np.testing.assert_allclose(layer(X, noisy_value, key=noisy_key, gates=GATES), clean, atol=1e-5)
    np.testing.assert_allclose(sparse(X, OTHER, key=key, gates=GATES), dense(X, OTHER, key=key, gates=GATES), atol=1e-5)


def test_gradients_reach_the_gates_also_closed_ones():
    dense, _, _ = pair()
    relaxed = np.clip(RNG.random([4, 9]), 0.05, 1.0).astype("float32")
    relaxed[0, 3] = 0.0  # a straight-through gate, hard closed
    gates = tf.Variable(relaxed)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(dense(X, OTHER, gates=gates, training=True) ** 2)
    grad = np.asarray(tape.gradient(loss, gates))
    assert np.all(np.isfinite(grad))
    assert np.all(grad[:, :8] != 0.0)
    # Relaxed gates weight the keys by g: weights g exp(e) / sum g exp(e).
    _, scores = dense(X, OTHER, gates=gates, training=True, return_attention_scores=True)
    _, plain = dense(X, OTHER, gates=np.ones([4, 9], "float32"), return_attention_scores=True)
    expected = np.asarray(plain) * relaxed[:, None, None, :]
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(scores, expected, atol=1e-6)


def test_sparse_path_runs_in_a_saved_model(tmp_path):
    query = keras.Input((None, 8))
    gates = keras.Input((None,))
    layer = GatedMultiHeadAttention(num_heads=2, key_dim=4, sparse_inference=True, sparse_buckets=[0.5])
    model = keras.Model([query, gates], layer(query, query, gates=gates))
    tf.saved_model.save(model, str(tmp_path / "saved"))
    serve = tf.saved_model.load(str(tmp_path / "saved")).signatures["serving_default"]
    for steps in (9, 5):  # one signature, any length
        x, g = X[:, :steps], GATES[:, :steps]
        got = serve(inputs=tf.constant(x), inputs_1=tf.constant(g))["output_0"]
        np.testing.assert_allclose(got, model([x, g]), atol=1e-5)
    ops = {node.op for f in serve.graph.as_graph_def().library.function for node in f.node_def}
    assert "TopKV2" in ops and ({"Case", "StatelessCase"} & ops)


@pytest.mark.backends
@pytest.mark.parametrize("query_dropping", [False, True])
def test_bucket_multiple_pads_the_sparse_path_without_changing_it(query_dropping):
    dense = GatedMultiHeadAttention(num_heads=2, key_dim=4)
    dense(X, X)
    padded = GatedMultiHeadAttention(
        num_heads=2,
        key_dim=4,
        sparse_inference=True,
        sparse_buckets=[0.25, 0.5],
        sparse_bucket_multiple=4,
        query_dropping=query_dropping,
    )
    padded(X, X)
    padded.set_weights(dense.get_weights())
    expected = dense(X, X, value_mask=PADDING, gates=GATES)
    if query_dropping:  # closed queries: a zero context
        expected = np.where((GATES > 0.5)[:, :, None], expected, np.asarray(dense.output_dense.bias))
    np.testing.assert_allclose(padded(X, X, value_mask=PADDING, gates=GATES), expected, atol=1e-5)


@pytest.mark.backends
@pytest.mark.parametrize("dtype", ["float32", "mixed_float16"])
def test_fused_kernel_gives_the_explicit_weights_output(monkeypatch, dtype):
    # Without dropout the weights are not formed: keras.ops.dot_product_attention
    # runs (as in keras.layers.MultiHeadAttention), with the log-gate bias, the
    # key mask and an attention mask, and equals the explicit path.
    calls = []
    fused = keras.ops.dot_product_attention
    monkeypatch.setattr(keras.ops, "dot_product_attention", lambda *a, **k: calls.append(1) or fused(*a, **k))
    layer = GatedMultiHeadAttention(num_heads=2, key_dim=4, dtype=dtype)
    rng = np.random.default_rng(5)
    relaxed = np.clip(rng.random([4, 9]), 0.05, 1.0).astype("float32")
    attention_mask = rng.random([4, 9, 9]) > 0.3
    # float16: the fused softmax runs in float32 on TensorFlow, the explicit one in float16.
    tolerance = {"rtol": 1e-2, "atol": 5e-3} if dtype == "mixed_float16" else {"atol": 1e-5}
    for training, gates in ((True, relaxed), (False, GATES)):
        kwargs = {"value_mask": PADDING, "attention_mask": attention_mask, "gates": gates, "training": training}
        got = layer(X, OTHER, **kwargs)
        explicit, _ = layer(X, OTHER, return_attention_scores=True, **kwargs)
        np.testing.assert_allclose(np.asarray(got, "float32"), np.asarray(explicit, "float32"), **tolerance)
    # (JAX on CPU has no float16 fused kernel: the explicit path runs.)
    assert len(calls) == (0 if _fused_kernel_fails(layer.compute_dtype) else 2)


@pytest.mark.backends
def test_errors():
    with pytest.raises(ValueError, match="sparse_buckets"):
        GatedMultiHeadAttention(num_heads=2, key_dim=4, sparse_buckets=[0.0, 0.5])
    for multiple in (0, 1.5, True, "64"):
        with pytest.raises(ValueError, match="sparse_bucket_multiple"):
            GatedMultiHeadAttention(num_heads=2, key_dim=4, sparse_bucket_multiple=multiple)
    layer = GatedMultiHeadAttention(num_heads=2, key_dim=4, attention_axes=(1, 2))
    image = np.zeros([1, 3, 3, 4], "float32")
    with pytest.raises(ValueError, match="rank-3"):
        layer(image, image, gates=np.ones([1, 3], "float32"))


@pytest.mark.parametrize("causal", [False, True])
def test_query_dropping_keeps_open_queries_and_zeroes_closed_contexts(causal):
    plain = GatedMultiHeadAttention(num_heads=2, key_dim=4)
    plain(X, X)
    dense, sparse, exact = (
        GatedMultiHeadAttention(num_heads=2, key_dim=4, query_dropping=True, **sparse)
        for sparse in (
            {},
            {"sparse_inference": True, "sparse_buckets": [0.25, 0.5]},
            {"sparse_inference": True, "sparse_buckets": None},
        )
    )
    for layer in (dense, sparse, exact):
        layer(X, X)
        layer.set_weights(plain.get_weights())
    query_open = (GATES > 0.5) & PADDING
    bias = np.asarray(dense.output_dense.bias)
    kept = plain(X, X, value_mask=PADDING, query_mask=PADDING, gates=GATES, use_causal_mask=causal)
    expected = np.where(query_open[..., None], kept, bias)
    for layer in (dense, sparse, exact):
        got = layer(X, X, value_mask=PADDING, query_mask=PADDING, gates=GATES, use_causal_mask=causal)
        np.testing.assert_allclose(got, expected, atol=1e-5)
    # Training computes every query.
    training = dense(X, X, gates=GATES, training=True)
    np.testing.assert_allclose(training, plain(X, X, gates=GATES, training=True), atol=1e-6)
    # With an attention mask, and compiled with XLA.
    attention_mask = RNG.random([4, 9, 9]) > 0.2
    expected = dense(X, X, attention_mask=attention_mask, gates=GATES)
    compiled = tf.function(lambda *a: sparse(a[0], a[0], attention_mask=a[1], gates=a[2]), jit_compile=True)
    np.testing.assert_allclose(compiled(X, attention_mask, GATES), expected, atol=1e-5)
    # Closed queries have no influence on the open ones' outputs.
    noisy = X.copy()
    noisy[GATES < 0.5] = 1e3
    got = sparse(noisy, noisy, gates=GATES)
    np.testing.assert_allclose(
        np.asarray(got)[GATES > 0.5], np.asarray(sparse(X, X, gates=GATES))[GATES > 0.5], atol=1e-5
    )


@pytest.mark.backends
def test_query_dropping_refuses_cross_attention():
    layer = GatedMultiHeadAttention(num_heads=2, key_dim=4, query_dropping=True)
    with pytest.raises(ValueError, match="self-attention"):
        layer(X[:, :5], OTHER, gates=GATES)


# Sparse training: the top_k rule keeps round(rho T) real keys per row.
SPARSE_RNG = np.random.default_rng(5)
RELAXED = np.clip(SPARSE_RNG.random([4, 9]), 0.05, 0.95).astype("float32")
READOUT = SPARSE_RNG.normal(size=[4, 9, 8]).astype("float32")


def sparse_training_layers(density, **kwargs):
    """A dense gated layer and a sparse-training one, same weights."""
    dense = GatedMultiHeadAttention(num_heads=2, key_dim=4, **kwargs)
    sparse = GatedMultiHeadAttention(
        num_heads=2, key_dim=4, sparse_training=True, training_density=density, sparse_buckets=[0.5], **kwargs
    )
    for layer in (dense, sparse):
        layer(X, X)
    sparse.set_weights(dense.get_weights())
    return dense, sparse


def readout_and_gradients(layer, gates, rows, **kwargs):
    """A random readout of the outputs at query `rows` and its gradients on
    the gates and the weights, in training."""
    gates = tf.Variable(gates)
    with tf.GradientTape() as tape:
        out = layer(X, X, gates=gates, training=True, **kwargs)
        loss = tf.reduce_sum(tf.where(rows[..., None], out * READOUT, 0.0))
    return np.asarray(loss), [np.asarray(g) for g in tape.gradient(loss, [gates, *layer.trainable_weights])]


@pytest.mark.parametrize("query_dropping", [False, True])
def test_sparse_training_with_every_gate_open_equals_dense_training(query_dropping):
    dense, sparse = sparse_training_layers(1.0, query_dropping=query_dropping)
    ones = np.ones([4, 9], "float32")
    kwargs = {"value_mask": PADDING, "query_mask": PADDING, "use_causal_mask": True}
    expected_loss, expected = readout_and_gradients(dense, ones, PADDING, **kwargs)
    loss, got = readout_and_gradients(sparse, ones, PADDING, **kwargs)
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-5)
    assert np.all(expected[0][PADDING] != 0)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_sparse_training_attends_the_kept_keys_as_inference_does():
    dense, sparse = sparse_training_layers(0.4)
    higher = ((RELAXED[:, None, :] > RELAXED[:, :, None]) & PADDING[:, None, :]).sum(-1)
    kept = (higher < np.floor(0.4 * PADDING.sum(1, keepdims=True) + 0.5)) & PADDING
    np.testing.assert_array_equal(kept.sum(1), [4, 2, 4, 4])
    # Forward: inference on the binary gates of the kept keys.
    got = sparse(X, X, value_mask=PADDING, gates=RELAXED, training=True)
    np.testing.assert_allclose(got, dense(X, X, value_mask=PADDING, gates=kept.astype("float32")), atol=1e-5)
    # Backward: the dense path's gradient at binary gates, times 1 / g, on
    # the kept keys; none on the dropped ones.
    every = np.ones([4, 9], bool)
    _, (expected, *_) = readout_and_gradients(dense, kept.astype("float32"), every, value_mask=PADDING)
    _, (grad, *_) = readout_and_gradients(sparse, RELAXED, every, value_mask=PADDING)
    assert np.all(grad[kept] != 0) and np.all(grad[~kept] == 0)
    np.testing.assert_allclose(grad[kept], expected[kept] / RELAXED[kept], rtol=1e-4, atol=1e-5)
    # Compiled with XLA, gradients included.
    gates = tf.Variable(RELAXED)

    @tf.function(jit_compile=True)
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(sparse(X, X, value_mask=PADDING, gates=gates, training=True) * READOUT)
        return tape.gradient(loss, gates)

    np.testing.assert_allclose(step(), grad, rtol=1e-4, atol=1e-5)


@pytest.mark.backends
def test_layer_harness_sparse_training(tmp_path):
    run_layer_test(
        GatedMultiHeadAttention,
        {"num_heads": 2, "key_dim": 4, "sparse_training": True, "training_density": 0.5, "query_dropping": True},
        X,
        tmp_path,
        call_kwargs={"value": X, "gates": RELAXED},
    )


@pytest.mark.backends
def test_sparse_training_errors():
    with pytest.raises(ValueError, match="training_density"):
        GatedMultiHeadAttention(num_heads=2, key_dim=4, sparse_training=True)
    with pytest.raises(ValueError, match="training_density"):
        GatedMultiHeadAttention(num_heads=2, key_dim=4, training_density=0.0)
    with pytest.raises(ValueError, match="sparse_training"):
        GatedMultiHeadAttention(num_heads=2, key_dim=4, sparse_training=1, training_density=0.5)


@pytest.mark.backends
@pytest.mark.parametrize("query_dropping", [False, True])
def test_sparse_training_with_dropout_fits_and_draws_a_mask_per_example(query_dropping):
    # Under JAX the dropout seed of a bucket's branch is drawn outside the
    # `keras.ops.switch`: one drawn inside leaks out of the compiled step.
    layer = GatedMultiHeadAttention(
        num_heads=2,
        key_dim=4,
        dropout=0.5,
        seed=3,
        sparse_buckets=[0.25, 1.0],
        sparse_training=True,
        training_density=0.5,
        query_dropping=query_dropping,
    )
    states, gates = keras.Input(X.shape[1:]), keras.Input(RELAXED.shape[1:])
    outputs = keras.layers.Dense(1)(keras.layers.Flatten()(layer(states, states, gates=gates)))
    model = keras.Model([states, gates], outputs)
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit([X, RELAXED], np.zeros((len(X), 1), "float32"), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    # Four copies of one example: only the dropout masks tell them apart.
    same = np.repeat(X[:1], 4, axis=0)
    outputs = np.asarray(layer(same, same, gates=np.repeat(RELAXED[:1], 4, axis=0), training=True))
    assert np.all(np.isfinite(outputs))
    assert not np.allclose(outputs[0], outputs[1])
