import keras
import tensorflow as tf
import tensorflow_probability as tfp

INFERENCE_MODES = ("threshold", "sample")


@tf.custom_gradient
def _finite_relaxed_sample(logits, sample, temperature):
    # `sample` was drawn from RelaxedBernoulli(temperature, logits): it is
    # sigmoid((logits + L) / temperature) with L ~ Logistic(0, 1). Its exact
    # pathwise derivative is sample * (1 - sample) / temperature, which is
    # finite for every sample, while TFP's own gradient overflows to NaN when
    # (logits + L) / temperature is large.
    def grad(upstream):
        local = sample * (1.0 - sample) / temperature
        return upstream * local, None, None

    return tf.identity(sample), grad


@keras.saving.register_keras_serializable(package="ganet_tf")
class GateSampler(keras.layers.Layer):
    """Draws the binary attention gates of GA-Net from gate logits.

    The auxiliary network gives every token t a logit `u_t`; the gate is
    open with probability `p_t = sigmoid(u_t)`. During training the
    Bernoulli draw is relaxed with the Gumbel-softmax trick (the paper's
    Eq. 7-9), i.e. a sample of
    `tfp.distributions.RelaxedBernoulli(temperature, logits=u_t)`, so that
    gradients reach the auxiliary network. The gradient of the relaxed sample
    is the exact pathwise derivative `g (1 - g) / temperature`, which stays
    finite for every temperature and logit (TFP's own gradient is NaN for
    low temperatures and large logits).

    With `straight_through=True` the forward pass uses the hard gate
    `1[g > 0.5]` and the backward pass the relaxed gradient.

    Outside training the gates are binary: `inference_mode="threshold"`
    opens gate t when `p_t > 0.5` (deterministic, the default for serving);
    `inference_mode="sample"` draws `Bernoulli(p_t)` as in the paper.

    Masking: positions where the input mask is False get gate 0, and the
    mask is passed on unchanged.

    Args:
        temperature: float > 0, the relaxation temperature tau. The paper
            searches {0.5, 1.0, 1.5, 2.0}.
        straight_through: bool, use hard gates in the forward pass while
            training. Defaults to `False`.
        inference_mode: `"threshold"` or `"sample"`, how gates are drawn
            outside training. Defaults to `"threshold"`.
        seed: int or None, seed of the layer's `keras.random.SeedGenerator`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: float tensor `(batch, steps)`, the gate logits.
        mask: optional boolean tensor `(batch, steps)`, True at real tokens.
        training: Python bool, whether to draw relaxed gates.

    Returns:
        Float tensor `(batch, steps)`: relaxed gates in (0, 1) while
        training, gates in {0, 1} otherwise.

    Example:

    >>> sampler = GateSampler(temperature=0.5, seed=1)
    >>> logits = np.array([[-3.0, 0.5, 4.0]], dtype="float32")
    >>> sampler(logits).numpy()
    array([[0., 1., 1.]], dtype=float32)

    References:
        - [Xue et al., 2020](https://arxiv.org/abs/1912.00349), Not All
          Attention Is Needed: Gated Attention Network for Sequence Data.
        - [Maddison et al., 2017](https://arxiv.org/abs/1611.00712),
          The Concrete Distribution.
    """

    def __init__(
        self,
        temperature=1.0,
        straight_through=False,
        inference_mode="threshold",
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not isinstance(temperature, (int, float)) or temperature <= 0:
            raise ValueError(
                "`temperature` must be a positive number. "
                f"Received: temperature={temperature}"
            )
        if inference_mode not in INFERENCE_MODES:
            raise ValueError(
                f"`inference_mode` must be one of {INFERENCE_MODES}. "
                f"Received: inference_mode={inference_mode}"
            )
        self.temperature = float(temperature)
        self.straight_through = bool(straight_through)
        self.inference_mode = inference_mode
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.supports_masking = True
        self._build_at_init()

    def _next_seed(self):
        return tf.cast(self.seed_generator.next(), "int32")

    def _relaxed(self, logits):
        logits = tf.cast(logits, "float32")
        temperature = tf.constant(self.temperature, "float32")
        distribution = tfp.distributions.RelaxedBernoulli(
            temperature, logits=logits
        )
        sample = tf.stop_gradient(distribution.sample(seed=self._next_seed()))
        gates = _finite_relaxed_sample(logits, sample, temperature)
        if self.straight_through:
            hard = tf.cast(gates > 0.5, gates.dtype)
            gates = gates + tf.stop_gradient(hard - gates)
        return gates

    def _binary(self, logits):
        logits = tf.cast(logits, "float32")
        if self.inference_mode == "threshold":
            return tf.cast(logits > 0.0, "float32")
        distribution = tfp.distributions.Bernoulli(
            logits=logits, dtype="float32"
        )
        return distribution.sample(seed=self._next_seed())

    def call(self, inputs, mask=None, training=None):
        if training:
            gates = self._relaxed(inputs)
        else:
            gates = self._binary(inputs)
        if mask is not None:
            gates = gates * tf.cast(mask, gates.dtype)
        return tf.cast(gates, self.compute_dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "temperature": self.temperature,
                "straight_through": self.straight_through,
                "inference_mode": self.inference_mode,
                "seed": self.seed,
            }
        )
        return config
