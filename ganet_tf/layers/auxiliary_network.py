import keras
from keras import ops

from ganet_tf.layers.bidirectional import bidirectional
from ganet_tf.layers.masking import large_negative_number

ENCODERS = ("bilstm", "lstm", "fnn", "attention", "conv")


@keras.saving.register_keras_serializable(package="ganet_tf")
class AuxiliaryNetwork(keras.layers.Layer):
    """The auxiliary network of GA-Net: one gate probability per token.

    A small encoder reads the token embeddings into states `h'_t`, and a
    linear unit gives the probability that the attention gate of token t is
    open, `p_t = sigmoid(U h'_t)`. The encoder is one of

    - `"bilstm"`: a bidirectional LSTM, `hidden_dim` units each way (the
      paper's default);
    - `"lstm"`: a forward LSTM;
    - `"fnn"`: one hidden tanh layer applied to each token on its own;
    - `"attention"`: single-head scaled dot-product self-attention;
    - `"conv"`: a stack of dilated 1D convolutions (kernel 3, ReLU), one
      per rate of `dilation_rates`: context of `1 + 2 * sum(rates)` tokens
      at a cost linear in the length, for long inputs such as bytes.

    The paper finds `hidden_dim=20` about as good as 100. LSTMs keep their
    default activations and no recurrent dropout, so that cuDNN kernels are
    used on GPU.

    Masking: the mask of `inputs` (True at real tokens) is passed to the
    encoder and on to the output; padded positions get probability 0 (logit
    -1e9 with `return_logits=True`, -3e4 in float16).

    Args:
        encoder: one of `"bilstm"`, `"lstm"`, `"fnn"`, `"attention"`.
            Defaults to `"bilstm"`.
        hidden_dim: int > 0, width of the encoder states. Defaults to 20.
        return_logits: bool, return `U h'_t` instead of its sigmoid.
            Defaults to `False`.
        dilation_rates: tuple of positive ints, the dilation of each
            convolution of the `"conv"` encoder (unused by the others).
            Defaults to `(1, 2, 4, 8)`, a context of 31 tokens.
        gate_bias_initializer: initializer of the bias of `U`, i.e. of the
            gates' logits at the start. A positive constant starts training
            with most gates open (`Constant(2.0)`: p about 0.88), so that the
            model begins as soft attention and closes gates as it learns.
            Defaults to `"zeros"` (p about 0.5).
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: float tensor `(batch, steps, features)`, token embeddings.
        mask: optional boolean tensor `(batch, steps)`, True at real tokens.
        training: Python bool, passed to the encoder.

    Returns:
        Float tensor `(batch, steps)` of gate probabilities, or logits with
        `return_logits=True`.

    Example:

    >>> embeddings = np.random.rand(2, 6, 50).astype("float32")
    >>> tuple(AuxiliaryNetwork(encoder="fnn", hidden_dim=20)(embeddings).shape)
    (2, 6)

    References:
        - [Xue et al., 2020](https://arxiv.org/abs/1912.00349), Not All
          Attention Is Needed: Gated Attention Network for Sequence Data.
    """

    def __init__(
        self,
        encoder="bilstm",
        hidden_dim=20,
        return_logits=False,
        gate_bias_initializer="zeros",
        dilation_rates=(1, 2, 4, 8),
        **kwargs,
    ):
        super().__init__(**kwargs)
        if encoder not in ENCODERS:
            raise ValueError(f"`encoder` must be one of {ENCODERS}. Received: encoder={encoder}")
        if not isinstance(hidden_dim, int) or hidden_dim <= 0:
            raise ValueError(f"`hidden_dim` must be a positive integer. Received: hidden_dim={hidden_dim}")
        dilation_rates = tuple(dilation_rates)
        if not dilation_rates or not all(isinstance(rate, int) and rate > 0 for rate in dilation_rates):
            raise ValueError(f"`dilation_rates` must be positive integers. Received: dilation_rates={dilation_rates}")
        self.encoder = encoder
        self.hidden_dim = hidden_dim
        self.dilation_rates = dilation_rates
        self.gate_bias_initializer = keras.initializers.get(gate_bias_initializer)
        self.return_logits = bool(return_logits)
        self.supports_masking = True
        policy = self.dtype_policy
        if encoder == "bilstm":
            self.encoder_layer = bidirectional(
                keras.layers.LSTM(hidden_dim, return_sequences=True, dtype=policy),
                dtype=policy,
                name="encoder",
            )
        elif encoder == "lstm":
            self.encoder_layer = keras.layers.LSTM(hidden_dim, return_sequences=True, dtype=policy, name="encoder")
        elif encoder == "fnn":
            self.encoder_layer = keras.layers.Dense(hidden_dim, activation="tanh", dtype=policy, name="encoder")
        elif encoder == "conv":
            self.encoder_layer = dilated_conv1d_layers(hidden_dim, dilation_rates, "encoder", dtype=policy)
        else:
            self.encoder_layer = keras.layers.MultiHeadAttention(
                num_heads=1,
                key_dim=hidden_dim,
                output_shape=hidden_dim,
                dtype=policy,
                name="encoder",
            )
        self.gate_unit = keras.layers.Dense(
            1,
            bias_initializer=self.gate_bias_initializer,
            dtype=policy,
            name="gate_unit",
        )

    def build(self, inputs_shape):
        if len(inputs_shape) != 3:
            raise ValueError(
                f"`inputs` must have shape (batch, steps, features). Received: inputs.shape={inputs_shape}"
            )
        if self.encoder == "attention":
            self.encoder_layer.build(inputs_shape, inputs_shape)
        elif self.encoder == "conv":
            shape = tuple(inputs_shape)
            for convolution in self.encoder_layer:
                convolution.build(shape)
                shape = shape[:-1] + (self.hidden_dim,)
        else:
            self.encoder_layer.build(inputs_shape)
        width = 2 * self.hidden_dim if self.encoder == "bilstm" else self.hidden_dim
        self.gate_unit.build(tuple(inputs_shape[:-1]) + (width,))
        self.built = True

    def call(self, inputs, mask=None, training=None):
        if self.encoder in ("bilstm", "lstm"):
            states = self.encoder_layer(inputs, mask=mask, training=training)
        elif self.encoder == "fnn":
            states = self.encoder_layer(inputs)
        elif self.encoder == "conv":
            # Padded positions read as zeros, so the real tokens' gates do
            # not depend on how much padding follows.
            states = masked_convolutions(self.encoder_layer, inputs, mask)
        else:
            states = self.encoder_layer(
                inputs,
                inputs,
                query_mask=mask,
                value_mask=mask,
                training=training,
            )
        logits = ops.squeeze(self.gate_unit(states), axis=-1)
        if mask is not None:
            negative = large_negative_number(self.compute_dtype)
            logits = ops.where(mask, logits, ops.cast(negative, logits.dtype))
        if self.return_logits:
            return logits
        return ops.sigmoid(logits)

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1])

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "encoder": self.encoder,
                "hidden_dim": self.hidden_dim,
                "return_logits": self.return_logits,
                "gate_bias_initializer": keras.initializers.serialize(self.gate_bias_initializer),
                "dilation_rates": list(self.dilation_rates),
            }
        )
        return config


def dilated_conv1d_layers(hidden_dim, dilation_rates, name, dtype=None):
    """One `Conv1D` (kernel 3, ReLU, `hidden_dim` filters,
    `padding="same"`) per rate of `dilation_rates`, named `{name}_1`, ...:
    the `"conv"` encoder's stack, also `build_convolution`'s."""
    return [
        keras.layers.Conv1D(
            hidden_dim,
            3,
            padding="same",
            dilation_rate=rate,
            activation="relu",
            dtype=dtype,
            name=f"{name}_{index + 1}",
        )
        for index, rate in enumerate(dilation_rates)
    ]


def masked_convolutions(convolutions, x, mask=None):
    """`x` through `convolutions` in turn, each reading the padded
    positions (`mask` False) as zeros, so that padding changes no real
    token's states."""
    real = None if mask is None else ops.expand_dims(ops.cast(mask, x.dtype), -1)
    for convolution in convolutions:
        x = convolution(x if real is None else x * ops.cast(real, x.dtype))
    return x
