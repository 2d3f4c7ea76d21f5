import keras
import numpy as np
from keras import ops

from ganet_tf.keras_compat import build_at_init
from ganet_tf.layers.argument_checks import is_real
from ganet_tf.layers.layer_state import add_state_scalar

INFERENCE_MODES = ("threshold", "sample", "top_k", "relative", "nucleus")
# The parameter of each inference mode that has one.
MODE_PARAMETERS = {"top_k": "inference_density", "relative": "inference_ratio", "nucleus": "inference_mass"}
DISTRIBUTIONS = ("relaxed_bernoulli", "hard_concrete")
# The stretch interval (gamma, zeta) of hard concrete gates (Louizos et al.).
HARD_CONCRETE_STRETCH = (-0.1, 1.1)


def relaxed_bernoulli_sample(logits, temperature, seed):
    """A sample of `RelaxedBernoulli(temperature, logits)` drawn with
    `keras.random`: `sigmoid((logits + log u - log(1 - u)) / temperature)`
    with `u ~ Uniform(tiny, 1)`, the reparameterised draw of
    `tfp.distributions.RelaxedBernoulli` (a logistic sample through a
    sigmoid). `seed`: a `keras.random.SeedGenerator` or a seed tensor."""
    logits = ops.cast(logits, "float32")
    tiny = float(np.finfo("float32").tiny)
    uniform = keras.random.uniform(ops.shape(logits), minval=tiny, maxval=1.0, dtype="float32", seed=seed)
    return ops.sigmoid((logits + ops.log(uniform) - ops.log1p(-uniform)) / temperature)


def _finite_relaxed_sample(logits, sample, temperature):
    """`sample`, drawn from RelaxedBernoulli(temperature, logits), with the
    gradient on `logits` of its exact pathwise derivative."""

    # `sample` is sigmoid((logits + L) / temperature) with L ~ Logistic(0, 1).
    # Its exact pathwise derivative is sample * (1 - sample) / temperature,
    # which is finite for every sample, while TFP's own gradient overflows to
    # NaN when (logits + L) / temperature is large.
    @ops.custom_gradient
    def finite(logits):
        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            return upstream * (sample * (1.0 - sample) / temperature)

        return sample, grad

    return finite(logits)


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

    With `distribution="hard_concrete"` the relaxed sample `s` is stretched
    to `(gamma, zeta) = (-0.1, 1.1)` and clipped to [0, 1],
    `g = clip(s (zeta - gamma) + gamma, 0, 1)` (Louizos et al., 2018), so
    training sees exact zeros and ones, with
    `P(g = 0) = sigmoid(tau log(-gamma / zeta) - u_t)` and
    `P(g = 1) = sigmoid(u_t - tau log((1 - gamma) / (zeta - 1)))`; a gate
    at 0 or 1 passes no gradient, the others `(zeta - gamma) s (1 - s) /
    tau`. The stretch is symmetric about 0.5, so `P(g > 0.5) = p_t` as with
    the plain relaxation.

    With `straight_through=True` the forward pass uses the hard gate
    `1[g > 0.5]` and the backward pass the relaxed gradient.

    Temperature annealing: with `final_temperature` set, the temperature of
    training step `s` is `temperature * (final_temperature / temperature)
    ** min(s / anneal_steps, 1)`, a geometric path from `temperature` to
    `final_temperature` in `anneal_steps` training calls, then constant
    (Jang et al. anneal the Gumbel-softmax temperature the same way). The
    step count is a non-trainable weight, so it is saved with the model and
    restored by `keras.callbacks.BackupAndRestore`; under a distribution
    strategy it advances once per global batch.

    Outside training the gates are binary: `inference_mode="threshold"`
    opens gate t when `p_t > 0.5` (deterministic, the default for serving);
    `inference_mode="sample"` draws `Bernoulli(p_t)` as in the paper;
    `inference_mode="top_k"` opens the `k = max(1, round(inference_density
    * T))` real tokens (halves rounded up) of highest `p_t` in each example
    of `T` real tokens (deterministic, ties to the earlier token): a real
    row is never all-closed, and attention costs a fixed share of the
    tokens. `top_k`, or `nucleus` below (`build_ganet`'s default), is the
    rule to use with a target density: the density penalty sets how many
    gates are open on average, not where `p_t` sits against 0.5, so
    `threshold` can close every gate of a text while the ranking of the
    tokens is right (`docs/gates.md`).

    Two rules let each text decide how many gates it opens, from its own
    `p_t` (deterministic, the most probable real token always open, so a
    real row is never all-closed): `inference_mode="relative"` opens the
    real tokens with `p_t >= inference_ratio * max_s p_s` (compared in log
    space, so it holds for any logits), and `inference_mode="nucleus"` the
    fewest real tokens of highest `p_t` (ties to the earlier token) whose
    normalised mass `p_t / sum_s p_s` reaches `inference_mass`. A text with
    one token far above the rest opens that token; a text whose `p_t` are
    alike opens most of them.

    Masking: positions where the input mask is False get gate 0, and the
    mask is passed on unchanged.

    Args:
        temperature: float > 0, the relaxation temperature tau. The paper
            searches {0.5, 1.0, 1.5, 2.0}.
        straight_through: bool, use hard gates in the forward pass while
            training. Defaults to `False`.
        inference_mode: `"threshold"`, `"sample"`, `"top_k"`,
            `"relative"` or `"nucleus"`, how gates are drawn outside
            training. Defaults to `"threshold"`.
        distribution: `"relaxed_bernoulli"` (TFP `RelaxedBernoulli`, the
            paper's Gumbel-softmax gates) or `"hard_concrete"` (stretched
            and clipped, with exact zeros and ones), the training gates.
            Defaults to `"relaxed_bernoulli"`.
        inference_density: None or float in (0, 1], the share rho of real
            tokens that `"top_k"` opens; required by `"top_k"`.
        final_temperature: None or float > 0, the temperature that
            annealing reaches after `anneal_steps` training calls. `None`
            (the default) keeps `temperature` throughout.
        anneal_steps: int >= 0, the training calls over which the
            temperature moves from `temperature` to `final_temperature`;
            must be positive when `final_temperature` is set.
        seed: int or None, seed of the layer's `keras.random.SeedGenerator`.
        inference_ratio: None or float in (0, 1], the share r of the
            text's largest `p_t` that a token's `p_t` must reach to open
            under `"relative"`; required by `"relative"`.
        inference_mass: None or float in (0, 1], the normalised gate mass
            pi that `"nucleus"` opens; required by `"nucleus"`.
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
    >>> keras.ops.convert_to_numpy(sampler(logits))
    array([[0., 1., 1.]], dtype=float32)

    References:
        - [Xue et al., 2020](https://arxiv.org/abs/1912.00349), Not All
          Attention Is Needed: Gated Attention Network for Sequence Data.
        - [Maddison et al., 2017](https://arxiv.org/abs/1611.00712),
          The Concrete Distribution.
        - [Louizos et al., 2018](https://arxiv.org/abs/1712.01312),
          Learning Sparse Neural Networks through L0 Regularization.
        - [Jang et al., 2017](https://arxiv.org/abs/1611.01144),
          Categorical Reparameterization with Gumbel-Softmax.
    """

    def __init__(
        self,
        temperature=1.0,
        straight_through=False,
        inference_mode="threshold",
        seed=None,
        distribution="relaxed_bernoulli",
        inference_density=None,
        final_temperature=None,
        anneal_steps=0,
        inference_ratio=None,
        inference_mass=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not is_real(temperature) or temperature <= 0:
            raise ValueError(f"`temperature` must be a positive number. Received: temperature={temperature}")
        _check_annealing(final_temperature, anneal_steps)
        if inference_mode not in INFERENCE_MODES:
            raise ValueError(
                f"`inference_mode` must be one of {INFERENCE_MODES}. Received: inference_mode={inference_mode}"
            )
        if distribution not in DISTRIBUTIONS:
            raise ValueError(f"`distribution` must be one of {DISTRIBUTIONS}. Received: distribution={distribution}")
        parameters = {
            "inference_density": inference_density,
            "inference_ratio": inference_ratio,
            "inference_mass": inference_mass,
        }
        for name, value in parameters.items():
            if value is not None and (not is_real(value) or not 0 < value <= 1):
                raise ValueError(f"`{name}` must be None or a number in (0, 1]. Received: {name}={value}")
        needed = MODE_PARAMETERS.get(inference_mode)
        if needed is not None and parameters[needed] is None:
            raise ValueError(
                f"`inference_mode='{inference_mode}'` needs its parameter: pass `{needed}`. Received: {needed}=None"
            )
        self.distribution = distribution
        self.inference_density = None if inference_density is None else float(inference_density)
        self.inference_ratio = None if inference_ratio is None else float(inference_ratio)
        self.inference_mass = None if inference_mass is None else float(inference_mass)
        self.temperature = float(temperature)
        self.straight_through = bool(straight_through)
        self.inference_mode = inference_mode
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.final_temperature = None if final_temperature is None else float(final_temperature)
        self.anneal_steps = int(anneal_steps)
        self.supports_masking = True
        if self.final_temperature is not None:
            # Each replica counts its share of a global batch as one step;
            # the mean of the replicas' counts is the step.
            self.anneal_step = add_state_scalar(self, "anneal_step", aggregation="mean")
        build_at_init(self)

    def current_temperature(self):
        """The temperature of the next training step, a float32 scalar."""
        if self.final_temperature is None:
            return ops.convert_to_tensor(self.temperature, "float32")
        progress = ops.minimum(ops.convert_to_tensor(self.anneal_step) / float(self.anneal_steps), 1.0)
        ratio = self.final_temperature / self.temperature
        return self.temperature * ops.power(ops.convert_to_tensor(ratio, "float32"), progress)

    def _next_seed(self):
        """The seed of a TFP draw (TensorFlow backend)."""
        import tensorflow as tf

        seed = tf.cast(self.seed_generator.next(), "int32")
        # Under a tf.distribute strategy the replicas share the seed state:
        # the replica id makes each draw its own noise (replica 0, and one
        # device, keep the plain seed).
        replica = tf.distribute.get_replica_context()
        if replica is not None and replica.num_replicas_in_sync > 1:
            replica_id = tf.cast(replica.replica_id_in_sync_group, "int32")
            seed = seed + tf.stack([replica_id * 7919, 0])
        return seed

    def _relaxed(self, logits):
        logits = ops.cast(logits, "float32")
        temperature = self.current_temperature()
        if self.final_temperature is not None:
            self.anneal_step.assign_add(1.0)
        if keras.backend.backend() == "tensorflow":
            import tensorflow_probability as tfp

            distribution = tfp.distributions.RelaxedBernoulli(temperature, logits=logits)
            sample = distribution.sample(seed=self._next_seed())
        else:
            sample = relaxed_bernoulli_sample(logits, temperature, self.seed_generator)
        gates = _finite_relaxed_sample(logits, ops.stop_gradient(sample), temperature)
        if self.distribution == "hard_concrete":
            low, high = HARD_CONCRETE_STRETCH
            gates = ops.clip(gates * (high - low) + low, 0.0, 1.0)
        if self.straight_through:
            hard = ops.cast(gates > 0.5, gates.dtype)
            gates = gates + ops.stop_gradient(hard - gates)
        return gates

    def _binary(self, logits, mask):
        logits = ops.cast(logits, "float32")
        if self.inference_mode == "threshold":
            return ops.cast(logits > 0.0, "float32")
        if self.inference_mode == "top_k":
            return self._top_k(logits, mask)
        if self.inference_mode == "relative":
            return self._relative(logits, mask)
        if self.inference_mode == "nucleus":
            return self._nucleus(logits, mask)
        if keras.backend.backend() == "tensorflow":
            import tensorflow_probability as tfp

            distribution = tfp.distributions.Bernoulli(logits=logits, dtype="float32")
            return distribution.sample(seed=self._next_seed())
        uniform = keras.random.uniform(ops.shape(logits), dtype="float32", seed=self.seed_generator)
        return ops.cast(uniform < ops.sigmoid(logits), "float32")

    def _top_k(self, logits, mask):
        real = _real(logits, mask)
        lengths = ops.sum(ops.cast(real, "float32"), axis=-1, keepdims=True)
        # round(rho T), halves up, forgiving the float error of rho T
        # (0.3 * 5 < 1.5 in float32). Rounding keeps the mean density at rho
        # where ceil would add up to 1 / T.
        k = ops.floor(self.inference_density * lengths + 0.5 + 1e-4)
        k = ops.minimum(ops.maximum(k, 1.0), lengths)
        ranks = _descending_ranks(ops.where(real, logits, -float("inf")))
        opened = ops.logical_and(ops.cast(ranks, "float32") < k, real)
        return ops.cast(opened, "float32")

    def _relative(self, logits, mask):
        real = _real(logits, mask)
        # log p_t >= log r + max_s log p_s, in log space so that a text of
        # very negative logits (p_t underflowing to 0) still opens its most
        # probable token; r <= 1 always opens that token.
        log_p = ops.where(real, ops.log_sigmoid(logits), -float("inf"))
        best = ops.max(log_p, axis=-1, keepdims=True)
        log_ratio = ops.log(ops.convert_to_tensor(self.inference_ratio, "float32"))
        opened = ops.logical_and(log_p >= best + log_ratio, real)
        return ops.cast(opened, "float32")

    def _nucleus(self, logits, mask):
        real = _real(logits, mask)
        log_p = ops.where(real, ops.log_sigmoid(logits), -float("inf"))
        # q_t = p_t / sum_s p_s over the real tokens, a softmax of log p_t
        # (zeros at padding, and a row without real tokens opens nothing).
        shares = ops.where(real, ops.softmax(log_p, axis=-1), 0.0)
        order = _descending_order(log_p)
        ranks = ops.argsort(order, axis=-1)
        # A token opens when the mass of the tokens ranked before it is
        # still below pi: the fewest whose mass reaches pi, the first always.
        sorted_shares = ops.take_along_axis(shares, order, axis=-1)
        shifted = ops.concatenate([ops.zeros_like(sorted_shares[:, :1]), sorted_shares[:, :-1]], axis=-1)
        before = ops.cumsum(shifted, axis=-1)
        opened_sorted = before < self.inference_mass
        opened = ops.logical_and(ops.take_along_axis(opened_sorted, ranks, axis=-1), real)
        return ops.cast(opened, "float32")

    def call(self, inputs, mask=None, training=None):
        if training:
            gates = self._relaxed(inputs)
        else:
            gates = self._binary(inputs, mask)
        if mask is not None:
            gates = gates * ops.cast(mask, gates.dtype)
        return ops.cast(gates, self.compute_dtype)

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
                "distribution": self.distribution,
                "inference_density": self.inference_density,
                "final_temperature": self.final_temperature,
                "anneal_steps": self.anneal_steps,
                "inference_ratio": self.inference_ratio,
                "inference_mass": self.inference_mass,
            }
        )
        return config


def _real(logits, mask):
    """The boolean mask of real tokens, all True without `mask`."""
    if mask is None:
        return ops.ones_like(logits, dtype="bool")
    return ops.cast(mask, "bool")


def _descending_order(scores):
    """The positions of `scores` `(batch, steps)` from the highest score
    down, equal scores in index order on TensorFlow and JAX (their `top_k`
    keeps the lower index first; `keras.ops.argsort` is not stable on every
    backend). PyTorch's `topk` promises no order among equal scores, so
    there a tie may go to either position."""
    return ops.top_k(scores, ops.shape(scores)[-1], sorted=True)[1]


def _descending_ranks(scores):
    """Each position's rank in `_descending_order(scores)`."""
    return ops.argsort(_descending_order(scores), axis=-1)


def _check_annealing(final_temperature, anneal_steps):
    if final_temperature is not None and (not is_real(final_temperature) or final_temperature <= 0):
        raise ValueError(
            f"`final_temperature` must be None or a positive number. Received: final_temperature={final_temperature}"
        )
    if isinstance(anneal_steps, bool) or not isinstance(anneal_steps, int) or anneal_steps < 0:
        raise ValueError(f"`anneal_steps` must be an integer >= 0. Received: anneal_steps={anneal_steps}")
    if final_temperature is not None and anneal_steps == 0:
        raise ValueError(
            "`final_temperature` needs the steps to reach it: pass `anneal_steps` > 0. Received: anneal_steps=0"
        )
