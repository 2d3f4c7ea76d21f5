import keras
from keras import ops

from ganet_tf.layers.masking import large_negative_number


@keras.saving.register_keras_serializable(package="ganet_tf")
class LocalAttentionPooling(keras.layers.Layer):
    """Luong's local-p attention, used as pooling (the BiLSTM+localAtt baseline).

    As adapted in the GA-Net paper, a query vector `q` (the last hidden state
    of the BiLSTM) predicts the centre of the window,

    `p = (L - 1) * sigmoid(v_p^T tanh(W_p q))`,

    where `L` is the real length of the row. Positions `s` with
    `|s - p| <= window` are scored with Luong's general score
    `q^T W_a h_s`, normalised with a softmax over the window and multiplied
    by a Gaussian `exp(-(s - p)^2 / (2 sigma^2))`, `sigma = window / 2`:

    `alpha_s = softmax_window(q^T W_a h_s) * exp(-(s - p)^2 / (2 sigma^2))`,
    and the context is `c = sum_s alpha_s h_s`.

    Masking: the layer consumes the mask of `inputs` (True at real tokens)
    and returns no mask. Padded positions get `alpha = 0` and do not count in
    `L`; a row without any real token gets zero weights and a zero context.

    Args:
        window: int >= 1, the half-width D of the window. The paper uses 40,
            16, 8, 8 and 4 for IMDB, AG News, SST-1, SST-2 and TREC.
        units: int > 0, width of the hidden layer that predicts the centre.
        return_attention_scores: bool, also return the weights. Defaults to
            `True`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: float tensor `(batch, steps, features)`, the states `h_s`.
        query: optional float tensor `(batch, query_features)`. Defaults to
            the state at the last real position of each row.
        mask: optional boolean tensor `(batch, steps)`, True at real tokens.

    Returns:
        The context `(batch, features)`, or with `return_attention_scores`
        the tuple `(context, weights)`, the weights `(batch, steps)` being 0
        outside the window.

    Example:

    >>> states = np.random.rand(2, 10, 8).astype("float32")
    >>> context, weights = LocalAttentionPooling(window=2, units=4)(states)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 8), (2, 10))

    References:
        - [Luong et al., 2015](https://arxiv.org/abs/1508.04025), Effective
          Approaches to Attention-based Neural Machine Translation.
        - [Xue et al., 2020](https://arxiv.org/abs/1912.00349), Not All
          Attention Is Needed: Gated Attention Network for Sequence Data.
    """

    def __init__(
        self,
        window=8,
        units=100,
        return_attention_scores=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not isinstance(window, int) or window < 1:
            raise ValueError(f"`window` must be an integer >= 1. Received: window={window}")
        if not isinstance(units, int) or units <= 0:
            raise ValueError(f"`units` must be a positive integer. Received: units={units}")
        self.window = window
        self.units = units
        self.return_attention_scores = bool(return_attention_scores)
        self.supports_masking = True
        policy = self.dtype_policy
        self.centre_hidden = keras.layers.Dense(units, activation="tanh", dtype=policy, name="centre_hidden")
        self.centre = keras.layers.Dense(1, dtype=policy, name="centre")
        self.score_projection = None

    def build(self, inputs_shape, query_shape=None):
        if len(inputs_shape) != 3:
            raise ValueError(
                f"`inputs` must have shape (batch, steps, features). Received: inputs.shape={inputs_shape}"
            )
        if query_shape is None:
            query_shape = (inputs_shape[0], inputs_shape[2])
        self.centre_hidden.build(query_shape)
        self.centre.build((query_shape[0], self.units))
        self.score_projection = keras.layers.Dense(
            query_shape[-1],
            use_bias=False,
            dtype=self.dtype_policy,
            name="score_projection",
        )
        self.score_projection.build(inputs_shape)
        self.built = True

    def call(self, inputs, query=None, mask=None):
        steps = ops.shape(inputs)[1]
        if mask is None:
            real = ops.ones(ops.shape(inputs)[:2], dtype="bool")
        else:
            real = ops.cast(mask, "bool")
        lengths = ops.sum(ops.cast(real, "int32"), axis=1)
        if query is None:
            last = ops.maximum(lengths - 1, 0)
            query = ops.take_along_axis(inputs, last[:, None, None], axis=1)[:, 0, :]

        fraction = ops.sigmoid(ops.cast(self.centre(self.centre_hidden(query)), "float32"))
        centre = ops.cast(ops.maximum(lengths - 1, 0), "float32")[:, None] * fraction
        positions = ops.cast(ops.arange(steps), "float32")[None, :]
        distance = positions - centre
        allowed = ops.logical_and(real, ops.abs(distance) <= self.window)

        scores = ops.einsum("btq,bq->bt", self.score_projection(inputs), query)
        scores = ops.cast(scores, "float32")
        negative = large_negative_number(self.compute_dtype)
        weights = ops.softmax(ops.where(allowed, scores, negative), axis=-1)
        sigma = self.window / 2.0
        gaussian = ops.exp(-ops.square(distance) / (2.0 * sigma**2))
        weights = ops.where(allowed, weights * gaussian, 0.0)
        weights = ops.cast(weights, self.compute_dtype)
        context = ops.einsum("bt,btf->bf", weights, inputs)
        if self.return_attention_scores:
            return context, weights
        return context

    def compute_mask(self, inputs, query=None, mask=None):
        return None

    def compute_output_shape(self, inputs_shape, query_shape=None):
        context_shape = (inputs_shape[0], inputs_shape[2])
        if self.return_attention_scores:
            return context_shape, (inputs_shape[0], inputs_shape[1])
        return context_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "window": self.window,
                "units": self.units,
                "return_attention_scores": self.return_attention_scores,
            }
        )
        return config
