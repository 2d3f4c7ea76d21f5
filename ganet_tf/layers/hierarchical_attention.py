import keras
from keras import ops

from ganet_tf.layers.act_blocks import act_blocks
from ganet_tf.layers.argument_checks import is_real
from ganet_tf.layers.base_additive_attention import BaseAdditiveAttention
from ganet_tf.layers.gate_sparsity import add_multiplier
from ganet_tf.layers.gate_sparsity import frozen_value
from ganet_tf.layers.masking import masked_softmax
from ganet_tf.layers.sibling_groups import group_softmax
from ganet_tf.layers.sibling_groups import group_winners
from ganet_tf.layers.sibling_groups import sibling_groups
from ganet_tf.layers.sparse_gather import dynamic_shapes
from ganet_tf.layers.sparse_gather import gather_rows

SUMMARIZERS = ("rnn", "cnn", "act")
SUMMARY_INPUTS = ("states", "keys")
DESCENTS = ("straight_through", "soft")
# The halting multiplier's dual ascent (`target_block_size`), as in
# `GateSparsity`: step size, bound on |lambda|, weight of the quadratic term.
MULTIPLIER_RATE, MAX_MULTIPLIER, DAMPING = 0.01, 1.0, 10.0


def _check_arguments(
    units, summarizer, levels, block_size, descent, halting_penalty, halting_epsilon, target_block_size
):
    """Raises `ValueError` for an argument of `HierarchicalAttention` out of range."""
    for name, value, low in (("units", units, 1), ("levels", levels, 2), ("block_size", block_size, 2)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"`{name}` must be an integer >= {low}. Received: {name}={value}")
    if summarizer not in SUMMARIZERS:
        raise ValueError(f"`summarizer` must be one of {SUMMARIZERS}. Received: summarizer={summarizer}")
    if descent not in DESCENTS:
        raise ValueError(f"`descent` must be one of {DESCENTS}. Received: descent={descent}")
    if not is_real(halting_penalty) or halting_penalty < 0:
        raise ValueError(
            f"`halting_penalty` must be a non-negative number. Received: halting_penalty={halting_penalty}"
        )
    if not is_real(halting_epsilon) or not 0 <= halting_epsilon < 1:
        raise ValueError(f"`halting_epsilon` must be in [0, 1). Received: halting_epsilon={halting_epsilon}")
    if target_block_size is not None and (not is_real(target_block_size) or target_block_size <= 1):
        raise ValueError(
            f"`target_block_size` must be None or a number > 1. Received: target_block_size={target_block_size}"
        )


@keras.saving.register_keras_serializable(package="ganet_tf")
class HierarchicalAttention(BaseAdditiveAttention):
    """Multi-level attention: the decoder descends into the most-attended block.

    The encoder states `h = p^1` are summarised level by level into
    `levels - 1` coarser levels `p^2, ..., p^L` (Gupta & Ahmed, 2020). Every
    representative `p^l_i` is a convex combination of its children at level
    `l - 1`, so of the encoder states. The summariser is

    - `"rnn"`: a GRU reads each block of `block_size` children; its last
      state `s_i` scores the children, `alpha_ij = softmax_j(score(s_i,
      p_j))`, and `p^l_i = sum_j alpha_ij p_j` (the report's Eq. 2-4, with
      the RNN run per block);
    - `"cnn"`: a `Conv1D` with kernel = stride = `block_size` (`units`
      filters) gives `q_i`, which scores the children as above (Eq. 5-6);
    - `"act"`: dynamic blocks (Eq. 7-11): `z_j = sigmoid(w^T p_j + b)`; a
      block takes children until their `z` sum to `1 - halting_epsilon`,
      its last child gets the remainder `r = 1 - sum(z of the others)`, and
      the last real child always closes a block, as does its
      `max_block_size`-th child if set. `sum_j z_j` is about the number of
      blocks. Without `target_block_size` the layer adds `halting_penalty
      * mean_j z_j` per level to the training losses (the report's
      "penalise smaller block sizes"); nothing pushes back, so the blocks
      can grow to one node per sentence. With `target_block_size` k the
      penalty weight becomes a Lagrange multiplier `lambda` of the
      constraint "blocks per real child = 1 / k", i.e. about `T / k` nodes
      per level, counted on the blocks the batch actually formed (a
      constraint on `mean_j z_j` would leave blocks larger than k: a block
      closes only once its `z` pass the threshold, overshooting it). The
      count is a step function of `z`, so its gradient is taken as that of
      `mean_j z_j`: the layer adds `(lambda + 10 gap) *
      mean_j z_j` per level (the gradient of the damped Lagrangian
      `lambda * gap + 5 * gap^2`) and steps `lambda <- clip(lambda + 0.01
      gap, -1, 1)` after each training batch, `gap` being the batch's mean
      block density minus `1 / k` (the damped, bounded dual ascent of
      `GateSparsity`). The constraint is on the mean only: where blocks
      close still follows `z_j`, so block sizes vary with the input.
      Check the levels of a trained model (`prepare(...)["levels"][i]["mask"]`).

    With `summary_inputs="keys"` the `"rnn"` or `"cnn"` summariser reads
    the children's attention keys `W_k p_j` (width `units`, computed for the
    decoder's scores anyway) instead of `p_j`, and scores them on those
    keys, so it shares `W_k` with the attention and has no key projection
    of its own: fewer FLOPs per child.

    Each query (decoder state `d_t`) gets additive scores `e = v^T tanh(W_q
    d_t + W_k p)`, one score network for all levels. It attends at the top
    level, `alpha^L = softmax(e^L)`, descends into the most-attended block
    `z = argmax alpha^L` and attends among its children, and so on down to
    the encoder states (Eq. 12-14):

    `c^l = sum_{i != z} alpha^l_i p^l_i + alpha^l_z c^{l-1}`.

    The context is linear in `h`, `c_t = sum_j beta_tj h_j`; `beta` is
    returned as the attention weights. Outside training the descent is the
    hard argmax. The argmax is not differentiable, so training follows
    `descent`:

    - `"straight_through"` (default): the forward pass is the same hard
      descent as at inference (no train/test mismatch); in the backward
      pass the descent indicator `1[i = z]` takes the gradient of the
      block's weight `alpha_i` (straight-through estimator), so the scores
      learn which block to enter.
    - `"soft"`: every block is entered, the weights are multiplied down the
      levels (`beta_j` is the product of the conditional weights on the
      path to `j`), and the representatives only score; inference still
      uses the hard descent.

    Training and `beta` use a dense implementation that scores every node
    and masks the others out. At inference, `attend(...,
    return_weights=False)` gathers the children of each node on the path
    (`block_size` of them; with `"act"`, `max_block_size`, else as many as
    the batch's largest block) and scores only those and the top level
    (the same context). An `"act"` level has as many (masked) node slots
    as the level below it has, a bound that does not depend on the data,
    so the layer trains under XLA (`jit_compile=True`). `attended_nodes` counts the nodes the method needs (top
    level plus the real children on the path), for the FLOPs it costs.

    Masking: the layer consumes the source mask `values_mask` (True at
    real positions, padding at the end of each row); padded states and
    blocks get weight 0. Math is in float32, outputs in the compute dtype.

    Args:
        units: int > 0, width of the score networks, GRU and CNN filters.
        summarizer: `"rnn"`, `"cnn"` or `"act"`. Defaults to `"cnn"`.
        levels: int >= 2, the number of levels L including the encoder
            states. Defaults to 2.
        block_size: int >= 2, the block size k of `"rnn"` and `"cnn"`.
            Defaults to 3.
        summary_inputs: `"states"` or `"keys"`, what the `"rnn"` and
            `"cnn"` summarisers read and score: the children themselves or
            their attention keys. Defaults to `"states"`.
        descent: `"straight_through"` or `"soft"`, the training descent.
        halting_penalty: float >= 0, weight of the `"act"` halting penalty.
            Defaults to 1e-3.
        halting_epsilon: float in [0, 1), the `"act"` halting slack.
            Defaults to 0.01.
        target_block_size: None or float > 1, the mean block size k the
            `"act"` halting multiplier steers to (the multiplier starts at
            `halting_penalty`). Defaults to None (fixed penalty).
        max_block_size: None or int >= 2, the most children of an `"act"`
            block. Defaults to None.
        return_attention_scores: bool, also return `beta`. Defaults to
            `True`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: float tensor `(batch, query_features)` for one decoder step
            or `(batch, target_steps, query_features)` for all of them.
        values: float tensor `(batch, source_steps, features)`.
        values_mask: optional boolean tensor `(batch, source_steps)`.
        training: Python bool: descent by `descent` (True) or hard.

    Returns:
        The context `(batch, [target_steps,] features)`, and with
        `return_attention_scores` also `beta`
        `(batch, [target_steps,] source_steps)` as a tuple.

    Example:

    >>> query = np.random.rand(2, 6).astype("float32")
    >>> values = np.random.rand(2, 9, 8).astype("float32")
    >>> layer = HierarchicalAttention(units=4, levels=3, block_size=3)
    >>> context, weights = layer(query, values)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 8), (2, 9))

    References:
        - Gupta & Ahmed, 2020, ADL project report: multi-level attention
          (`shared/papers/hierarchical_attention_report.txt`).
        - [Graves, 2016](https://arxiv.org/abs/1603.08983), Adaptive
          Computation Time for Recurrent Neural Networks.
        - [Bengio et al., 2013](https://arxiv.org/abs/1308.3432),
          straight-through estimator.
    """

    def __init__(
        self,
        units=128,
        summarizer="cnn",
        levels=2,
        block_size=3,
        descent="straight_through",
        halting_penalty=1e-3,
        halting_epsilon=0.01,
        target_block_size=None,
        max_block_size=None,
        summary_inputs="states",
        return_attention_scores=True,
        **kwargs,
    ):
        _check_arguments(
            units, summarizer, levels, block_size, descent, halting_penalty, halting_epsilon, target_block_size
        )
        if max_block_size is not None and (
            not isinstance(max_block_size, int) or isinstance(max_block_size, bool) or max_block_size < 2
        ):
            raise ValueError(
                f"`max_block_size` must be None or an integer >= 2. Received: max_block_size={max_block_size}"
            )
        if summary_inputs not in SUMMARY_INPUTS:
            raise ValueError(
                f"`summary_inputs` must be one of {SUMMARY_INPUTS}. Received: summary_inputs={summary_inputs}"
            )
        super().__init__(units=units, return_attention_scores=return_attention_scores, **kwargs)
        self.summarizer = summarizer
        self.summary_inputs = summary_inputs
        self.levels = levels
        self.block_size = block_size
        self.descent = descent
        self.halting_penalty = float(halting_penalty)
        self.halting_epsilon = float(halting_epsilon)
        self.target_block_size = None if target_block_size is None else float(target_block_size)
        self.max_block_size = max_block_size
        policy = self.dtype_policy
        # One entry per summarised level 2..L; `None` where unused.
        self.halting_units, self.halting_multipliers, self.summary_readers = [], [], []
        self.summary_queries, self.summary_keys, self.summary_scores = [], [], []
        for level in range(2, levels + 1):
            if summarizer == "act":
                self.halting_units.append(keras.layers.Dense(1, dtype=policy, name=f"halt_{level}"))
                if self.target_block_size is not None:  # the counterweight's multiplier lambda
                    self.halting_multipliers.append(
                        add_multiplier(self, self.halting_penalty, MAX_MULTIPLIER, f"halting_multiplier_{level}")
                    )
                continue
            if summarizer == "rnn":
                reader = keras.layers.GRU(units, dtype=policy, name=f"gru_{level}")
            else:
                reader = keras.layers.Conv1D(
                    units,
                    block_size,
                    strides=block_size,
                    dtype=policy,
                    name=f"conv_{level}",
                )
            self.summary_readers.append(reader)
            self.summary_queries.append(
                keras.layers.Dense(units, use_bias=False, dtype=policy, name=f"summary_query_{level}")
            )
            if summary_inputs == "states":
                self.summary_keys.append(keras.layers.Dense(units, dtype=policy, name=f"summary_key_{level}"))
            self.summary_scores.append(
                keras.layers.Dense(1, use_bias=False, dtype=policy, name=f"summary_score_{level}")
            )

    def build(self, query_shape, values_shape=None):
        super().build(query_shape, values_shape)
        features = values_shape[-1]
        for halt in self.halting_units:
            halt.build((None, None, features))
        inputs = features if self.summary_inputs == "states" else self.units
        for i, reader in enumerate(self.summary_readers):
            if self.summarizer == "rnn":
                reader.build((None, self.block_size, inputs))
            else:
                reader.build((None, None, inputs))
            self.summary_queries[i].build((None, None, self.units))
            if self.summary_inputs == "states":
                self.summary_keys[i].build((None, None, None, features))
            self.summary_scores[i].build((None, None, None, self.units))
        self.built = True

    # --- summarising: once per sentence -----------------------------------

    def _fixed_summary(self, index, nodes, mask, keys):
        """Blocks of `block_size`: the children's weights within their block
        `(b, p, k)` and their mask `(b, p, k)`; `keys` are the children's
        attention keys (read with `summary_inputs="keys"`)."""
        k = self.block_size
        batch, count = ops.shape(nodes)[0], ops.shape(nodes)[1]
        inputs = nodes if self.summary_inputs == "states" else ops.cast(keys, self.compute_dtype)
        features = inputs.shape[-1]
        pad = (-count) % k
        blocks_count = (count + pad) // k
        padded = ops.pad(inputs * ops.expand_dims(ops.cast(mask, inputs.dtype), -1), [[0, 0], [0, pad], [0, 0]])
        mask_padded = ops.pad(mask, [[0, 0], [0, pad]])
        blocks = ops.reshape(padded, (batch, blocks_count, k, features))
        block_mask = ops.reshape(mask_padded, (batch, blocks_count, k))
        if self.summarizer == "rnn":
            flat = ops.reshape(blocks, (batch * blocks_count, k, features))
            flat_mask = ops.reshape(block_mask, (batch * blocks_count, k))
            summary = self.summary_readers[index](flat, mask=flat_mask)
            summary = ops.reshape(summary, (batch, blocks_count, self.units))
        else:
            summary = self.summary_readers[index](padded)
        block_keys = self.summary_keys[index](blocks) if self.summary_inputs == "states" else blocks
        hidden = ops.tanh(ops.expand_dims(self.summary_queries[index](summary), 2) + block_keys)
        scores = ops.squeeze(self.summary_scores[index](hidden), -1)
        scores = ops.cast(scores, "float32")
        return masked_softmax(scores, block_mask), block_mask

    def _fixed_parents(self, weights, mask):
        """The children's weights in their blocks `(b, p, k)` (from
        `_fixed_summary`) as child weights `(b, c)`, and the parents
        `(b, c, p)` of the children `mask` `(b, c)`."""
        batch, count = ops.shape(mask)[0], ops.shape(mask)[1]
        blocks_count = ops.shape(weights)[1]
        weights = ops.reshape(weights, (batch, blocks_count * self.block_size))[:, :count]
        parent_index = ops.arange(count) // self.block_size
        parents = ops.one_hot(parent_index, blocks_count, dtype="float32")
        parents = ops.expand_dims(parents, 0) * ops.expand_dims(ops.cast(mask, "float32"), -1)
        return weights, parents

    def _halting_loss(self, index, halting, real, blocks):
        """The halting penalty (fixed weight), or with `target_block_size`
        the counterweight: a multiplier on the mean `z` steered by the
        realised block density (blocks per real child, `blocks` `(b,)`)
        against `1 / target_block_size`, with a damped, bounded dual ascent."""
        children = ops.maximum(ops.sum(real, -1), 1.0)
        per_row = ops.sum(halting, -1) / children
        if self.target_block_size is None:
            if self.halting_penalty > 0:
                self.add_loss(self.halting_penalty * ops.mean(per_row))
            return
        rows = ops.cast(ops.sum(real, -1) > 0, "float32")
        count = ops.maximum(ops.sum(rows), 1.0)
        realised = ops.sum(blocks / children * rows) / count
        gap = ops.stop_gradient(realised - 1.0 / self.target_block_size)
        multiplier = self.halting_multipliers[index]
        current = frozen_value(multiplier)
        # d/dz of `lambda * gap + DAMPING / 2 * gap^2` with `d gap / d z`
        # taken as `d mean(z) / d z` (the block count itself is a step
        # function of z): more z, more blocks.
        self.add_loss((current + DAMPING * gap) * ops.sum(per_row * rows) / count)
        step = current + MULTIPLIER_RATE * gap
        multiplier.assign(ops.clip(step, -MAX_MULTIPLIER, MAX_MULTIPLIER))

    def _act_blocks(self, index, nodes, mask, training):
        """ACT-style dynamic blocks: each child's weight in its block and
        the index of its block `(b, c)`, and the real children (float32
        `(b, c)`); adds the halting loss while training."""
        real = ops.cast(mask, "float32")
        halting = ops.sigmoid(ops.cast(ops.squeeze(self.halting_units[index](nodes), -1), "float32")) * real
        weights, parent_index, blocks = act_blocks(halting, real, 1.0 - self.halting_epsilon, self.max_block_size)
        if training:
            self._halting_loss(index, halting, real, ops.cast(blocks, "float32"))
        return weights, parent_index, real

    def _in_blocks(self, keys, nodes, block_mask):
        """A level's children in blocks of `block_size`, `(b, p, k, ...)`,
        so that a step gathers a chosen node's children at once: their
        keys, nodes and `block_mask` (from `_fixed_summary`)."""
        batch, count, k = ops.shape(nodes)[0], ops.shape(nodes)[1], self.block_size
        padding = [[0, 0], [0, (-count) % k], [0, 0]]
        return {
            "block_keys": ops.reshape(ops.pad(keys, padding), (batch, -1, k, keys.shape[-1])),
            "block_nodes": ops.reshape(ops.pad(nodes, padding), (batch, -1, k, nodes.shape[-1])),
            "block_mask": block_mask,
        }

    def prepare(self, values, mask=None, training=None, compact=False):
        """The per-sentence part: the memory `attend` reads, the levels'
        keys, nodes and masks (and for the dense path the parents and the
        compositions over the encoder states).

        The memory is `{"levels": [...], "values": values}`, one dict of
        tensors per level, bottom up (level 0: the encoder states). Every
        memory holds what `attend(..., return_weights=False)` reads: every
        level's `"mask"` `(batch, nodes)`; the top level's `"keys"` and
        `"nodes"`; below it the children of the level above, with `"cnn"`
        and `"rnn"` in blocks of `block_size` (`"block_keys"`,
        `"block_nodes"`, `"block_mask"`, `(batch, blocks, block_size,
        ...)`), so that a step gathers a chosen node's children at once,
        with `"act"` flat (`"keys"`, `"nodes"`) with the blocks' `"starts"`
        and `"sizes"` `(batch, blocks)`.

        The full memory (`compact=False`, or while training) also holds
        what the dense path (`training=True` or `return_weights=True`, and
        `attended_nodes`) reads: every level's flat `"keys"` and `"nodes"`,
        below the top the one-hot child-to-parent matrices `"parents"`
        `(batch, children, parents)`, above level 0 the compositions
        `"compose"` `(batch, nodes, source_steps)` of each node over the
        encoder states. With `compact=True` (outside training) it holds
        only the former, summed block by block, so it costs O(T) per
        sentence rather than O(T^2).
        """
        if mask is None:
            mask = ops.ones(ops.shape(values)[:2], dtype="bool")
        mask = ops.cast(mask, "bool")
        if compact and not training:
            return self._prepare_compact(values, mask)
        steps = ops.shape(values)[1]
        values32 = ops.cast(values, "float32")
        compose = ops.broadcast_to(
            ops.expand_dims(ops.eye(steps, dtype="float32"), 0),
            (ops.shape(values)[0], steps, steps),
        )
        nodes, node_mask = values32, mask
        levels = [{"keys": self.key_dense(values), "mask": mask, "nodes": values32}]
        for index in range(self.levels - 1):
            cast_nodes = ops.cast(nodes, self.compute_dtype)
            child = levels[-1]
            if self.summarizer == "act":
                weights, parent_index, real = self._act_blocks(index, cast_nodes, node_mask, training)
                # As many parent columns as children (the static bound on
                # the number of blocks; the unused ones are empty), so that
                # the shape does not depend on the data (XLA).
                count = nodes.shape[1] if nodes.shape[1] is not None else ops.shape(nodes)[1]
                parents = ops.one_hot(parent_index, count, dtype="float32") * ops.expand_dims(real, -1)
            else:
                block_weights, block_mask = self._fixed_summary(index, cast_nodes, node_mask, child["keys"])
                weights, parents = self._fixed_parents(block_weights, node_mask)
                child.update(self._in_blocks(child["keys"], nodes, block_mask))
            weighted = parents * ops.expand_dims(weights, -1)  # (b, c, p)
            nodes = ops.einsum("bcp,bcf->bpf", weighted, nodes)
            compose = ops.einsum("bcp,bct->bpt", weighted, compose)
            node_mask = ops.sum(parents, axis=1) > 0
            child["parents"] = parents
            if self.summarizer == "act":  # where each block's children start, and how many
                sizes = ops.cast(ops.sum(parents, axis=1), "int32")  # (b, p)
                child["starts"] = ops.cumsum(sizes, axis=-1) - sizes
                child["sizes"] = sizes
            levels.append(
                {
                    "keys": self.key_dense(ops.cast(nodes, self.compute_dtype)),
                    "mask": node_mask,
                    "compose": compose,
                    "nodes": nodes,
                }
            )
        return {"levels": levels, "values": values}

    def _prepare_compact(self, values, mask):
        """`prepare(..., compact=True)`: the levels the gathered descent reads."""
        nodes = ops.cast(values, "float32")
        node_mask = mask
        levels = [{"keys": self.key_dense(values), "mask": mask, "nodes": nodes}]
        for index in range(self.levels - 1):
            cast_nodes = ops.cast(nodes, self.compute_dtype)
            child = levels[-1]  # the children of the level this step makes
            if self.summarizer == "act":
                weights, parent_index, real = self._act_blocks(index, cast_nodes, node_mask, False)
                batch, count = ops.shape(nodes)[0], ops.shape(nodes)[1]
                # Each child adds its weighted state and a count of 1 (if
                # real) to its block's slot; a row's slots follow the rows before.
                slots = ops.minimum(parent_index, count - 1) + ops.expand_dims(ops.arange(batch) * count, -1)
                slots = ops.reshape(slots, (-1,))
                features = nodes.shape[-1]
                weighted = ops.reshape(nodes * ops.expand_dims(weights * real, -1), (batch * count, features))
                nodes = ops.segment_sum(weighted, slots, batch * count)
                nodes = ops.reshape(nodes, (batch, count, features))
                sizes = ops.segment_sum(ops.reshape(real, (-1,)), slots, batch * count)
                sizes = ops.cast(ops.reshape(sizes, (batch, count)), "int32")
                # A row's blocks fill its first slots: keep as many slots as
                # the row with the most blocks needs, so that the levels above
                # (and every decoder step's top level) are O(T / block), not O(T)
                # (under JAX, whose shapes cannot depend on the data, all of
                # them, the unused ones empty).
                if dynamic_shapes():
                    used = ops.maximum(ops.max(ops.sum(ops.cast(sizes > 0, "int32"), -1)), 1)
                    nodes, sizes = nodes[:, :used], sizes[:, :used]
                child["starts"] = ops.cumsum(sizes, axis=-1) - sizes
                child["sizes"] = sizes
                node_mask = sizes > 0
            else:
                weights, block_mask = self._fixed_summary(index, cast_nodes, node_mask, child["keys"])
                # Only the children in blocks: the flat keys and nodes are
                # the dense path's.
                child.update(self._in_blocks(child.pop("keys"), child.pop("nodes"), block_mask))
                nodes = ops.einsum("bpk,bpkf->bpf", weights, child["block_nodes"])
                node_mask = ops.any(block_mask, axis=-1)
            keys = self.key_dense(ops.cast(nodes, self.compute_dtype))
            levels.append({"keys": keys, "mask": node_mask, "nodes": nodes})
        return {"levels": levels, "values": values}

    # --- attending: once per decoder step ----------------------------------

    def _descend(self, query, memory, training):
        levels = memory["levels"]
        projected = ops.expand_dims(self.query_dense(query), 2)
        scores = []
        for level in levels:
            scores.append(self._additive_scores(projected, ops.expand_dims(level["keys"], 1)))
        top = masked_softmax(scores[-1], ops.expand_dims(levels[-1]["mask"], 1))
        # Conditional weights of each node among its siblings, and whether it
        # wins its group (the hard argmax descent).
        groups = [sibling_groups(levels[i]["parents"]) for i in range(len(levels) - 1)]
        conditional = [group_softmax(scores[i], groups[i], levels[i]["mask"]) for i in range(len(levels) - 1)]
        conditional.append(top)
        winners = [None]
        for i in range(1, len(levels)):
            if i == len(levels) - 1:
                hard = ops.one_hot(ops.argmax(top, -1), ops.shape(top)[-1], dtype="float32")
            else:
                hard = group_winners(conditional[i], groups[i], levels[i]["mask"])
            if not training:
                descend = hard
            elif self.descent == "soft":
                descend = ops.ones_like(hard)
            else:
                weights = conditional[i]
                descend = hard + weights - ops.stop_gradient(weights)
            winners.append(descend)
        return conditional, winners

    def _act_children(self, level, chosen):
        """The children of the nodes `chosen` `(b, q)` one level up, an
        `"act"` level's contiguous blocks of varying size, at most
        `max_block_size` children (else the largest block of the batch):
        indices `(b, q, width)` into `level` and whether each is a child."""
        count = ops.shape(level["mask"])[1]
        if self.max_block_size:
            width = self.max_block_size
        elif dynamic_shapes():
            width = ops.maximum(ops.max(level["sizes"]), 1)
        else:  # under JAX a static bound: every child
            width = count
        start = gather_rows(level["starts"], chosen)
        size = gather_rows(level["sizes"], chosen)
        offsets = ops.arange(width, dtype="int32")
        valid = offsets < ops.expand_dims(size, -1)
        index = ops.minimum(ops.expand_dims(start, -1) + offsets, count - 1)
        return index, valid

    def _attend_gathered(self, query, memory):
        """The hard descent, scoring only the top level and the children of
        each node on the path: the context, without `beta`."""
        levels = memory["levels"]
        projected = self.query_dense(query)  # (b, q, u)

        def scores(keys):  # keys (b, q, n, u) -> (b, q, n) float32
            return self._additive_scores(ops.expand_dims(projected, 2), keys)

        top = levels[-1]
        weights = masked_softmax(scores(ops.expand_dims(top["keys"], 1)), ops.expand_dims(top["mask"], 1))
        chosen = ops.cast(ops.argmax(weights, -1), "int32")  # (b, q)
        carry = ops.max(weights, -1)  # the chosen node's weight
        context = ops.einsum("bqn,bnf->bqf", weights, top["nodes"])
        context = context - ops.expand_dims(carry, -1) * gather_rows(top["nodes"], chosen)
        for level in reversed(levels[:-1]):
            if self.summarizer == "act":
                index, valid = self._act_children(level, chosen)  # (b, q, width)
                keys = gather_rows(level["keys"], index)
                nodes = gather_rows(level["nodes"], index)
                allowed = ops.logical_and(valid, gather_rows(level["mask"], index))
            else:  # the chosen nodes' blocks of children (b, q, k, ...)
                keys = gather_rows(level["block_keys"], chosen)
                nodes = gather_rows(level["block_nodes"], chosen)
                allowed = gather_rows(level["block_mask"], chosen)
            weights = masked_softmax(scores(keys), allowed)
            inner = ops.einsum("bqn,bqnf->bqf", weights, nodes)
            if level is levels[0]:
                context = context + ops.expand_dims(carry, -1) * inner
                break
            best = ops.cast(ops.argmax(weights, -1), "int32")
            best_weight = ops.max(weights, -1)
            best_node = ops.take_along_axis(nodes, best[:, :, None, None], axis=2)[:, :, 0]
            context = context + ops.expand_dims(carry, -1) * (inner - ops.expand_dims(best_weight, -1) * best_node)
            carry = carry * best_weight
            if self.summarizer == "act":
                chosen = ops.take_along_axis(index, best[:, :, None], axis=2)[:, :, 0]
            else:
                chosen = chosen * self.block_size + best
        return ops.cast(context, self.compute_dtype)

    def attend(self, query, memory, training=None, return_weights=True):
        """Scores `query` against a `prepare`d memory: `(context, beta)`.

        Outside training, with `return_weights=False`, only the nodes the
        hard descent needs are gathered and scored (the decoder's path: the
        same context, `beta` is `None`).
        """
        single_step = len(query.shape) == 2
        if single_step:
            query = ops.expand_dims(query, 1)
        levels = memory["levels"]
        if not training and not return_weights:
            context = self._attend_gathered(query, memory)
            return (context[:, 0] if single_step else context), None
        if "parents" not in levels[0]:  # a compact memory (see `prepare`)
            raise ValueError(
                "The dense attention (`training=True` or `return_weights=True`) needs a full memory: "
                "call `prepare(..., compact=False)`."
            )
        conditional, winners = self._descend(query, memory, training)
        # The attention mass flows down the descent: at each level a node's
        # mass goes to its children (conditional weights) where the descent
        # enters it, else to its representative's composition of the
        # encoder states; what reaches level 0 attends the states directly.
        # O(b q T) memory per level, never a (query, node, token) tensor.
        mass = conditional[-1]
        beta = None
        for i in range(len(levels) - 1, 0, -1):
            entered = mass * winners[i]
            passed = ops.einsum("bqp,bpt->bqt", mass - entered, levels[i]["compose"])
            beta = passed if beta is None else beta + passed
            mass = ops.einsum("bcp,bqp->bqc", levels[i - 1]["parents"], entered) * conditional[i - 1]
        beta = mass if beta is None else beta + mass
        beta = ops.cast(beta, self.compute_dtype)
        context = ops.einsum("bqt,btf->bqf", beta, memory["values"])
        if single_step:
            context, beta = context[:, 0], beta[:, 0]
        return context, beta

    def attended_nodes(self, query, memory):
        """Nodes the hard descent scores for each query: the real top-level
        nodes plus the real children of each node on the path.

        Returns float32 `(batch, [target_steps])`.
        """
        single_step = len(query.shape) == 2
        if single_step:
            query = ops.expand_dims(query, 1)
        levels = memory["levels"]
        _, winners = self._descend(query, memory, training=False)
        count = ops.sum(ops.cast(ops.expand_dims(levels[-1]["mask"], 1), "float32"), -1)
        on_path = winners[-1]
        for i in range(len(levels) - 1, 0, -1):
            parents = levels[i - 1]["parents"]
            children = ops.einsum("bcp,bqp->bqc", parents, on_path)
            count = count + ops.sum(children, -1)
            if i > 1:
                on_path = children * winners[i - 1]
        if single_step:
            count = count[:, 0]
        return count

    def call(self, query, values, values_mask=None, training=None):
        memory = self.prepare(values, values_mask, training=training)
        return self._outputs(*self.attend(query, memory, training=training))

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "summarizer": self.summarizer,
                "levels": self.levels,
                "block_size": self.block_size,
                "descent": self.descent,
                "halting_penalty": self.halting_penalty,
                "halting_epsilon": self.halting_epsilon,
                "target_block_size": self.target_block_size,
                "max_block_size": self.max_block_size,
                "summary_inputs": self.summary_inputs,
                "return_attention_scores": self.return_attention_scores,
            }
        )
        return config
