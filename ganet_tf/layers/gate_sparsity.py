import keras
from keras import ops

from ganet_tf.keras_compat import build_at_init
from ganet_tf.layers.argument_checks import is_real
from ganet_tf.layers.layer_mean import LayerMean
from ganet_tf.layers.layer_mean import load_variables
from ganet_tf.layers.layer_mean import save_variables
from ganet_tf.layers.layer_state import add_state_scalar
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
    the examples that have at least one real token. With binary gates this
    is exactly open gates / real tokens. The metric is a
    `ganet_tf.layers.LayerMean`: its sums are state of the layer, so it
    counts every batch of `fit`, `evaluate` and `predict` on every backend,
    compiled or not.

    With a `target_density` rho the weight is no longer fixed: it is a
    Lagrange multiplier `lambda` of the constraint `d = rho`, where `d` is
    the batch mean of `||G||_1 / T` (rows with a real token). The layer adds
    the augmented Lagrangian `lambda * (d - rho) + damping / 2 * (d - rho)^2`
    to the losses and, after each training batch, takes a dual ascent step
    `lambda <- clip(lambda + multiplier_rate * (d - rho), -max_multiplier,
    max_multiplier)`. The ascent is two-sided: when the density is below
    the target, `lambda` turns negative and pushes gates open. The clip
    keeps `lambda` bounded where the target cannot be met, and the
    quadratic term damps the oscillation of plain dual ascent (the
    modified differential method of multipliers). `lambda` is the
    non-trainable weight `multiplier` (saved with the model), starting at
    `penalty`. Without a target the loss is the paper's fixed-lambda
    objective.

    The constraint is on the mean of the gates this layer receives (in
    GA-Net the sampled gates, which the attention uses), not on the
    probabilities `p_t`. It sets how many gates are open on average in
    training, not where `p_t` sits against the test threshold 0.5: serve
    an exact density with `GateSampler(inference_mode="top_k")`. The
    measurements behind these choices are in `docs/gates.md`.

    Masking: padded positions (mask False) count neither in `||G||_1` nor in
    `T`; the mask is passed on unchanged.

    Args:
        penalty: float >= 0, the weight lambda of the L1 term. The paper
            searches 4e-6 .. 1e-3. With `target_density`, the initial value
            of the multiplier.
        target_density: None or float in (0, 1), the density rho the
            multiplier steers the mean gate to. Defaults to `None` (fixed
            `penalty`).
        multiplier_rate: float > 0, step size of the dual ascent on the
            multiplier. Defaults to 0.01.
        max_multiplier: float > 0, bound on `|multiplier|`. Defaults to 1.0.
        damping: float >= 0, weight of the quadratic term. Defaults to 10.
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
        - [Bastings et al., 2019](https://aclanthology.org/P19-1284/),
          Interpretable Neural Predictions with Differentiable Binary
          Variables.
        - [Platt & Barr, 1988](https://papers.nips.cc/paper/4-constrained-differential-optimization),
          Constrained Differential Optimization.
    """

    def __init__(
        self,
        penalty=1e-4,
        target_density=None,
        multiplier_rate=0.01,
        max_multiplier=1.0,
        damping=10.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not is_real(penalty) or penalty < 0:
            raise ValueError(f"`penalty` must be a non-negative number. Received: penalty={penalty}")
        if target_density is not None and (not is_real(target_density) or not 0 < target_density < 1):
            raise ValueError(
                f"`target_density` must be None or a number in (0, 1). Received: target_density={target_density}"
            )
        if not is_real(multiplier_rate) or multiplier_rate <= 0:
            raise ValueError(
                f"`multiplier_rate` must be a positive number. Received: multiplier_rate={multiplier_rate}"
            )
        if not is_real(max_multiplier) or max_multiplier <= 0:
            raise ValueError(f"`max_multiplier` must be a positive number. Received: max_multiplier={max_multiplier}")
        self.penalty = float(penalty)
        self.target_density = None if target_density is None else float(target_density)
        self.multiplier_rate = float(multiplier_rate)
        self.max_multiplier = float(max_multiplier)
        if not is_real(damping) or damping < 0:
            raise ValueError(f"`damping` must be a non-negative number. Received: damping={damping}")
        self.damping = float(damping)
        self.supports_masking = True
        self.density = LayerMean(self, name="density")
        if self.target_density is not None:
            self.multiplier = add_multiplier(self, self.penalty, self.max_multiplier, "multiplier")
        build_at_init(self)

    def call(self, inputs, mask=None, training=None):
        has_tokens = None
        if mask is not None:
            has_tokens = ops.cast(ops.any(mask, axis=-1), "float32")
        if training and self.target_density is not None:
            self._constrain(inputs, mask, has_tokens)
        elif training and self.penalty > 0:
            l1_per_length = masked_mean(inputs, mask)
            self.add_loss(self.penalty * ops.mean(l1_per_length))
        open_gates = ops.cast(ops.greater(inputs, 0.5), "float32")
        self.density.update_state(masked_mean(open_gates, mask), sample_weight=has_tokens)
        return inputs

    def _constrain(self, inputs, mask, has_tokens):
        per_row = masked_mean(inputs, mask)
        if has_tokens is None:
            mean_density = ops.mean(per_row)
        else:
            mean_density = ops.sum(per_row * has_tokens) / ops.maximum(ops.sum(has_tokens), 1.0)
        gap = mean_density - self.target_density
        multiplier = frozen_value(self.multiplier)
        self.add_loss(multiplier * gap + 0.5 * self.damping * gap**2)
        step = multiplier + self.multiplier_rate * ops.stop_gradient(gap)
        self.multiplier.assign(ops.clip(step, -self.max_multiplier, self.max_multiplier))

    def compute_output_shape(self, input_shape):
        return input_shape

    def save_own_variables(self, store):
        save_variables(self, store)

    def load_own_variables(self, store):
        load_variables(self, store)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "penalty": self.penalty,
                "target_density": self.target_density,
                "multiplier_rate": self.multiplier_rate,
                "max_multiplier": self.max_multiplier,
                "damping": self.damping,
            }
        )
        return config


def frozen_value(variable):
    """The value of `variable` now, without gradient and apart from its
    storage: on PyTorch `stop_gradient` of a variable shares the storage,
    and the `assign` of a dual ascent step after the forward pass would
    break the backward pass that reads it."""
    return ops.stop_gradient(ops.copy(variable))


def add_multiplier(layer, start, bound, name):
    """A Lagrange multiplier of `layer`: a non-trainable float32 scalar
    weight (saved with the model) that starts at `min(start, bound)`, for a
    dual ascent step after each training batch. Under a distribution
    strategy each replica steps on its own batch; the replicas' steps are
    averaged."""
    return add_state_scalar(layer, name, aggregation="mean", value=min(start, bound))
