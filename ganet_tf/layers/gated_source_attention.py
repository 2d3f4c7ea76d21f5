import keras
from keras import ops

from ganet_tf.layers.bahdanau_attention import BahdanauAttention
from ganet_tf.layers.sparse_gather import dynamic_shapes
from ganet_tf.layers.sparse_gather import gather_open
from ganet_tf.layers.sparse_gather import gather_rows

FALLBACKS = ("all", "none")


@keras.saving.register_keras_serializable(package="ganet_tf")
class GatedSourceAttention(BahdanauAttention):
    """Additive cross-attention over the encoder states whose gate is open.

    GA-Net's gates applied to the source of an encoder-decoder: an auxiliary
    network gates every encoder state once per sentence (`gates`,
    `(batch, source_steps)`), and every decoder step attends only to the
    open states, with

    `alpha_tj = g_j exp(e_tj) / sum_s g_s exp(e_ts)`,

    `e_tj = v^T tanh(W_q d_t + W_k h_j + b)`, computed stably as a softmax
    of `e_tj + log g_j` over the open positions (`g_j > 0`). Closed states
    are never attended and receive no gradient; relaxed gates in (0, 1)
    (training) reach the auxiliary network through `log g_j`.

    At inference the gates are binary, and `prepare(..., compact=True)`
    gathers the open states to the front of each row and drops the columns
    that no row needs, so every decoder step scores only the open states.

    All-closed rows (a real sentence whose gates are all closed) follow
    `fallback`: `"all"` attends (softly, without gates) to every real
    state, so the decoder still sees the sentence; `"none"` attends to
    nothing and the context is zero. A row without any real position gets
    zero weights and a zero context in both cases.

    Args:
        units: int > 0, width of the hidden layer of the score network.
        fallback: `"all"` or `"none"`, what an all-closed row attends to.
            Defaults to `"all"`.
        return_attention_scores: bool, also return the weights `alpha`.
            Defaults to `True`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: float tensor, one decoder step `(batch, query_features)` or
            all of them `(batch, target_steps, query_features)`.
        values: float tensor `(batch, source_steps, features)`, the encoder
            states.
        gates: float tensor `(batch, source_steps)` of gates in [0, 1].
        values_mask: optional boolean tensor `(batch, source_steps)`, True
            at real source positions.

    Returns:
        The context `(batch, [target_steps,] features)`, or with
        `return_attention_scores` the tuple `(context, alpha)`, the weights
        `alpha` `(batch, [target_steps,] source_steps)` being 0 at closed
        states.

    Example:

    >>> query = np.random.rand(2, 6).astype("float32")
    >>> values = np.random.rand(2, 5, 8).astype("float32")
    >>> gates = np.array([[1, 0, 1, 0, 0], [0, 0, 0, 0, 0]], "float32")
    >>> context, weights = GatedSourceAttention(units=4)(query, values, gates)
    >>> keras.ops.convert_to_numpy(weights)[0, [1, 3, 4]]
    array([0., 0., 0.], dtype=float32)

    References:
        - [Xue et al., 2020](https://arxiv.org/abs/1912.00349), Not All
          Attention Is Needed: Gated Attention Network for Sequence Data.
        - [Bahdanau et al., 2015](https://arxiv.org/abs/1409.0473), Neural
          Machine Translation by Jointly Learning to Align and Translate.
    """

    def __init__(self, units=128, fallback="all", return_attention_scores=True, **kwargs):
        super().__init__(units=units, return_attention_scores=return_attention_scores, **kwargs)
        if fallback not in FALLBACKS:
            raise ValueError(f"`fallback` must be one of {FALLBACKS}. Received: fallback={fallback}")
        self.fallback = fallback

    def build(self, query_shape, values_shape=None, gates_shape=None):
        super().build(query_shape, values_shape)
        if gates_shape is not None and len(gates_shape) != 2:
            raise ValueError(f"`gates` must have shape (batch, source_steps). Received: gates.shape={gates_shape}")

    def prepare(self, values, gates, mask=None, compact=False):
        """The per-sentence part: keys, values, log-gates and what is allowed.

        With `compact=True` (binary gates, inference) the allowed states of
        each row are gathered to its front, in their order, and the memory
        is cut to the largest number of allowed states in the batch. Open
        states then weigh alike (`log g_j = 0`), so the memory carries no
        log-gates and each decoder step runs `BahdanauAttention`'s ops on
        fewer states; gates in (0, 1) count as open with weight 1.
        """
        gates = ops.cast(gates, "float32")
        if mask is None:
            real = ops.ones(ops.shape(values)[:2], dtype="bool")
        else:
            real = ops.cast(mask, "bool")
        open_ = ops.logical_and(real, gates > 0.0)
        any_open = ops.any(open_, axis=1, keepdims=True)
        if self.fallback == "all":
            allowed = ops.where(any_open, open_, real)
        else:
            allowed = open_
        if compact:
            # The allowed states first, in order (`top_k` keeps equal values
            # in index order), cut to the largest count of a row where the
            # backend allows shapes that depend on the data (under JAX the
            # memory keeps every column, the closed ones masked).
            if dynamic_shapes():
                width = ops.maximum(ops.max(ops.sum(ops.cast(allowed, "int32"), axis=1)), 1)
            else:
                width = ops.shape(allowed)[1]
            allowed, order = gather_open(ops.cast(allowed, "float32"), width)
            return super().prepare(gather_rows(values, order), allowed)
        # log g_j where the gate is open; 0 (plain attention) in fallback rows.
        log_gates = ops.where(open_, ops.log(ops.where(open_, gates, 1.0)), 0.0)
        return {
            "keys": self.key_dense(values),
            "values": values,
            "mask": allowed,
            "log_gates": log_gates,
        }

    def _scores(self, query, memory):
        """The additive scores plus `log g_j` (0 in fallback rows; none in a
        compact memory, whose open states weigh alike)."""
        scores = super()._scores(query, memory)
        if "log_gates" not in memory:
            return scores
        return scores + ops.expand_dims(memory["log_gates"], 1)

    def call(self, query, values, gates, values_mask=None):
        return self._outputs(*self.attend(query, self.prepare(values, gates, values_mask)))

    def compute_output_shape(self, query_shape, values_shape, gates_shape=None):
        return super().compute_output_shape(query_shape, values_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"fallback": self.fallback})
        return config
