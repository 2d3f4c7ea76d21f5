import keras
from keras import ops

from ganet_tf.layers.base_additive_attention import BaseAdditiveAttention
from ganet_tf.layers.masking import masked_softmax


@keras.saving.register_keras_serializable(package="ganet_tf")
class BahdanauAttention(BaseAdditiveAttention):
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
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 8), (2, 5))

    References:
        - [Bahdanau et al., 2015](https://arxiv.org/abs/1409.0473), Neural
          Machine Translation by Jointly Learning to Align and Translate.
    """

    def __init__(self, units=128, return_attention_scores=True, **kwargs):
        if not isinstance(units, int) or isinstance(units, bool) or units <= 0:
            raise ValueError(f"`units` must be a positive integer. Received: units={units}")
        super().__init__(units=units, return_attention_scores=return_attention_scores, **kwargs)

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
        scores = self._scores(query, memory)
        allowed = ops.expand_dims(memory["mask"], 1)
        weights = ops.cast(masked_softmax(scores, allowed), self.compute_dtype)
        context = ops.einsum("bqs,bsf->bqf", weights, memory["values"])
        if single_step:
            context, weights = context[:, 0], weights[:, 0]
        return context, weights

    def _scores(self, query, memory):
        """float32 scores `(batch, queries, source_steps)` of a `(batch,
        queries, query_features)` query against the memory's keys."""
        projected = ops.expand_dims(self.query_dense(query), 2)
        return self._additive_scores(projected, ops.expand_dims(memory["keys"], 1))

    def call(self, query, values, values_mask=None):
        return self._outputs(*self.attend(query, self.prepare(values, values_mask)))

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "return_attention_scores": self.return_attention_scores,
            }
        )
        return config
