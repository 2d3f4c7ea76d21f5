import keras
import numpy as np
import pytest

from ganet_tf.layers.hierarchical_attention import HierarchicalAttention
from tests.layer_harness import check_config_round_trip
from tests.layer_harness import run_layer_test
from tests.lazy_import import tensorflow as tf

RNG = np.random.default_rng(2)
VALUES = RNG.normal(size=[3, 7, 4]).astype("float32")
QUERY = RNG.normal(size=[3, 5]).astype("float32")
MASK = np.array([[1] * 7, [1, 1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0]], bool)


def weights_of(dense):
    return [w.astype("float64") for w in dense.get_weights()]


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def reference_levels(layer, values, mask):
    """Per row: a list of levels, each a list of nodes (vector, composition
    over the states, children indices). NumPy, float64."""
    k = layer.block_size
    rows = []
    for row in range(len(values)):
        steps = int(mask[row].sum())
        states = values[row, :steps].astype("float64")
        level = [(states[j], np.eye(len(values[row]))[j], []) for j in range(steps)]
        levels = [level]
        for index in range(layer.levels - 1):
            children = levels[-1]
            vectors = np.array([node[0] for node in children])
            if layer.summarizer == "act":
                w, b = weights_of(layer.halting_units[index])
                z = 1 / (1 + np.exp(-(vectors @ w + b)[:, 0]))
                groups, weights, group, total = [], [], [], 0.0
                largest = layer.max_block_size or len(children)
                for j in range(len(children)):
                    full = len(group) + 1 >= largest
                    if total + z[j] >= 1 - layer.halting_epsilon or j == len(children) - 1 or full:
                        group.append(j)
                        weights.append(1 - total)
                        groups.append((group, np.array(weights)))
                        group, weights, total = [], [], 0.0
                    else:
                        group.append(j)
                        weights.append(z[j])
                        total += z[j]
            else:
                groups = []
                if layer.summary_inputs == "keys":  # the summariser reads and scores the keys
                    wk, bk = weights_of(layer.key_dense)
                    vectors = vectors @ wk + bk
                for start in range(0, len(children), k):
                    block = vectors[start : start + k]
                    if layer.summarizer == "cnn":
                        kernel, bias = weights_of(layer.summary_readers[index])
                        padded = np.zeros([k, vectors.shape[1]])
                        padded[: len(block)] = block
                        summary = np.einsum("kf,kfu->u", padded, kernel) + bias
                    else:  # the layer's own GRU reads the block
                        gru = layer.summary_readers[index]
                        summary = np.asarray(gru(block[None].astype("float32")))[0]
                    (wq,) = weights_of(layer.summary_queries[index])
                    keys = block
                    if layer.summary_inputs == "states":
                        wk, bk = weights_of(layer.summary_keys[index])
                        keys = block @ wk + bk
                    (v,) = weights_of(layer.summary_scores[index])
                    scores = (np.tanh(summary @ wq + keys) @ v)[:, 0]
                    groups.append((list(range(start, start + len(block))), softmax(scores)))
            level = []
            for members, weights in groups:
                vector = sum(w * children[j][0] for j, w in zip(members, weights, strict=True))
                composition = sum(w * children[j][1] for j, w in zip(members, weights, strict=True))
                level.append((vector, composition, members))
            levels.append(level)
        rows.append(levels)
    return rows


def reference_beta(layer, query, levels, hard=True):
    """Eq. 12-14: attend at the top, descend into the argmax node."""
    (wq,) = weights_of(layer.query_dense)
    wk, bk = weights_of(layer.key_dense)
    (v,) = weights_of(layer.score_dense)
    projected = query.astype("float64") @ wq

    def scores(nodes):
        return (np.tanh(projected + np.array([n[0] for n in nodes]) @ wk + bk) @ v)[:, 0]

    def attend(depth, members):
        nodes = [levels[depth][j] for j in members]
        alpha = softmax(scores(nodes))
        if depth == 0:
            return sum(a * n[1] for a, n in zip(alpha, nodes, strict=True))
        chosen = int(np.argmax(alpha))
        beta = 0.0
        for i, (a, node) in enumerate(zip(alpha, nodes, strict=True)):
            if i == chosen or not hard:
                beta = beta + a * attend(depth - 1, node[2])
            else:
                beta = beta + a * node[1]
        return beta

    top = len(levels) - 1
    return attend(top, list(range(len(levels[top]))))


@pytest.mark.backends
@pytest.mark.parametrize(
    "summarizer, levels, block_size, max_block_size, summary_inputs",
    [
        ("cnn", 2, 3, None, "states"),
        ("cnn", 3, 2, None, "states"),
        ("cnn", 2, 3, None, "keys"),
        ("rnn", 2, 3, None, "states"),
        ("rnn", 3, 2, None, "states"),
        ("rnn", 3, 2, None, "keys"),
        ("act", 2, 2, None, "states"),
        ("act", 3, 2, None, "states"),
        ("act", 3, 2, 2, "states"),
    ],
)
def test_hard_descent_matches_numpy_reference_with_padded_sources(
    summarizer, levels, block_size, max_block_size, summary_inputs
):
    layer = HierarchicalAttention(
        units=3,
        summarizer=summarizer,
        levels=levels,
        block_size=block_size,
        halting_epsilon=0.1,
        max_block_size=max_block_size,
        summary_inputs=summary_inputs,
    )
    layer(QUERY, VALUES, values_mask=MASK)
    if summarizer == "act":  # dynamic blocks of 1-4 states
        layer.halting_units[0].set_weights([RNG.normal(size=[4, 1]) * 0.5, np.array([-1.0])])
    context, beta = layer(QUERY, VALUES, values_mask=MASK)
    reference = reference_levels(layer, VALUES, MASK)
    for row in range(3):
        expected = reference_beta(layer, QUERY[row], reference[row])
        np.testing.assert_allclose(np.asarray(beta)[row], expected, atol=1e-5)
        np.testing.assert_allclose(np.asarray(context)[row], expected @ VALUES[row], atol=1e-5)
    assert np.all(np.asarray(beta)[~MASK] == 0)
    # straight-through training computes the same forward pass
    _, trained = layer(QUERY, VALUES, values_mask=MASK, training=True)
    np.testing.assert_allclose(np.asarray(trained), np.asarray(beta), atol=1e-6)


def test_soft_descent_multiplies_weights_down_the_levels():
    layer = HierarchicalAttention(units=3, summarizer="cnn", levels=3, block_size=2, descent="soft")
    _, beta = layer(QUERY, VALUES, values_mask=MASK, training=True)
    reference = reference_levels(layer, VALUES, MASK)
    for row in range(3):
        expected = reference_beta(layer, QUERY[row], reference[row], hard=False)
        np.testing.assert_allclose(np.asarray(beta)[row], expected, atol=1e-5)
    _, hard = layer(QUERY, VALUES, values_mask=MASK)  # inference: hard descent
    expected = reference_beta(layer, QUERY[0], reference[0])
    np.testing.assert_allclose(np.asarray(hard)[0], expected, atol=1e-5)


def test_descent_enters_the_argmax_block():
    keras.utils.set_random_seed(7)
    rng = np.random.default_rng(7)
    layer = HierarchicalAttention(units=3, summarizer="cnn", levels=2, block_size=3)
    queries = 10 * rng.normal(size=[1, 6, 5]).astype("float32")
    values = rng.normal(size=[1, 9, 4]).astype("float32")
    _, beta = layer(queries, values)
    memory = layer.prepare(values)
    top = memory["levels"][1]
    compose = np.asarray(top["compose"])[0]  # (3 blocks, 9 states)
    (wq,), (wk, bk), (v,) = (part.get_weights() for part in (layer.query_dense, layer.key_dense, layer.score_dense))
    vectors = compose @ values[0]
    chosen_blocks = set()
    for step in range(6):
        alpha = softmax((np.tanh(queries[0, step] @ wq + vectors @ wk + bk) @ v)[:, 0])
        chosen = int(np.argmax(alpha))
        chosen_blocks.add(chosen)
        block = slice(3 * chosen, 3 * chosen + 3)
        for other in set(range(3)) - {chosen}:  # the others: their representative
            members = slice(3 * other, 3 * other + 3)
            np.testing.assert_allclose(
                np.asarray(beta)[0, step, members], alpha[other] * compose[other, members], atol=1e-6
            )
        # the chosen block: attention among its states, total weight alpha_z
        inside = np.asarray(beta)[0, step, block]
        np.testing.assert_allclose(inside.sum(), alpha[chosen], atol=1e-6)
        assert not np.allclose(inside, alpha[chosen] * compose[chosen, block], atol=1e-4)
    nodes = np.asarray(layer.attended_nodes(queries, memory))
    np.testing.assert_array_equal(nodes, np.full([1, 6], 3 + 3))
    assert len(chosen_blocks) >= 2  # the queries do not all enter one block


def test_gradients_reach_scores_and_summariser_through_the_argmax():
    for summarizer in ("cnn", "act"):
        layer = HierarchicalAttention(units=3, summarizer=summarizer, levels=2, block_size=2, halting_penalty=0.1)
        values = tf.Variable(VALUES)
        with tf.GradientTape() as tape:
            context, _ = layer(QUERY, values, values_mask=MASK, training=True)
            loss = tf.reduce_sum(context * tf.range(1.0, 5.0)) + sum(layer.losses)
        gradients = tape.gradient(loss, [values] + layer.trainable_weights)
        assert all(g is not None and np.all(np.isfinite(np.asarray(g))) for g in gradients)
        named = dict(zip([w.path for w in layer.trainable_weights], gradients[1:], strict=True))
        summary_name = "halt" if summarizer == "act" else "summary_key"
        assert any(np.any(np.asarray(g) != 0) for n, g in named.items() if summary_name in n)
        assert any(np.any(np.asarray(g) != 0) for n, g in named.items() if "query_dense" in n)
        assert np.all(np.asarray(gradients[0])[~MASK] == 0)
        assert (len(layer.losses) == 1) == (summarizer == "act")


@pytest.mark.backends
def test_layer_harness(tmp_path):
    empty_row = MASK.copy()
    empty_row[2] = False
    arguments = {"summarizer": "act", "levels": 2, "block_size": 2, "halting_penalty": 0.1, "halting_epsilon": 0.2}
    arguments.update(target_block_size=2.0, max_block_size=3)
    run_layer_test(
        HierarchicalAttention,
        {"units": 3, "return_attention_scores": True, **arguments},
        QUERY,
        tmp_path,
        call_kwargs={"values": VALUES},
        mask=empty_row,
        mask_argument="values_mask",
        masked_input="values",
    )


def test_rnn_soft_descent_config_round_trip():
    arguments = {"units": 5, "summarizer": "rnn", "levels": 3, "block_size": 4, "descent": "soft"}
    check_config_round_trip(HierarchicalAttention, {**arguments, "summary_inputs": "keys"})
    check_config_round_trip(HierarchicalAttention, {**arguments, "return_attention_scores": False})
    arguments = {"units": 5, "summarizer": "act", "levels": 3, "target_block_size": 4.0, "max_block_size": 6}
    check_config_round_trip(HierarchicalAttention, {**arguments, "return_attention_scores": False})


def test_float16_weights_sum_to_one():
    half = HierarchicalAttention(units=3, levels=3, block_size=2, dtype="mixed_float16")
    context, beta = half(QUERY, VALUES, values_mask=MASK)
    assert beta.dtype == "float16" and np.all(np.isfinite(np.asarray(context)))
    np.testing.assert_allclose(np.asarray(beta).astype("float32").sum(-1), 1.0, atol=2e-3)


@pytest.mark.backends
@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"levels": 1}, "levels"),
        ({"block_size": 1}, "block_size"),
        ({"units": 0}, "units"),
        ({"summarizer": "lstm"}, "summarizer"),
        ({"summary_inputs": "nodes"}, "summary_inputs"),
        ({"descent": "hard"}, "descent"),
        ({"halting_penalty": -1}, "halting_penalty"),
        ({"halting_penalty": float("nan")}, "halting_penalty"),
        ({"halting_epsilon": 1.0}, "halting_epsilon"),
        ({"target_block_size": 1}, "target_block_size"),
        ({"target_block_size": float("nan")}, "target_block_size"),
        ({"max_block_size": 1}, "max_block_size"),
        ({"max_block_size": 2.5}, "max_block_size"),
    ],
)
def test_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        HierarchicalAttention(**arguments)


@pytest.mark.parametrize(
    "summarizer, levels, block_size, max_block_size",
    [("cnn", 2, 3, None), ("cnn", 3, 2, None), ("rnn", 3, 2, None), ("act", 2, 2, None), ("act", 3, 2, 3)],
)
def test_gathered_inference_scores_only_the_path_and_gives_the_same_context(
    summarizer, levels, block_size, max_block_size
):
    layer = HierarchicalAttention(
        units=3,
        summarizer=summarizer,
        levels=levels,
        block_size=block_size,
        max_block_size=max_block_size,
        summary_inputs="keys" if summarizer == "rnn" else "states",
    )
    queries = 5 * RNG.normal(size=[3, 4, 5]).astype("float32")
    layer(queries, VALUES, values_mask=MASK)
    if summarizer == "act":  # blocks of 1-4 states, varying from row to row
        for halt in layer.halting_units:
            halt.set_weights([np.random.default_rng(3).normal(size=[4, 1]), np.array([-1.0])])
        sizes = np.asarray(layer.prepare(VALUES, MASK)["levels"][0]["sizes"])
        assert len({tuple(row[row > 0]) for row in sizes}) == 3 and sizes.max() > 1
    dense, _ = layer(queries, VALUES, values_mask=MASK)
    memory = layer.prepare(VALUES, MASK)
    gathered, weights = layer.attend(queries, memory, return_weights=False)
    assert weights is None
    np.testing.assert_allclose(np.asarray(gathered), np.asarray(dense), atol=1e-5)
    one, _ = layer.attend(queries[:, 1], memory, return_weights=False)
    np.testing.assert_allclose(np.asarray(one), np.asarray(dense)[:, 1], atol=1e-5)
    # The compact memory (what decoding prepares): no (T, T) compositions or
    # parent matrices, the same context and the same levels.
    compact = layer.prepare(VALUES, MASK, compact=True)
    assert all("compose" not in level and "parents" not in level for level in compact["levels"])
    for full_level, compact_level in zip(memory["levels"], compact["levels"], strict=True):
        full_mask, compact_mask = np.asarray(full_level["mask"]), np.asarray(compact_level["mask"])
        # ACT levels keep only the slots of the row with the most nodes
        width = compact_mask.shape[1]
        np.testing.assert_array_equal(full_mask[:, :width], compact_mask)
        assert not full_mask[:, width:].any()
        if summarizer == "act" and full_level is not memory["levels"][0]:
            assert width == full_mask.sum(-1).max() < full_mask.shape[1]
    np.testing.assert_allclose(
        np.asarray(layer.attend(queries, compact, return_weights=False)[0]), np.asarray(dense), atol=1e-5
    )
    with pytest.raises(ValueError, match="compact=False"):
        layer.attend(queries, compact)


def training_step(layer, loss_of, optimizer=None):
    """One training step of `layer` under XLA (`jit_compile=True`)."""
    optimizer = optimizer or keras.optimizers.SGD(0.1)

    @tf.function(jit_compile=True)
    def step(query, values, mask):
        with tf.GradientTape() as tape:
            context, _ = layer(query, values, values_mask=mask, training=True)
            loss = loss_of(context) + sum(layer.losses)
        gradients = tape.gradient(loss, layer.trainable_weights)
        gradients = [
            tf.zeros_like(w) if g is None else g for g, w in zip(gradients, layer.trainable_weights, strict=True)
        ]
        optimizer.apply(gradients, layer.trainable_weights)
        return loss

    return step


@pytest.mark.parametrize("summarizer", ["rnn", "cnn", "act"])
def test_a_training_step_compiles_under_xla(summarizer):
    extra = {"target_block_size": 2.5, "max_block_size": 3} if summarizer == "act" else {}
    extra = {"summary_inputs": "keys"} if summarizer == "rnn" else extra
    layer = HierarchicalAttention(units=3, summarizer=summarizer, levels=3, block_size=2, **extra)
    layer(QUERY, VALUES, values_mask=MASK)
    before = [np.asarray(w) for w in layer.trainable_weights]
    loss = training_step(layer, lambda context: tf.reduce_sum(context**2))(QUERY, VALUES, MASK)
    assert np.isfinite(np.asarray(loss))
    assert any(np.any(b != np.asarray(w)) for b, w in zip(before, layer.trainable_weights, strict=True))
    if summarizer == "act":  # the dual ascent stepped inside the compiled step
        assert all(float(np.asarray(m)) != 1e-3 for m in layer.halting_multipliers)


def real_nodes(layer, values, mask):
    return [np.asarray(level["mask"]).sum(1) for level in layer.prepare(values, mask)["levels"]]


@pytest.mark.parametrize("target_block_size", [4.0, None])
def test_act_counterweight_forms_blocks_of_the_target_size(target_block_size):
    # Halting units that start collapsed (one block per sentence). The
    # counterweight alone moves the blocks toward T / k real nodes, blocks
    # that vary with the input; the report's penalty alone keeps them
    # collapsed.
    rng = np.random.default_rng(0)
    values = rng.normal(size=[8, 24, 4]).astype("float32")
    mask = np.ones([8, 24], bool)
    mask[4:, 16:] = False
    layer = HierarchicalAttention(
        units=3, summarizer="act", levels=2, target_block_size=target_block_size, halting_penalty=0.1
    )
    layer(QUERY[:1].repeat(8, 0), values, values_mask=mask)
    layer.halting_units[0].set_weights([np.zeros([4, 1]), np.array([-6.0])])
    assert np.all(real_nodes(layer, values, mask)[1] == 1)
    step = training_step(layer, lambda context: 0.0, keras.optimizers.Adam(0.05))
    for _ in range(100):
        step(QUERY[:1].repeat(8, 0), values, mask)
    nodes = real_nodes(layer, values, mask)[1]
    if target_block_size is None:
        assert np.all(nodes == 1)
        return
    lengths = mask.sum(1)
    assert 0.8 < np.mean(nodes / (lengths / target_block_size)) < 1.25
    assert len(set(nodes[:4])) > 1  # rows of the same length: blocks follow the input


def test_act_max_block_size_bounds_the_blocks():
    layer = HierarchicalAttention(units=3, summarizer="act", levels=3, max_block_size=3)
    layer(QUERY, VALUES, values_mask=MASK)
    for halt in layer.halting_units:  # z ~ 0: only the bound closes blocks
        halt.set_weights([np.zeros([4, 1]), np.array([-9.0])])
    memory = layer.prepare(VALUES, MASK)
    sizes = np.asarray(memory["levels"][0]["sizes"])
    np.testing.assert_array_equal(sizes[:, :3], [[3, 3, 1], [3, 1, 0], [2, 0, 0]])
    np.testing.assert_array_equal(real_nodes(layer, VALUES, MASK)[2], [1, 1, 1])


def test_act_blocks_close_at_known_boundaries():
    # Segments of known, unequal lengths, each ending in a marker token
    # (feature 0 = 1). Halting units that read only the marker (z ~ 1 there,
    # ~ 0 elsewhere) close a block exactly at each marker, padding included.
    segments = [[3, 1, 4], [2, 5], [1, 1, 2]]
    length = 8
    values = np.zeros([3, length, 4], "float32")
    mask = np.zeros([3, length], bool)
    for row, sizes in enumerate(segments):
        ends = np.cumsum(sizes) - 1
        values[row, ends, 0] = 1.0
        values[row, :, 1:] = np.random.default_rng(row).normal(size=[length, 3])
        mask[row, : sum(sizes)] = True
    layer = HierarchicalAttention(units=3, summarizer="act", levels=2)
    layer(QUERY, values, values_mask=mask)
    layer.halting_units[0].set_weights([np.array([[20.0], [0.0], [0.0], [0.0]]), np.array([-10.0])])
    for compact in (False, True):
        # Level 0 holds the tokens and the sizes of the blocks above them.
        tokens, blocks = layer.prepare(values, mask, compact=compact)["levels"]
        sizes = np.asarray(tokens["sizes"])
        for row, expected in enumerate(segments):
            np.testing.assert_array_equal(sizes[row][sizes[row] > 0], expected)
        np.testing.assert_array_equal(np.asarray(blocks["mask"]).sum(1), [len(s) for s in segments])
