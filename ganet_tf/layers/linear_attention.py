import keras
from keras import ops

from ganet_tf.layers.argument_checks import is_real
from ganet_tf.layers.initializers import clone_initializer


@keras.saving.register_keras_serializable(package="ganet_tf")
class LinearAttention(keras.layers.Layer):
    """Multi-head linear attention: softmax attention's kernelised peer.

    Each head projects queries, keys and values as `MultiHeadAttention`
    does, maps queries and keys through the feature map
    `phi(x) = elu(x) + 1` (positive), and attends with

        out_t = phi(q_t) (sum_s phi(k_s) v_s^T) / (phi(q_t) . sum_s phi(k_s))

    The two sums over the keys are computed once for all queries, so time
    and memory grow linearly with the length (`O(T d^2)` against softmax
    attention's `O(T^2 d)`). Masked keys are left out of both sums; the
    sums run in float32, also under mixed precision. The heads are joined
    by an output projection back to the query width.

    Args:
        num_heads: int > 0, the attention heads.
        key_dim: int > 0, the width of each head's queries and keys.
        value_dim: int > 0 or None, the width of each head's values.
            Defaults to `key_dim`.
        dropout: float in [0, 1), dropout of the attention output.
            Defaults to `0.0`.
        epsilon: float > 0, added to the normaliser. Defaults to `1e-6`.
        kernel_initializer, bias_initializer: initializers of the four
            projections. Default to `"glorot_uniform"` and `"zeros"`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: float tensor `(batch, target_steps, query_dim)`.
        value: float tensor `(batch, source_steps, value_dim_in)`.
        key: optional float tensor `(batch, source_steps, key_dim_in)`;
            defaults to `value`.
        query_mask: optional boolean tensor `(batch, target_steps)`; masked
            queries give zeros.
        value_mask: optional boolean tensor `(batch, source_steps)`, True
            at the keys and values to attend.
        training: Python bool, applies the dropout.

    Returns:
        Float tensor `(batch, target_steps, query_dim)`.

    Example:

    >>> layer = LinearAttention(num_heads=2, key_dim=4)
    >>> x = np.random.rand(2, 6, 8).astype("float32")
    >>> tuple(layer(x, x).shape)
    (2, 6, 8)

    References:
        - [Katharopoulos et al., 2020](https://arxiv.org/abs/2006.16236),
          Transformers are RNNs: Fast Autoregressive Transformers with
          Linear Attention.
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        dropout=0.0,
        epsilon=1e-6,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, value in (("num_heads", num_heads), ("key_dim", key_dim), ("value_dim", value_dim or key_dim)):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"`{name}` must be a positive integer. Received: {name}={value}")
        if not is_real(dropout) or not 0 <= dropout < 1:
            raise ValueError(f"`dropout` must be a number in [0, 1). Received: dropout={dropout}")
        if not is_real(epsilon) or epsilon <= 0:
            raise ValueError(f"`epsilon` must be a positive number. Received: epsilon={epsilon}")
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim
        self.dropout = float(dropout)
        self.epsilon = float(epsilon)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True
        self.dropout_layer = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)

    def _projection(self, heads, width, name):
        projection = keras.layers.EinsumDense(
            "abc,cde->abde",
            output_shape=(None, heads, width),
            bias_axes="de",
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            dtype=self.dtype_policy,
            name=name,
        )
        # The masks of the inputs are read by `call`; a projection passes its
        # input's mask on rather than warning that it drops it.
        projection.supports_masking = True
        return projection

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        value_width = self.value_dim or self.key_dim
        self.query_dense = self._projection(self.num_heads, self.key_dim, "query")
        self.query_dense.build(query_shape)
        self.key_dense = self._projection(self.num_heads, self.key_dim, "key")
        self.key_dense.build(key_shape)
        self.value_dense = self._projection(self.num_heads, value_width, "value")
        self.value_dense.build(value_shape)
        self.output_dense = keras.layers.EinsumDense(
            "abcd,cde->abe",
            output_shape=(None, query_shape[-1]),
            bias_axes="e",
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            dtype=self.dtype_policy,
            name="attention_output",
        )
        self.output_dense.build(tuple(query_shape[:-1]) + (self.num_heads, value_width))
        self.built = True

    def call(self, query, value, key=None, query_mask=None, value_mask=None, training=None):
        key = value if key is None else key
        phi_query = ops.elu(ops.cast(self.query_dense(query), "float32")) + 1.0
        phi_key = ops.elu(ops.cast(self.key_dense(key), "float32")) + 1.0
        values = ops.cast(self.value_dense(value), "float32")
        if value_mask is not None:
            kept = ops.cast(value_mask, "float32")[:, :, None, None]
            phi_key = phi_key * kept  # zero in both sums: numerator and normaliser
        # The two sums over the source steps, shared by every query.
        key_values = ops.einsum("bshd,bshe->bhde", phi_key, values)
        key_sum = ops.sum(phi_key, axis=1)
        numerator = ops.einsum("bthd,bhde->bthe", phi_query, key_values)
        normaliser = ops.einsum("bthd,bhd->bth", phi_query, key_sum) + self.epsilon
        attended = numerator / normaliser[..., None]
        if query_mask is not None:
            attended = attended * ops.cast(query_mask, "float32")[:, :, None, None]
        output = self.output_dense(ops.cast(attended, self.compute_dtype))
        return self.dropout_layer(output, training=training)

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        return tuple(query_shape)

    def compute_mask(self, query, value, key=None, query_mask=None, value_mask=None):
        return query_mask

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "value_dim": self.value_dim,
                "dropout": self.dropout,
                "epsilon": self.epsilon,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config
