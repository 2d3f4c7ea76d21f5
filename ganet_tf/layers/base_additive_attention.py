"""The additive (Bahdanau) score network shared by the attention layers."""

import keras
from keras import ops


class BaseAdditiveAttention(keras.layers.Layer):
    """Base class of the decoder attention layers with additive scores.

    A query `d` (a decoder state) and a key state `h` (an encoder state or
    a summary of some) get the score `e = v^T tanh(W_q d + W_k h + b)`
    (Bahdanau et al., 2015). The three sublayers are `query_dense` (`W_q`,
    no bias), `key_dense` (`W_k` and `b`) and `score_dense` (`v`, no bias),
    created in that order, so the subclasses share their weight names.

    Subclasses validate their own arguments (`units` included, with their
    own messages) before calling this constructor, define `prepare` and
    `attend`, and end `call` with `self._outputs(context, weights)`.

    Args:
        units: int > 0, width of the hidden layer of the score network.
        return_attention_scores: bool, also return the attention weights.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    The call arguments, outputs and examples are those of the subclasses:
    `BahdanauAttention`, `GatedSourceAttention`, `HierarchicalAttention`.

    References:
        - [Bahdanau et al., 2015](https://arxiv.org/abs/1409.0473), Neural
          Machine Translation by Jointly Learning to Align and Translate.
    """

    def __init__(self, units, return_attention_scores, **kwargs):
        super().__init__(**kwargs)
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

    def _additive_scores(self, projected_query, keys):
        """float32 `v^T tanh(projected_query + keys)` over the last axis.

        `projected_query` (from `query_dense`) and `keys` (from `key_dense`)
        broadcast against each other; the result drops their last axis.
        """
        hidden = ops.tanh(projected_query + keys)
        return ops.cast(ops.squeeze(self.score_dense(hidden), -1), "float32")

    def _outputs(self, context, weights):
        """What `call` returns: the context, and the weights if asked for."""
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

    def flops_per_node(self, projected_keys=False):
        """Floating point operations for one scored key state.

        A multiply-add counts as two: the key projection (`2 * features *
        units + units`), adding the query and tanh (`2 * units`), `v^T`
        (`2 * units`), exponential and normalisation (3) and the weighted
        sum (`2 * features`). Needs a built layer.

        Args:
            projected_keys: leave the key projection out, for a query
                scored against keys projected beforehand (a decoder step
                against keys `prepare`d once per sentence).
        """
        features = self.key_dense.kernel.shape[0]
        units = self.units
        projection = 0 if projected_keys else 2 * features * units + units
        return projection + 4 * units + 3 + 2 * features

    def flops_per_query(self):
        """Floating point operations of the query projection, once a step."""
        return 2 * self.query_dense.kernel.shape[0] * self.units
