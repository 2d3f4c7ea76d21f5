import keras
from keras import ops

from ganet_tf.layers.masking import large_negative_number


def masked_softmax(scores, allowed):
    """Softmax of float32 `scores` over the last axis where `allowed` is True.

    Disallowed positions get weight 0; a row with nothing allowed gets all
    zeros (not NaN).
    """
    negative = large_negative_number("float32")
    weights = ops.softmax(ops.where(allowed, scores, negative), axis=-1)
    return ops.where(allowed, weights, 0.0)


@keras.saving.register_keras_serializable(package="ganet_tf")
class BahdanauAttention(keras.layers.Layer):
    """Additive attention of decoder states over encoder states.

    Every encoder state `h_j` gets the score
    `e_tj = v^T tanh(W_q d_t + W_k h_j + b)` against the decoder state `d_t`
    (Bahdanau et al., 2015), and the context is `c_t = sum_j alpha_tj h_j`
    with `alpha_t = softmax(e_t)` over the real source positions.

    Decoding calls the layer once per step, so the work on the encoder
    states is split off: `prepare(values, mask)` projects the keys `W_k h_j`
    once per sentence, and `attend(query, memory)` scores a query against
    them. `call(query, values, values_mask)` is `attend(query,
    prepare(values, values_mask))`.

    Masking: the layer consumes the source mask `values_mask` (True at real positions);
    padded positions get weight 0. A row without any real position gets
    all-zero weights and a zero context. Scores are combined in float32, so
    the weights are finite under mixed precision too.

    Args:
        units: int > 0, width of the hidden layer of the score network.
        return_attention_scores: bool, also return the weights `alpha`.
            Defaults to `True`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: float tensor `(batch, query_features)` for one decoder step
            or `(batch, target_steps, query_features)` for all of them.
        values: float tensor `(batch, source_steps, features)`, the encoder
            states.
        values_mask: optional boolean tensor `(batch, source_steps)`, True
            at real source positions (named like `MultiHeadAttention`'s
            `value_mask`: Keras fills a `mask` argument from the query).

    Returns:
        The context `(batch, [target_steps,] features)`, and with
        `return_attention_scores` also the weights
        `(batch, [target_steps,] source_steps)` as a tuple.

    Example:

    >>> query = np.random.rand(2, 6).astype("float32")
    >>> values = np.random.rand(2, 5, 8).astype("float32")
    >>> context, weights = BahdanauAttention(units=4)(query, values)
    >>> context.shape, weights.shape
    (TensorShape([2, 8]), TensorShape([2, 5]))

    References:
        - [Bahdanau et al., 2015](https://arxiv.org/abs/1409.0473), Neural
          Machine Translation by Jointly Learning to Align and Translate.
    """

    def __init__(self, units=128, return_attention_scores=True, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(units, int) or isinstance(units, bool) or units <= 0:
            raise ValueError(f"`units` must be a positive integer. Received: units={units}")
        self.units = units
        self.return_attention_scores = bool(return_attention_scores)
        self.supports_masking = True
        policy = self.dtype_policy
        self.query_dense = keras.layers.Dense(units, use_bias=False, dtype=policy, name="query_dense")
        self.key_dense = keras.layers.Dense(units, dtype=policy, name="key_dense")
        self.score_dense = keras.layers.Dense(1, use_bias=False, dtype=policy, name="score_dense")

    def build(self, query_shape, values_shape=None):
        if values_shape is None or len(values_shape) != 3:
            raise ValueError(
                f"`values` must have shape (batch, source_steps, features). Received: values.shape={values_shape}"
            )
        if len(query_shape) not in (2, 3):
            raise ValueError(
                "`query` must have shape (batch, features) or "
                f"(batch, target_steps, features). Received: query.shape={query_shape}"
            )
        self.query_dense.build(query_shape)
        self.key_dense.build(values_shape)
        self.score_dense.build(tuple(values_shape[:-1]) + (self.units,))
        self.built = True

    def prepare(self, values, mask=None):
        """The per-sentence part: projected keys, values and the mask."""
        if mask is None:
            mask = ops.ones(ops.shape(values)[:2], dtype="bool")
        return {
            "keys": self.key_dense(values),
            "values": values,
            "mask": ops.cast(mask, "bool"),
        }

    def attend(self, query, memory):
        """Scores `query` against a `prepare`d memory: `(context, weights)`."""
        single_step = len(query.shape) == 2
        if single_step:
            query = ops.expand_dims(query, 1)
        projected = ops.expand_dims(self.query_dense(query), 2)
        hidden = ops.tanh(projected + ops.expand_dims(memory["keys"], 1))
        scores = ops.cast(ops.squeeze(self.score_dense(hidden), -1), "float32")
        allowed = ops.expand_dims(memory["mask"], 1)
        weights = ops.cast(masked_softmax(scores, allowed), self.compute_dtype)
        context = ops.einsum("bqs,bsf->bqf", weights, memory["values"])
        if single_step:
            context, weights = context[:, 0], weights[:, 0]
        return context, weights

    def call(self, query, values, values_mask=None):
        context, weights = self.attend(query, self.prepare(values, values_mask))
        if self.return_attention_scores:
            return context, weights
        return context

    def compute_mask(self, *args, **kwargs):
        return None

    def compute_output_shape(self, query_shape, values_shape):
        context_shape = tuple(query_shape[:-1]) + (values_shape[-1],)
        if self.return_attention_scores:
            return context_shape, tuple(query_shape[:-1]) + (values_shape[1],)
        return context_shape

    def flops_per_node(self):
        """Floating point operations for one attended encoder state.

        A multiply-add counts as two: the key projection (`2 * features *
        units + units`), adding the query and tanh (`2 * units`), `v^T`
        (`2 * units`), exponential and normalisation (3) and the weighted
        sum (`2 * features`). Needs a built layer.
        """
        features = self.key_dense.kernel.shape[0]
        units = self.units
        return 2 * features * units + 5 * units + 3 + 2 * features

    def flops_per_query(self):
        """Floating point operations of the query projection, once a step."""
        return 2 * self.query_dense.kernel.shape[0] * self.units

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "return_attention_scores": self.return_attention_scores,
            }
        )
        return config
