import numpy as np
import pytest

from ganet_tf.layers.gated_source_attention import GatedSourceAttention
from tests.layer_harness import run_layer_test
from tests.lazy_import import tensorflow as tf

RNG = np.random.default_rng(1)
VALUES = RNG.normal(size=[5, 6, 4]).astype("float32")
QUERY = RNG.normal(size=[5, 3]).astype("float32")
MASK = np.array(
    [
        [1, 1, 1, 1, 1, 1],  # no padding
        [1, 1, 1, 0, 0, 0],  # padded: open gates on padding must not count
        [1, 1, 1, 1, 0, 0],  # padded, all real gates closed
        [0, 0, 0, 0, 0, 0],  # empty source
        [1, 1, 1, 1, 1, 0],  # relaxed gates
    ],
    bool,
)
GATES = np.array(
    [
        [1, 0, 1, 1, 0, 1],
        [0, 1, 1, 1, 1, 1],
        [0, 0, 0, 0, 1, 1],
        [1, 1, 1, 1, 1, 1],
        [0.9, 0.1, 0.5, 0.0, 0.3, 1.0],
    ],
    "float32",
)


def reference(layer, query, values, gates, mask):
    """alpha_j = g_j exp(e_j) / sum g exp(e) over open real j, float64."""
    (wq,) = [w.astype("float64") for w in layer.query_dense.get_weights()]
    wk, bk = [w.astype("float64") for w in layer.key_dense.get_weights()]
    (v,) = [w.astype("float64") for w in layer.score_dense.get_weights()]
    scores = (np.tanh((query @ wq)[:, None, :] + values @ wk + bk) @ v)[..., 0]
    weights = np.zeros_like(scores)
    for row in range(len(values)):
        open_ = mask[row] & (gates[row] > 0)
        if open_.any():
            unnormalised = np.where(open_, gates[row] * np.exp(scores[row]), 0.0)
        elif layer.fallback == "all" and mask[row].any():
            unnormalised = np.where(mask[row], np.exp(scores[row]), 0.0)
        else:
            continue
        weights[row] = unnormalised / unnormalised.sum()
    return np.einsum("bs,bsf->bf", weights, values), weights


@pytest.mark.backends
@pytest.mark.parametrize("fallback", ["all", "none"])
def test_matches_numpy_reference_with_padded_closed_and_empty_rows(fallback):
    layer = GatedSourceAttention(units=3, fallback=fallback)
    context, weights = layer(QUERY, VALUES, GATES, values_mask=MASK)
    expected_context, expected_weights = reference(layer, QUERY, VALUES, GATES, MASK)
    np.testing.assert_allclose(np.asarray(weights), expected_weights, atol=1e-6)
    np.testing.assert_allclose(np.asarray(context), expected_context, atol=1e-5)
    closed = (GATES == 0) & MASK
    closed[2] = False  # the all-closed row, fallback
    assert np.all(np.asarray(weights)[closed | ~MASK] == 0)
    sums = [1, 1, 1 if fallback == "all" else 0, 0, 1]
    np.testing.assert_allclose(np.asarray(weights).sum(-1), sums, atol=1e-6)


def test_compact_memory_gives_the_same_context_on_open_states_only():
    layer = GatedSourceAttention(units=3)
    binary = (GATES > 0.5).astype("float32")
    context, _ = layer(QUERY, VALUES, binary, values_mask=MASK)
    memory = layer.prepare(VALUES, binary, MASK, compact=True)
    compact_context, _ = layer.attend(QUERY, memory)
    np.testing.assert_allclose(np.asarray(compact_context), np.asarray(context), atol=1e-5)
    # widest row: the all-closed row falls back to its 4 real states
    assert memory["values"].shape[1] == 4
    assert np.asarray(memory["mask"]).sum(1).tolist() == [4, 2, 4, 0, 1]
    # open states weigh alike: a decoder step runs Bahdanau's ops, no log-gates
    assert sorted(memory) == ["keys", "mask", "values"]


def test_gradients_reach_open_gates_only():
    gates = tf.Variable(GATES)
    layer = GatedSourceAttention(units=3)
    with tf.GradientTape() as tape:
        context, _ = layer(QUERY, VALUES, gates, values_mask=MASK)
        loss = tf.reduce_sum(context * tf.range(1.0, 5.0))
    gradient = np.asarray(tape.gradient(loss, gates))
    open_real = (GATES > 0) & MASK
    open_real[3] = False  # an empty row attends to nothing
    assert np.all(np.isfinite(gradient))
    assert np.all(gradient[~open_real] == 0)
    assert np.count_nonzero(gradient[open_real]) >= open_real.sum() - 1


def test_float16_policy_is_finite_and_close():
    layer = GatedSourceAttention(units=3, dtype="mixed_float16")
    context, weights = layer(QUERY, VALUES, GATES, values_mask=MASK)
    assert weights.dtype == "float16" and np.all(np.isfinite(np.asarray(context)))
    _, expected = reference(layer, QUERY, VALUES, GATES, MASK)
    np.testing.assert_allclose(np.asarray(weights).astype("float32"), expected, atol=2e-3)


@pytest.mark.backends
@pytest.mark.parametrize("fallback", ["all", "none"])
def test_layer_harness(fallback, tmp_path):
    run_layer_test(
        GatedSourceAttention,
        {"units": 3, "fallback": fallback, "return_attention_scores": True},
        QUERY,
        tmp_path,
        call_kwargs={"values": VALUES, "gates": GATES},
        mask=MASK,
        mask_argument="values_mask",
        masked_input="values",
    )


@pytest.mark.backends
def test_bad_arguments_and_inputs():
    with pytest.raises(ValueError, match="fallback"):
        GatedSourceAttention(fallback="most_probable")
    with pytest.raises(ValueError, match="gates"):
        GatedSourceAttention(units=2)(QUERY, VALUES, GATES[..., None])
