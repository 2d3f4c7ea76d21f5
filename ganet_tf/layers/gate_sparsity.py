import keras
from keras import ops

from ganet_tf.layers.masking import masked_mean


@keras.saving.register_keras_serializable(package="ganet_tf")
class GateSparsity(keras.layers.Layer):
    """GA-Net's sparsity penalty on the gates, and the gate density metric.

    An identity layer on the gates, like `keras.layers.ActivityRegularization`
    but aware of padding. While training it adds

    `penalty * mean_over_batch(||G||_1 / T)`

    to the model's losses, where `||G||_1` sums the (relaxed) gates of one
    example and `T` is its real, unpadded length. So the model's loss is the
    paper's `cross-entropy + lambda ||G||_1 / T`.

    It also tracks the metric `density` (`val_density` in validation):
    the share of real tokens whose gate is open (`g > 0.5`), averaged over
    the examples that have at least one real token. With binary gates this is exactly open gates / real tokens.

    Masking: padded positions (mask False) count neither in `||G||_1` nor in
    `T`; the mask is passed on unchanged.

    Args:
        penalty: float >= 0, the weight lambda of the L1 term. The paper
            searches 4e-6 .. 1e-3.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: float tensor `(batch, steps)`, the gates.
        mask: optional boolean tensor `(batch, steps)`, True at real tokens.
        training: Python bool, whether to add the penalty to the losses.

    Returns:
        `inputs`, unchanged.

    Example:

    >>> layer = GateSparsity(penalty=1e-3)
    >>> gates = np.array([[1.0, 0.0, 1.0, 0.0]], dtype="float32")
    >>> _ = layer(gates)
    >>> float(layer.density.result())
    0.5

    References:
        - [Xue et al., 2020](https://arxiv.org/abs/1912.00349), Not All
          Attention Is Needed: Gated Attention Network for Sequence Data.
    """

    def __init__(self, penalty=1e-4, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(penalty, (int, float)) or penalty < 0:
            raise ValueError(
                "`penalty` must be a non-negative number. "
                f"Received: penalty={penalty}"
            )
        self.penalty = float(penalty)
        self.supports_masking = True
        self.density = keras.metrics.Mean(name="density")
        self._build_at_init()

    def call(self, inputs, mask=None, training=None):
        if training and self.penalty > 0:
            l1_per_length = masked_mean(inputs, mask)
            self.add_loss(self.penalty * ops.mean(l1_per_length))
        open_gates = ops.cast(ops.greater(inputs, 0.5), "float32")
        has_tokens = None
        if mask is not None:
            has_tokens = ops.cast(ops.any(mask, axis=-1), "float32")
        self.density.update_state(
            masked_mean(open_gates, mask), sample_weight=has_tokens
        )
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update({"penalty": self.penalty})
        return config
