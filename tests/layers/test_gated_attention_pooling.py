import keras
import numpy as np
import pytest

from ganet_tf.layers import GatedAttentionPooling
from ganet_tf.layers import GatedMultiHeadAttention
from ganet_tf.layers import GatedTransformerEncoder
from tests.layer_harness import run_layer_test
from tests.lazy_import import tensorflow as tf

RNG = np.random.default_rng(0)
STATES = RNG.normal(size=[5, 6, 4]).astype("float32")
MASK = np.array(
    [
        [1, 1, 1, 1, 1, 1],  # no padding
        [1, 1, 1, 0, 0, 0],  # padded
        [1, 1, 1, 1, 0, 0],  # padded, all gates closed
        [0, 0, 0, 0, 0, 0],  # empty text
        [1, 1, 1, 1, 1, 0],  # relaxed gates
    ],
    bool,
)
GATES = np.array(
    [
        [1, 0, 1, 1, 0, 1],
        [0, 1, 1, 1, 1, 1],  # open gates on padding must not count
        [0, 0, 0, 0, 1, 1],
        [1, 1, 1, 1, 1, 1],
        [0.9, 0.1, 0.5, 0.0, 0.3, 1.0],
    ],
    "float32",
)
GATE_SCORES = RNG.normal(size=[5, 6]).astype("float32")


def reference(layer, states, gates, mask, gate_scores=None):
    """alpha_t = g_t exp(e_t) / sum g exp(e), in float64 NumPy."""
    w, b = [v.astype("float64") for v in layer.hidden.get_weights()]
    (v,) = [x.astype("float64") for x in layer.score.get_weights()]
    scores = (np.tanh(states.astype("float64") @ w + b) @ v)[..., 0]
    weights = np.zeros_like(scores)
    for row in range(len(states)):
        real = mask[row]
        if not real.any():
            continue
        open_ = real & (gates[row] > 0)
        if open_.any():
            unnormalised = np.where(open_, gates[row] * np.exp(scores[row]), 0.0)
        elif layer.fallback == "all":
            unnormalised = np.where(real, np.exp(scores[row]), 0.0)
        else:
            unnormalised = np.zeros(len(real))
            unnormalised[np.argmax(np.where(real, gate_scores[row], -np.inf))] = 1.0
        weights[row] = unnormalised / unnormalised.sum()
    context = np.einsum("bt,btf->bf", weights, states)
    return context, weights


@pytest.mark.backends
@pytest.mark.parametrize("fallback", ["all", "most_probable"])
def test_matches_numpy_reference_with_padded_and_closed_rows(fallback):
    layer = GatedAttentionPooling(units=3, fallback=fallback)
    context, weights = layer(STATES, gates=GATES, gate_scores=GATE_SCORES, mask=MASK)
    expected_context, expected_weights = reference(layer, STATES, GATES, MASK, GATE_SCORES)
    np.testing.assert_allclose(np.asarray(weights), expected_weights, atol=1e-6)
    np.testing.assert_allclose(np.asarray(context), expected_context, atol=1e-5)
    weights = np.asarray(weights)
    assert np.all(weights[~MASK] == 0)
    assert np.all(weights[(GATES == 0) & MASK & np.array([1, 1, 0, 0, 1], bool)[:, None]] == 0)
    np.testing.assert_allclose(weights.sum(axis=1), [1, 1, 1, 0, 1], atol=1e-6)


def test_without_gates_it_is_soft_attention_over_real_tokens():
    layer = GatedAttentionPooling(units=3)
    context, weights = layer(STATES, mask=MASK)
    all_open = np.ones_like(GATES)
    expected_context, expected_weights = reference(layer, STATES, all_open, MASK)
    np.testing.assert_allclose(np.asarray(weights), expected_weights, atol=1e-6)
    np.testing.assert_allclose(np.asarray(context), expected_context, atol=1e-5)


def test_extreme_scores_stay_finite():
    layer = GatedAttentionPooling(units=2)
    states = np.full([2, 5, 4], 1e4, "float32")
    states[1] *= -1
    context, weights = layer(states, gates=GATES[:2, :5], mask=MASK[:2, :5])
    assert np.all(np.isfinite(np.asarray(context))) and np.all(np.isfinite(np.asarray(weights)))


def test_float16_policy_is_finite_and_close():
    layer = GatedAttentionPooling(units=3, dtype="mixed_float16")
    context, weights = layer(STATES, gates=GATES, mask=MASK)
    assert weights.dtype == "float16"
    _, expected = reference(layer, STATES, GATES, MASK)
    assert np.all(np.isfinite(np.asarray(context)))
    np.testing.assert_allclose(np.asarray(weights).astype("float32"), expected, atol=2e-3)


def test_gradients_reach_states_and_gates_but_not_closed_gates():
    states = tf.Variable(STATES[:2])
    gates = tf.Variable(GATES[:2])
    layer = GatedAttentionPooling(units=3)
    with tf.GradientTape() as tape:
        context, _ = layer(states, gates=gates, mask=MASK[:2])
        loss = tf.reduce_sum(context * tf.range(1.0, 5.0))
    state_gradient, gate_gradient = tape.gradient(loss, [states, gates])
    assert np.all(np.isfinite(np.asarray(gate_gradient)))
    open_real = (GATES[:2] > 0) & MASK[:2]
    assert np.all(np.asarray(gate_gradient)[~open_real] == 0)
    assert np.any(np.asarray(gate_gradient)[open_real] != 0)
    assert np.any(np.asarray(state_gradient) != 0)


@pytest.mark.backends
@pytest.mark.parametrize("fallback", ["all", "most_probable"])
def test_layer_harness(fallback, tmp_path):
    run_layer_test(
        GatedAttentionPooling,
        {"units": 3, "fallback": fallback, "return_attention_scores": True},
        STATES,
        tmp_path,
        call_kwargs={"gates": GATES, "gate_scores": GATE_SCORES},
        mask=MASK,
    )


def test_output_shapes():
    layer = GatedAttentionPooling(units=7, return_attention_scores=False)
    assert layer.compute_output_shape((2, 6, 4)) == (2, 4)
    assert GatedAttentionPooling(units=2).compute_output_shape((2, 6, 4)) == ((2, 4), (2, 6))


def test_flops_per_token_counts_the_score_network_and_weighted_sum():
    layer = GatedAttentionPooling(units=3)
    layer(STATES)
    assert layer.flops_per_token() == 2 * 4 * 3 + 4 * 3 + 3 + 2 * 4


@pytest.mark.backends
@pytest.mark.parametrize(
    "arguments, message",
    [({"units": 0}, "units"), ({"units": 2.5}, "units"), ({"fallback": "none"}, "fallback")],
)
def test_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        GatedAttentionPooling(**arguments)


@pytest.mark.backends
def test_bad_inputs():
    with pytest.raises(ValueError, match="inputs"):
        GatedAttentionPooling(units=2)(np.zeros([2, 4], "float32"))
    with pytest.raises(ValueError, match="gate_scores"):
        GatedAttentionPooling(units=2, fallback="most_probable")(STATES, gates=GATES)


def test_attended_density_counts_the_fallback_tokens():
    # Rows: 4/6 open; 2/3 open (padding ignored); all closed -> fallback;
    # empty (not counted); relaxed 4/5 above 0.
    for fallback, closed_row in (("all", 4 / 4), ("most_probable", 1 / 4)):
        layer = GatedAttentionPooling(units=3, fallback=fallback)
        layer(STATES, gates=GATES, gate_scores=GATE_SCORES, mask=MASK)
        expected = np.mean([4 / 6, 2 / 3, closed_row, 4 / 5])
        assert float(layer.attended_density.result()) == pytest.approx(expected, rel=1e-6)
    # Without gates every real token is weighed (the empty text not counted).
    soft = GatedAttentionPooling(units=3)
    soft(STATES, mask=MASK)
    assert soft.metrics == [soft.attended_density] and float(soft.attended_density.result()) == 1.0


@pytest.mark.backends
def test_attended_density_is_tracked_when_built_from_the_inputs_shape_alone():
    # Regression: `build(inputs_shape)` (an enclosing layer's build, Keras'
    # `run_layer_test`) made no metric, and a built layer takes no new
    # state, so later calls with gates counted nothing. The metric's sums
    # are now made by every build, with or without `gates_shape`.
    built = GatedAttentionPooling(units=3)
    built.build(STATES.shape)
    called = GatedAttentionPooling(units=3)
    called(STATES, gates=GATES, gate_scores=GATE_SCORES, mask=MASK)
    assert len(built.non_trainable_weights) == len(called.non_trainable_weights) == 2
    built.set_weights(called.get_weights())
    built.attended_density.reset_state()
    built(STATES, gates=GATES, mask=MASK)
    assert float(built.attended_density.result()) == pytest.approx(np.mean([4 / 6, 2 / 3, 4 / 4, 4 / 5]), rel=1e-6)
    # ... and a model built around it logs the metric, on every backend.
    states, gates = keras.Input((6, 4)), keras.Input((6,))
    pooling = GatedAttentionPooling(units=3)
    pooling.build((None, 6, 4))
    context, _ = pooling(states, gates=gates)
    model = keras.Model([states, gates], context)
    model.compile("sgd", "mse")
    closed = np.zeros([2, 6], "float32")
    closed[0, :3] = 1.0  # 3/6 open, and a row pooled by the `all` fallback
    logs = model.evaluate([STATES[:2], closed], np.zeros([2, 4]), return_dict=True, verbose=0)
    assert logs["attended_density"] == pytest.approx((0.5 + 1.0) / 2)


def test_attended_density_is_logged_by_fit_and_evaluate():
    states, gates = keras.Input((6, 4)), keras.Input((6,))
    context, _ = GatedAttentionPooling(units=3)(states, gates=gates)
    model = keras.Model([states, gates], context)
    model.compile("sgd", "mse")
    closed = np.zeros([2, 6], "float32")
    closed[0, :3] = 1.0  # 3/6 open, and a row pooled by the `all` fallback
    logs = model.evaluate([STATES[:2], closed], np.zeros([2, 4]), return_dict=True, verbose=0)
    assert logs["attended_density"] == pytest.approx((0.5 + 1.0) / 2)


def sparse_pair(fallback="all", sparse_buckets=(0.25, 0.5), units=5):
    """A dense and a sparse layer with the same weights."""
    dense = GatedAttentionPooling(units=units, fallback=fallback)
    sparse = GatedAttentionPooling(units=units, fallback=fallback, sparse_inference=True, sparse_buckets=sparse_buckets)
    for layer in (dense, sparse):
        layer(STATES, gates=GATES, gate_scores=GATE_SCORES, mask=MASK)
    sparse.set_weights(dense.get_weights())
    return dense, sparse


def random_batch(seed, batch=8, steps=24, features=4):
    """States, binary gates at density 0.3, gate scores and a padding mask
    with a full row, padded rows, an empty row and all-closed rows (one
    with open gates on its padding only)."""
    rng = np.random.default_rng(seed)
    states = rng.normal(size=[batch, steps, features]).astype("float32")
    lengths = rng.integers(1, steps + 1, size=batch)
    lengths[0], lengths[1] = steps, 0
    mask = np.arange(steps)[None, :] < lengths[:, None]
    gates = (rng.random([batch, steps]) < 0.3).astype("float32")
    gates[2] = 0.0
    gates[3] = ~mask[3]
    return states, gates, rng.normal(size=[batch, steps]).astype("float32"), mask


@pytest.mark.parametrize("fallback", ["all", "most_probable"])
@pytest.mark.parametrize("sparse_buckets", [None, [0.1], [0.25, 0.5], [1.0]])
@pytest.mark.parametrize("seed", [0, 1])
def test_sparse_inference_equals_dense(fallback, sparse_buckets, seed):
    dense, sparse = sparse_pair(fallback, sparse_buckets)
    states, gates, gate_scores, mask = random_batch(seed)
    for layer in (dense, sparse):
        layer.attended_density.reset_state()
    expected_context, expected_weights = dense(states, gates=gates, gate_scores=gate_scores, mask=mask)
    eager = sparse(states, gates=gates, gate_scores=gate_scores, mask=mask)
    assert float(sparse.attended_density.result()) == pytest.approx(float(dense.attended_density.result()))
    graph = tf.function(lambda *a: sparse(a[0], gates=a[1], gate_scores=a[2], mask=a[3], training=False))
    for context, weights in (eager, graph(states, gates, gate_scores, mask)):
        np.testing.assert_allclose(context, expected_context, atol=1e-5)
        np.testing.assert_allclose(weights, expected_weights, atol=1e-5)
    # The empty row pools nothing; the all-closed rows use the fallback.
    assert np.all(np.asarray(eager[1])[1] == 0) and np.all(np.asarray(eager[0])[1] == 0)
    np.testing.assert_allclose(np.asarray(eager[1])[2:4].sum(axis=1), 1.0, atol=1e-6)


def test_sparse_inference_equals_dense_on_fixed_rows_and_under_xla():
    dense, sparse = sparse_pair("most_probable", [0.5])
    expected = dense(STATES, gates=GATES, gate_scores=GATE_SCORES, mask=MASK)
    compiled = tf.function(lambda *a: sparse(a[0], gates=a[1], gate_scores=a[2], mask=a[3]), jit_compile=True)
    for got in (
        sparse(STATES, gates=GATES, gate_scores=GATE_SCORES, mask=MASK),
        compiled(STATES, GATES, GATE_SCORES, MASK),
    ):
        for old, new in zip(expected, got, strict=True):
            np.testing.assert_allclose(new, old, atol=1e-5)


def test_sparse_inference_scores_only_the_attended_states():
    dense, sparse = sparse_pair(sparse_buckets=[0.5])
    states, gates = STATES[:2], np.array([[1, 0, 0, 0, 0, 1], [0, 0, 1, 0, 0, 0]], "float32")
    calls = []
    original = sparse.hidden.call
    sparse.hidden.call = lambda inputs, **kwargs: calls.append(tuple(inputs.shape)) or original(inputs, **kwargs)
    sparse(states, gates=gates)
    assert calls == [(2, 3, 4)]  # k = 2 rounded up to ceil(0.5 * 6)
    # Training, or no gates, scores every state.
    sparse(states, gates=gates, training=True)
    sparse(states)
    assert calls[1:] == [(2, 6, 4), (2, 6, 4)]


@pytest.mark.backends
def test_sparse_layer_harness(tmp_path):
    run_layer_test(
        GatedAttentionPooling,
        {"units": 3, "fallback": "all", "sparse_inference": True, "sparse_buckets": [0.5, 1.0]},
        STATES,
        tmp_path,
        call_kwargs={"gates": GATES, "gate_scores": GATE_SCORES},
        mask=MASK,
    )


def test_sparse_flags_survive_a_keras_round_trip_and_old_configs_load(tmp_path):
    states, gates = keras.Input((6, 4)), keras.Input((6,))
    layer = GatedAttentionPooling(units=3, sparse_inference=True, sparse_buckets=[0.25], name="attention")
    model = keras.Model([states, gates], layer(states, gates=gates)[0])
    path = str(tmp_path / "pooling.keras")
    model.save(path)
    reloaded = keras.models.load_model(path).get_layer("attention")
    assert reloaded.sparse_inference is True and reloaded.sparse_buckets == [0.25, 1.0]
    config = GatedAttentionPooling(units=3).get_config()
    assert config["sparse_inference"] is False
    for name in ("sparse_inference", "sparse_buckets"):
        del config[name]
    old = GatedAttentionPooling.from_config(config)
    assert (
        old.sparse_inference is False
        and old.get_config()["sparse_buckets"] == GatedAttentionPooling(units=3).sparse_buckets
    )


def test_sparse_path_runs_in_an_exported_saved_model(tmp_path):
    states, gates, mask = keras.Input((None, 4)), keras.Input((None,)), keras.Input((None,), dtype="bool")
    layer = GatedAttentionPooling(units=3, sparse_inference=True, sparse_buckets=[0.5])
    model = keras.Model([states, gates, mask], layer(states, gates=gates, mask=mask))
    model.export(str(tmp_path / "saved"), format="tf_saved_model", verbose=False)
    reloaded = tf.saved_model.load(str(tmp_path / "saved"))
    for steps in (6, 4):  # one signature, any length
        arrays = [STATES[:, :steps], GATES[:, :steps], MASK[:, :steps]]
        for new, old in zip(reloaded.serve(arrays), model(arrays), strict=True):
            np.testing.assert_allclose(new, old, atol=1e-5)
    graph = reloaded.signatures["serving_default"].graph
    ops = {node.op for f in graph.as_graph_def().library.function for node in f.node_def}
    assert "TopKV2" in ops and ({"Case", "StatelessCase"} & ops)


@pytest.mark.backends
@pytest.mark.parametrize("sparse_buckets", [[0.0, 0.5], [1.5], [], "half", [None]])
def test_bad_sparse_buckets(sparse_buckets):
    with pytest.raises(ValueError, match="Received: sparse_buckets="):
        GatedAttentionPooling(units=2, sparse_buckets=sparse_buckets)


def test_sparse_most_probable_needs_gate_scores():
    with pytest.raises(ValueError, match="gate_scores"):
        GatedAttentionPooling(units=2, fallback="most_probable", sparse_inference=True)(STATES, gates=GATES)


def test_sparse_training_pools_the_top_k_tokens_with_straight_through_gates():
    dense = GatedAttentionPooling(units=3)
    sparse = GatedAttentionPooling(units=3, sparse_training=True, training_density=0.5, sparse_buckets=[0.5])
    dense(STATES, gates=GATES, mask=MASK)
    sparse(STATES, gates=GATES, mask=MASK)
    sparse.set_weights(dense.get_weights())
    relaxed = np.clip(np.random.default_rng(4).random([5, 6]), 0.05, 0.95).astype("float32")
    # round(0.5 T) real tokens of highest gate (no ties in relaxed).
    higher = ((relaxed[:, None, :] > relaxed[:, :, None]) & MASK[:, None, :]).sum(-1)
    kept = (higher < np.floor(0.5 * MASK.sum(1, keepdims=True) + 0.5)) & MASK
    probe = np.random.default_rng(5).normal(size=[5, 4]).astype("float32")

    def run(layer, gates):
        gates = tf.Variable(gates)
        with tf.GradientTape() as tape:
            context, weights = layer(STATES, gates=gates, mask=MASK, training=True)
            loss = tf.reduce_sum(context * probe)
        return np.asarray(context), np.asarray(weights), np.asarray(tape.gradient(loss, gates))

    # Forward: the weights of inference on the binary gates of the kept tokens.
    context, weights, grad = run(sparse, relaxed)
    expected_context, expected_weights, expected_grad = run(dense, kept.astype("float32"))
    np.testing.assert_allclose(weights, expected_weights, atol=1e-6)
    np.testing.assert_allclose(context, expected_context, atol=1e-6)
    # Backward: the dense gradient at binary gates, divided by g, on the kept
    # gates only.
    assert np.all(grad[kept] != 0) and np.all(grad[~kept] == 0)
    np.testing.assert_allclose(grad[kept], expected_grad[kept] / relaxed[kept], rtol=1e-4, atol=1e-6)


@pytest.mark.backends
def test_sparse_training_layer_harness(tmp_path):
    run_layer_test(
        GatedAttentionPooling,
        {"units": 3, "sparse_training": True, "training_density": 0.5},
        STATES,
        tmp_path,
        call_kwargs={"gates": GATES, "gate_scores": GATE_SCORES},
        mask=MASK,
    )


def test_complement_context_matches_numpy_while_training_and_is_zero_outside():
    layer = GatedAttentionPooling(units=3, return_complement=True)
    context, weights, complement = layer(STATES, gates=GATES, mask=MASK, training=True)
    plain = GatedAttentionPooling(units=3)
    plain(STATES, gates=GATES, mask=MASK)
    plain.set_weights(layer.get_weights())
    expected_context, expected_weights = plain(STATES, gates=GATES, mask=MASK, training=True)
    np.testing.assert_allclose(context, expected_context, atol=1e-6)
    np.testing.assert_allclose(weights, expected_weights, atol=1e-6)
    kernel, bias, vector = (np.asarray(w) for w in (layer.hidden.kernel, layer.hidden.bias, layer.score.kernel))
    scores = (np.tanh(STATES @ kernel + bias) @ vector)[..., 0]
    closed = (1.0 - GATES) * MASK
    numerator = closed * np.exp(scores)
    total = numerator.sum(axis=1, keepdims=True)
    alpha = np.divide(numerator, total, out=np.zeros_like(numerator), where=total > 0)
    np.testing.assert_allclose(complement, np.einsum("bt,btf->bf", alpha, STATES), atol=1e-5)
    assert np.all(np.asarray(complement)[3] == 0)  # empty text
    _, _, outside = layer(STATES, gates=GATES, mask=MASK)
    assert np.all(np.asarray(outside) == 0)
    assert GatedAttentionPooling.from_config(layer.get_config()).return_complement


@pytest.mark.backends
def test_exact_bucket_sizes_need_a_backend_with_dynamic_shapes():
    if keras.backend.backend() == "jax":
        # Refused where the layer is made (a builder's call), not at its first call.
        with pytest.raises(ValueError, match="`sparse_buckets=None` needs shapes that depend on the data"):
            GatedAttentionPooling(units=3, sparse_inference=True, sparse_buckets=None)
        for layer in (
            GatedAttentionPooling(units=3, sparse_buckets=None),
            GatedMultiHeadAttention(num_heads=2, key_dim=4, sparse_buckets=None),
            GatedTransformerEncoder(intermediate_dim=8, num_heads=2, sparse_buckets=None),
        ):
            assert layer.sparse_buckets is None  # no sparse path: nothing to refuse
        for make in (
            lambda: GatedMultiHeadAttention(num_heads=2, key_dim=4, sparse_inference=True, sparse_buckets=None),
            lambda: GatedTransformerEncoder(intermediate_dim=8, num_heads=2, token_dropping=True, sparse_buckets=None),
        ):
            with pytest.raises(ValueError, match="`sparse_buckets=None`"):
                make()
    else:
        layer = GatedAttentionPooling(units=3, sparse_inference=True, sparse_buckets=None)
        sparse = np.asarray(layer(STATES, gates=GATES, mask=MASK)[0])
        dense = GatedAttentionPooling(units=3)
        dense(STATES, gates=GATES, mask=MASK)
        dense.set_weights(layer.get_weights())
        np.testing.assert_allclose(sparse, np.asarray(dense(STATES, gates=GATES, mask=MASK)[0]), atol=1e-6)
