import math

import keras
from keras import ops

from ganet_tf.keras_compat import attention_dropout
from ganet_tf.keras_compat import attention_gate_dense
from ganet_tf.keras_compat import attention_softmax
from ganet_tf.keras_compat import flash_attention
from ganet_tf.keras_compat import get_mask
from ganet_tf.keras_compat import set_mask
from ganet_tf.layers.masking import large_negative_number
from ganet_tf.layers.sparse_gather import ATTENTION_SLOTS
from ganet_tf.layers.sparse_gather import DEFAULT_SPARSE_BUCKETS
from ganet_tf.layers.sparse_gather import branch_dropout_seed
from ganet_tf.layers.sparse_gather import gather_mask
from ganet_tf.layers.sparse_gather import gather_open
from ganet_tf.layers.sparse_gather import gather_rows
from ganet_tf.layers.sparse_gather import keep_top_k
from ganet_tf.layers.sparse_gather import open_slots
from ganet_tf.layers.sparse_gather import run_bucketed
from ganet_tf.layers.sparse_gather import scatter_back
from ganet_tf.layers.sparse_gather import set_sparse_options
from ganet_tf.layers.sparse_gather import static_steps
from ganet_tf.layers.sparse_gather import straight_through_ones
from ganet_tf.layers.sparse_gather import training_buckets

# Smallest gate whose logarithm enters the scores: log(1e-9) = -20.7, finite
# in float16 too.
GATE_FLOOR = 1e-9

# The einsum equations of the gated path (rank-3 inputs, attention over
# axis 1; projected tensors `(batch, steps, heads, dim)`): Keras'
# `MultiHeadAttention` builds the same ones for such inputs.
DOT_PRODUCT_EQUATION = "aecd,abcd->acbe"  # key, query -> scores (batch, heads, q, k)
COMBINE_EQUATION = "acbe,aecd->abcd"  # weights, value -> (batch, q, heads, dim)


@ops.custom_gradient
def _floored_log(gates):
    # log(max(g, floor)). Its gradient is upstream / max(g, floor) at every
    # g, closed gates included: the upstream gradient of a log-gate bias is
    # proportional to the attention weight, which is proportional to
    # max(g, floor), so the quotient stays finite and a (straight-through)
    # closed gate still learns how much it would have been attended.
    floored = ops.maximum(gates, GATE_FLOOR)

    def grad(*args, upstream=None):
        if upstream is None:
            (upstream,) = args
        return upstream / floored

    return ops.log(floored), grad


def _fused_kernel_fails(dtype):
    """Whether `keras.ops.dot_product_attention` cannot run `dtype` here:
    compiled under JAX on CPU, float16 (XLA's CPU `dot_general` has no
    float16 x float16 -> float32 product; `keras.layers.MultiHeadAttention`
    fails there too, Keras 3.15)."""
    if keras.backend.backend() != "jax" or keras.backend.standardize_dtype(dtype) != "float16":
        return False
    import jax

    return jax.devices()[0].platform == "cpu"


@keras.saving.register_keras_serializable(package="ganet_tf")
class GatedMultiHeadAttention(keras.layers.MultiHeadAttention):
    """Multi-head attention whose keys and values are gated by GA-Net gates.

    `keras.layers.MultiHeadAttention` plus a `gates` call argument
    `(batch, kv_steps)`, one gate per key/value position (the output of
    `GateSampler`):

    - while training the (relaxed) gates enter the scores as a log-gate
      bias, `softmax(q k^T / sqrt(d) + log g)`, i.e. the attention weights
      are `g_s exp(e_s) / sum g exp(e)` (GA-Net's Eq. 4 per query). The
      logarithm is floored at `1e-9` and its gradient is taken at the floor
      for closed gates, so gradients reach every gate value;
    - at inference the gates are binary: key/value `s` is attended only
      where `gates[:, s] > 0.5`, as a key mask merged with the other masks.

    Without `gates` the layer is `keras.layers.MultiHeadAttention`. With all
    gates open it equals `keras.layers.MultiHeadAttention` with the same
    weights; with binary gates at inference it equals the masked one. A
    query with no open key left gets a zero context (the output projection
    of zero), as in Keras' masked softmax.

    Sparse inference: with `sparse_inference=True` the closed keys and
    values are gathered away before they are projected: the open positions
    are taken with `keras.ops.top_k` and `keras.ops.take_along_axis`, so the
    key/value projections cost `k` rows and the score matrix is
    `(query_steps, k)` instead of `(query_steps, kv_steps)`. `k`, the largest
    number of open keys in the batch, is rounded up to the next of
    `sparse_buckets` (fractions of `kv_steps`): each bucket is one branch of
    a `keras.ops.switch` with a static `k` when `kv_steps` is static, so a
    graph (also under XLA and in a SavedModel) is traced once and runs only
    the branch it needs. Unused slots are masked. The outputs equal the
    dense masked path. Outside inference, or with
    `return_attention_scores=True` (the scores are `(query_steps,
    kv_steps)`), the dense path runs.

    Query dropping: with `query_dropping=True` (self-attention: queries and
    keys/values of the same length, one gate per position) a closed query
    is not computed at inference either: its context is zero, so its
    output is the output projection of zero (its bias), as for a query
    with no open key. The open queries' outputs are unchanged. On the
    sparse path the open queries are gathered like the keys (`k` is the
    larger of the two open counts, rounded up), so the query and output
    projections, the scores and the weighted sum all cost `k` rows instead
    of `query_steps`. Use it where nothing downstream reads the closed
    positions (a residual block that leaves them unchanged, a gated
    pooling), as `GatedTransformerEncoder(token_dropping=True)` does.
    Training computes every query, unless `sparse_training` is set.

    Sparse training: with `sparse_training=True` training drops keys and
    values too (and, with `query_dropping`, queries), so its work scales
    with `training_density` as that of inference does. Each row keeps the
    `max(1, round(training_density * T))` of its `T` real keys with the
    highest gates, the `top_k` rule of `GateSampler` applied to the gates
    given (while training, relaxed samples: the ranking of the logits
    perturbed by the relaxation's logistic noise, so tokens near the cut
    are kept now and then and learn whether they help). The kept keys are
    gathered into a static bucketed length as at inference (the largest
    size exactly the kept count of a full row), and their gates enter as
    straight-through ones: forward the binary gates of inference (no
    train/test mismatch), backward that of the dense path's log-gate bias
    `log g` (`1 / g` times the bias's gradient), so the gate network still
    learns from the task loss. Dropped keys get no gradient through
    the attention.

    Args:
        num_heads, key_dim, value_dim, dropout, use_bias, output_shape,
            attention_axes, ...: the arguments of
            `keras.layers.MultiHeadAttention`. With `gates`, only attention
            over axis 1 of rank-3 inputs is supported.
        sparse_inference: bool, gather closed keys and values away at
            inference. Defaults to `False`.
        sparse_buckets: sequence of fractions in (0, 1], the sizes `k` of
            the sparse path as shares of `kv_steps` (1 is always added), or
            `None` for `k` exactly the number of open keys (dynamic shapes:
            no padding, but not XLA-compilable). Defaults to a ladder of
            ratio 2^(1/4) from 1/32 to 1.
        sparse_bucket_multiple: int, round every bucket size up to a
            multiple of it (at most `kv_steps`): 64 for the fused attention
            kernels of GPUs (cuDNN's refuses other lengths), 1 for exact
            sizes. Defaults to `1`.
        query_dropping: bool, at inference give closed queries a zero
            context instead of computing it (self-attention only; see
            above). Defaults to `False`.
        sparse_training: bool, drop the keys (and with `query_dropping`
            the queries) outside the `top_k` gates while training (see
            above). Defaults to `False`.
        training_density: None or float in (0, 1], the share rho of real
            keys that sparse training keeps; required by
            `sparse_training=True`. Defaults to `None`.
        **kwargs: the other arguments of `keras.layers.MultiHeadAttention`
            and base layer keyword arguments.

    Call arguments:
        query, value, key, query_mask, value_mask, key_mask, attention_mask,
            return_attention_scores, training, use_causal_mask: as in
            `keras.layers.MultiHeadAttention`.
        gates: optional float tensor `(batch, kv_steps)` of gates in [0, 1].
        dropout_seed: optional seed tensor of the weights' dropout while
            training (JAX), for a call inside a `keras.ops.switch` branch.

    Returns:
        `attention_output` `(batch, query_steps, features)`, and with
        `return_attention_scores=True` also the weights
        `(batch, num_heads, query_steps, kv_steps)`.

    Example:

    >>> x = np.random.rand(2, 6, 16).astype("float32")
    >>> gates = np.array([[1, 0, 1, 0, 0, 1]] * 2, "float32")
    >>> layer = GatedMultiHeadAttention(num_heads=2, key_dim=8,
    ...                                 sparse_inference=True)
    >>> tuple(layer(x, x, gates=gates).shape)
    (2, 6, 16)

    References:
        - [Xue et al., 2020](https://arxiv.org/abs/1912.00349), Not All
          Attention Is Needed: Gated Attention Network for Sequence Data.
        - [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762),
          Attention Is All You Need.
        - [Goyal et al., 2020](https://arxiv.org/abs/2001.08950), PoWER-BERT.
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        *args,
        sparse_inference=False,
        sparse_buckets=DEFAULT_SPARSE_BUCKETS,
        query_dropping=False,
        sparse_training=False,
        training_density=None,
        sparse_bucket_multiple=1,
        **kwargs,
    ):
        super().__init__(num_heads, key_dim, *args, **kwargs)
        # Options of `keras.layers.MultiHeadAttention` that older Keras 3
        # releases lack, read from its public config (absent: off): `use_gate`,
        # an output gate (Keras 3.14), and `sliding_window`, a banded mask
        # (Keras 3.15). The gate's projection is Keras' own
        # (`attention_gate_dense`, 3.14+), used only where `use_gate` is set.
        mha_config = keras.layers.MultiHeadAttention.get_config(self)
        self._output_gate = bool(mha_config.get("use_gate", False))
        self._window = mha_config.get("sliding_window")
        set_sparse_options(
            self, sparse_inference, sparse_buckets, sparse_training, training_density, sparse_bucket_multiple
        )
        self.query_dropping = bool(query_dropping)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "sparse_inference": self.sparse_inference,
                "sparse_buckets": self.sparse_buckets,
                "query_dropping": self.query_dropping,
                "sparse_training": self.sparse_training,
                "training_density": self.training_density,
                "sparse_bucket_multiple": self.sparse_bucket_multiple,
            }
        )
        return config

    def _check_gated_shapes(self, query):
        if len(query.shape) != 3 or tuple(self.attention_axes or (1,)) != (1,):
            raise ValueError(
                "`gates` need rank-3 inputs `(batch, steps, features)` and "
                "attention over axis 1. Received: "
                f"query.shape={query.shape}, "
                f"attention_axes={self.attention_axes}"
            )

    def _query_open(self, query, value, gates, query_mask):
        """Open queries `(batch, query_steps)` for query dropping: the open
        gates (and `query_mask`); refuses queries and values of different
        lengths."""
        if query.shape[1] is not None and value.shape[1] is not None and query.shape[1] != value.shape[1]:
            raise ValueError(
                "`query_dropping=True` needs self-attention: a query and a value of the same length, "
                "one gate per position. Received: "
                f"query.shape={query.shape}, value.shape={value.shape}"
            )
        query_open = ops.greater(ops.cast(gates, "float32"), 0.5)
        return query_open if query_mask is None else ops.logical_and(query_open, query_mask)

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
        use_causal_mask=False,
        gates=None,
        dropout_seed=None,
    ):
        if gates is None:
            # Where the fused kernel cannot run (`_fused_kernel_fails`),
            # Keras' explicit path, the one that returns the weights, does:
            # Keras falls back to it only where the kernel fails eagerly,
            # not in a traced function (a `jit` step, a `keras.ops.switch`
            # branch such as `GatedTransformerEncoder`'s token dropping).
            weights_needed = return_attention_scores or _fused_kernel_fails(self.compute_dtype)
            outputs = super().call(
                query,
                value,
                key=key,
                query_mask=query_mask,
                value_mask=value_mask,
                key_mask=key_mask,
                attention_mask=attention_mask,
                return_attention_scores=weights_needed,
                training=training,
                use_causal_mask=use_causal_mask,
            )
            return outputs if return_attention_scores or not weights_needed else outputs[0]
        self._check_gated_shapes(query)
        if key is None:
            key = value
        if query_mask is None:
            query_mask = get_mask(query)
        for tensor in (query, value, key):
            set_mask(tensor, None)

        dropping = bool(training) and self.sparse_training and not return_attention_scores
        key_open, bias = self._gate_keys(gates, value_mask, key_mask, training, dropping)
        if query_mask is not None:
            query_mask = ops.cast(query_mask, "bool")
        if attention_mask is not None:
            attention_mask = ops.cast(attention_mask, "bool")
        query_open = None
        if self.query_dropping and (dropping or not training):
            query_open = self._query_open(query, value, key_open if dropping else gates, query_mask)
        sparse = dropping or (self.sparse_inference and not training and not return_attention_scores)
        # On the dropping path the kept keys carry ones whose gradient is
        # that of the dense path's log-gate bias.
        kept = straight_through_ones(gates, GATE_FLOOR) if dropping else None
        # The weights' dropout draws its mask from `dropout_seed` (while
        # training) rather than from the dropout layer.
        seed = dropout_seed if training else None
        if sparse and query_open is not None:
            output = self._sparse_token_attention(
                query, key, value, key_open, query_open, attention_mask, use_causal_mask, kept, training, seed
            )
            scores = None
        else:
            masks = (key_open, bias, query_mask, query_open, attention_mask, use_causal_mask)
            output, scores = self._project_and_attend(
                query, key, value, masks, sparse, training, seed, kept, return_attention_scores
            )
        if query_mask is not None:
            set_mask(output, query_mask)
        if return_attention_scores:
            return output, scores
        return output

    def _project_and_attend(
        self, query, key, value, masks, sparse, training, dropout_seed=None, kept=None, weights_needed=False
    ):
        """`(output, scores)` of every query: the dense path (scores None
        unless `weights_needed`), or with `sparse` the open keys and values
        gathered (scores None)."""
        key_open, bias, query_mask, query_open, attention_mask, use_causal_mask = masks
        gate = attention_gate_dense(self)(query) if self._output_gate else None
        query = self.query_dense(query)
        if sparse:
            output = self._sparse_attention(
                query, key, value, key_open, query_mask, attention_mask, use_causal_mask, kept, training, dropout_seed
            )
            scores = None
        else:
            mask = self._dense_mask(query, value, key_open, query_mask, attention_mask, use_causal_mask)
            key, value = self.key_dense(key), self.value_dense(value)
            output, scores = self._attend(query, key, value, mask, bias, training, dropout_seed, weights_needed)
        if query_open is not None:  # closed queries: a zero context
            output = output * ops.cast(query_open, output.dtype)[:, :, None, None]
            if scores is not None:
                scores = scores * ops.cast(query_open, scores.dtype)[:, None, :, None]
        if gate is not None:
            output = ops.multiply(output, gate)
        return self.output_dense(output), scores

    def _gate_keys(self, gates, value_mask, key_mask, training, dropping=False):
        """`(key_open, bias)`: per-key openness `(batch, kv_steps)` from the
        key/value padding masks and, at inference, the gates (or None); in
        training the gates as an additive log bias `(batch, 1, 1, kv_steps)`
        (else None), or with `dropping` the keys that the `top_k` rule keeps
        (bias None)."""
        key_open = None
        for mask in (value_mask, key_mask):
            if mask is not None:
                mask = ops.cast(mask, "bool")
                key_open = mask if key_open is None else ops.logical_and(key_open, mask)
        gates = ops.cast(gates, "float32")
        bias = None
        if dropping:
            key_open = keep_top_k(gates, key_open, self.training_density)
        elif training:
            bias = _floored_log(gates)[:, None, None, :]
        else:
            gate_open = ops.greater(gates, 0.5)
            key_open = gate_open if key_open is None else ops.logical_and(key_open, gate_open)
        return key_open, bias

    def _position_mask(self, query, key_positions, use_causal_mask, query_positions=None):
        """Causal and sliding-window mask `(1 or batch, q, k)` from the
        original positions `(1 or batch, k)` of the keys (and of the
        queries, all of them by default), or None."""
        if not use_causal_mask and self._window is None:
            return None
        if query_positions is None:
            rows = ops.arange(ops.shape(query)[1], dtype="int32")[None, :, None]
        else:
            rows = ops.expand_dims(ops.cast(query_positions, "int32"), -1)
        columns = ops.expand_dims(ops.cast(key_positions, "int32"), axis=1)
        mask = None
        if use_causal_mask:
            mask = ops.greater_equal(rows, columns)
        if self._window is not None:
            window = ops.less(ops.abs(rows - columns), self._window)
            mask = window if mask is None else ops.logical_and(mask, window)
        return mask

    def _merge(self, *masks):
        merged = None
        for mask in masks:
            if mask is not None:
                merged = mask if merged is None else ops.logical_and(merged, mask)
        return merged

    def _dense_mask(self, query, value, key_open, query_mask, attention_mask, use_causal_mask):
        positions = ops.arange(ops.shape(value)[1], dtype="int32")[None, :]
        return self._merge(
            None if query_mask is None else ops.expand_dims(query_mask, -1),
            None if key_open is None else ops.expand_dims(key_open, -2),
            self._position_mask(query, positions, use_causal_mask),
            attention_mask,
        )

    def _score_scale(self):
        """`1 / sqrt(key_dim)`, the scale of the scores, as in
        `keras.layers.MultiHeadAttention`."""
        return 1.0 / math.sqrt(float(self.key_dim))

    def _attend(self, query, key, value, mask, bias, training, dropout_seed=None, weights_needed=False):
        """Scaled dot-product attention of projected `(batch, steps, heads,
        dim)` tensors with a boolean `mask` `(batch, q or 1, k)` and a float
        `bias` broadcastable to `(batch, heads, q, k)`: `(output, weights)`.
        `training`: a Python bool; `dropout_seed`: None, or while training
        the seed tensor of the weights' dropout (from `_branch_seed`, drawn
        outside a `keras.ops.switch` branch).

        As in `keras.layers.MultiHeadAttention`, the fused kernel
        (`keras.ops.dot_product_attention`, weights None) runs unless the
        weights are needed or dropped out."""
        dropping = self.dropout > 0 and training is not False and training is not None
        if not (weights_needed or dropping or _fused_kernel_fails(query.dtype)):
            return self._fused_attend(query, key, value, mask, bias), None
        query = ops.multiply(query, ops.cast(self._score_scale(), query.dtype))
        scores = ops.einsum(DOT_PRODUCT_EQUATION, key, query)
        if mask is not None and mask.shape[1] == 1:
            # A per-key mask: one additive bias row instead of selects over
            # the whole score tensor; rows without any open key are zeroed
            # on the (smaller) output.
            negative = large_negative_number(scores.dtype)
            key_bias = ops.where(mask, 0.0, negative)[:, :, None, :]
            bias = key_bias if bias is None else ops.cast(bias, "float32") + key_bias
            weights = attention_softmax(self)(scores + ops.cast(bias, scores.dtype))
            row_open = ops.any(mask, axis=-1)[:, :, None, None]  # (batch, 1, 1, 1)
        else:
            if bias is not None:
                scores = scores + ops.cast(bias, scores.dtype)
            if mask is not None:
                mask = ops.expand_dims(mask, axis=1)
            weights = attention_softmax(self)(scores, mask=mask)
            row_open = None
        if self.dropout > 0 and dropout_seed is not None:
            attended = keras.random.dropout(weights, self.dropout, seed=dropout_seed)
        elif self.dropout > 0:
            attended = attention_dropout(self)(weights, training=training)
        else:
            attended = weights
        output = ops.einsum(COMBINE_EQUATION, attended, value)
        if row_open is not None:
            output = output * ops.cast(row_open, output.dtype)
            weights = weights * ops.cast(row_open, weights.dtype)
        return output, weights

    def _fused_attend(self, query, key, value, mask, bias):
        """`_attend`'s output by `keras.ops.dot_product_attention`. A mask
        with a bias, or a per-key mask, becomes part of the bias (the
        PyTorch backend takes one of the two; a bias row is added where a
        mask selects over every score); queries with no open key get a zero
        context."""
        row_open = None
        if mask is not None:
            row_open = ops.any(mask, axis=-1)[:, :, None, None]  # (batch, q or 1, 1, 1)
            mask = ops.expand_dims(mask, axis=1)
            if bias is not None or mask.shape[2] == 1:
                negative = large_negative_number(query.dtype)
                bias = ops.where(mask, 0.0 if bias is None else ops.cast(bias, "float32"), negative)
                mask = None
        output = ops.dot_product_attention(
            query,
            key,
            value,
            bias=bias,
            mask=mask,
            scale=self._score_scale(),
            flash_attention=flash_attention(self),
        )
        if row_open is not None:
            output = output * ops.cast(row_open, output.dtype)
        return output

    def _branch_seed(self, training, dropout_seed):
        """The `dropout_seed` that `_attend` takes inside a `keras.ops.switch`
        branch: the one given, else where `branch_dropout_seed` draws one,
        that one, else None."""
        if dropout_seed is not None:
            return dropout_seed
        return branch_dropout_seed(attention_dropout(self), self.dropout, training)

    def _sparse_attention(
        self,
        query,
        key,
        value,
        key_open,
        query_mask,
        attention_mask,
        use_causal_mask,
        kept=None,
        training=False,
        dropout_seed=None,
    ):
        key_float, needed = self._open_keys(value, key_open)
        dropout_seed = self._branch_seed(training, dropout_seed)

        def branch(k):
            return self._attend_open_keys(
                query,
                key,
                value,
                key_float,
                k,
                query_mask=query_mask,
                attention_mask=attention_mask,
                use_causal_mask=use_causal_mask,
                kept=kept,
                training=training,
                dropout_seed=dropout_seed,
            )

        return self._run_bucketed(branch, needed, value, kept)

    def _run_bucketed(self, branch, needed, value, kept):
        """`branch(k)` at the bucket of `needed` keys (`kept` set: of the
        dropping path of training), at least `ATTENTION_SLOTS`."""
        steps = static_steps(value)
        buckets = self.sparse_buckets
        if kept is not None:
            buckets = training_buckets(buckets, steps, self.training_density)
        return run_bucketed(branch, needed, steps, buckets, self.sparse_bucket_multiple, ATTENTION_SLOTS)

    def _sparse_token_attention(
        self,
        query,
        key,
        value,
        key_open,
        query_open,
        attention_mask,
        use_causal_mask,
        kept=None,
        training=False,
        dropout_seed=None,
    ):
        """The sparse path with query dropping: the open queries (raw, not
        yet projected) and the open keys/values are gathered into `k` slots,
        attended, projected out and scattered back; closed queries get the
        output projection of a zero context."""
        key_float, key_needed = self._open_keys(value, key_open)
        query_float, query_needed, query_slot = open_slots(query_open)
        dropout_seed = self._branch_seed(training, dropout_seed)
        zero_context = ops.zeros((1, 1, self.num_heads, self.value_dim), self.compute_dtype)
        closed_output = self.output_dense(zero_context)

        def branch(k):
            # Slots of closed queries are computed but never scattered back.
            _, query_positions = gather_open(query_float, k)
            compact = gather_rows(query, query_positions)
            gate = attention_gate_dense(self)(compact) if self._output_gate else None
            output = self._attend_open_keys(
                self.query_dense(compact),
                key,
                value,
                key_float,
                k,
                query_positions=query_positions,
                attention_mask=attention_mask,
                use_causal_mask=use_causal_mask,
                kept=kept,
                training=training,
                dropout_seed=dropout_seed,
            )
            if gate is not None:
                output = ops.multiply(output, gate)
            return scatter_back(self.output_dense(output), query_slot, query_open, k, closed_output)

        needed = ops.maximum(key_needed, query_needed)
        return self._run_bucketed(branch, needed, value, kept)

    def _open_keys(self, value, key_open):
        """The open keys as float32 `(batch, kv_steps)` (all of them when
        `key_open` is None) and the largest open count of a row."""
        if key_open is None:
            key_open = ops.ones(ops.shape(value)[:2], dtype="bool")
        key_float = ops.cast(key_open, "float32")
        return key_float, ops.cast(ops.max(ops.sum(key_float, axis=1)), "int32")

    def _attend_open_keys(
        self,
        query,
        key,
        value,
        key_float,
        k,
        *,
        query_positions=None,
        query_mask=None,
        attention_mask=None,
        use_causal_mask=False,
        kept=None,
        training=False,
        dropout_seed=None,
    ):
        """Projected `query` rows attend to the `k` first open keys and
        values, gathered (the open positions first, in order, then closed
        ones as masked slots). `query_positions` `(batch, q)`: the original
        positions of gathered query rows, or None for all of them in order.
        `kept` `(batch, kv_steps)`: the straight-through ones of the
        dropping path, a log-gate bias of the gathered keys (or None)."""
        slot_open, positions = gather_open(key_float, k)
        k_in = gather_rows(key, positions)
        v_in = k_in if value is key else gather_rows(value, positions)
        gathered_mask = None
        if attention_mask is not None:
            gathered_mask = gather_mask(attention_mask, query_positions, positions)
        mask = self._merge(
            None if query_mask is None else ops.expand_dims(query_mask, -1),
            ops.expand_dims(slot_open, -2),
            self._position_mask(query, positions, use_causal_mask, query_positions),
            gathered_mask,
        )
        bias = None if kept is None else _floored_log(gather_rows(kept, positions))[:, None, None, :]
        keys, values = self.key_dense(k_in), self.value_dense(v_in)
        output, _ = self._attend(query, keys, values, mask, bias, training, dropout_seed)
        return output

    def compute_output_spec(self, query, value, key=None, gates=None, **kwargs):
        return super().compute_output_spec(query, value, key=key, **kwargs)
