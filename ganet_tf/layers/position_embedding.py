import keras
from keras import ops


@keras.saving.register_keras_serializable(package="ganet_tf")
class PositionEmbedding(keras.layers.Layer):
    """Learned position embeddings, one vector per position.

    Like keras-hub's `PositionEmbedding`: returns the embeddings of
    positions `0 .. steps - 1`, broadcast to the shape of `inputs`, to be
    added to the token embeddings.

    Args:
        max_length: int > 0, the most positions (padded length) supported.
        initializer: initializer of the table. Defaults to
            `"glorot_uniform"`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: float tensor `(batch, steps, features)` with
            `steps <= max_length`.

    Returns:
        Float tensor of the shape of `inputs`.

    Example:

    >>> x = np.zeros([2, 5, 8], "float32")
    >>> tuple(PositionEmbedding(max_length=16)(x).shape)
    (2, 5, 8)

    References:
        - [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762),
          Attention Is All You Need (learned position embeddings, Section
          3.5).
    """

    def __init__(self, max_length, initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        if not isinstance(max_length, int) or max_length <= 0:
            raise ValueError(f"`max_length` must be a positive integer. Received: max_length={max_length}")
        self.max_length = max_length
        self.initializer = keras.initializers.get(initializer)
        self.supports_masking = True

    def build(self, inputs_shape):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.max_length, inputs_shape[-1]),
            initializer=self.initializer,
        )
        self.built = True

    def call(self, inputs):
        steps = ops.shape(inputs)[1]
        table = ops.cast(self.embeddings[:steps], self.compute_dtype)
        return ops.broadcast_to(table[None], ops.shape(inputs))

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "max_length": self.max_length,
                "initializer": keras.initializers.serialize(self.initializer),
            }
        )
        return config
