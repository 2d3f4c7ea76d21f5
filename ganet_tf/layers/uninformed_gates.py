import keras
from keras import ops

from ganet_tf.layers.argument_checks import is_real
from ganet_tf.layers.masking import large_negative_number
from ganet_tf.layers.sparse_gather import keep_top_k

RULES = ("random", "strided")


@keras.saving.register_keras_serializable(package="ganet_tf")
class UninformedGates(keras.layers.Layer):
    """Gate logits that choose tokens without reading them: a control for
    learned gates.

    It takes the place of `AuxiliaryNetwork` (with `return_logits=True`)
    and has no weights: which tokens open depends only on the positions of
    the real tokens and, for `"random"`, on chance. A model that trains as
    well with these gates as with learned ones owes nothing to what its
    gates choose. The rules:

    - `"random"`: in every call, training or not, `max(1, round(density *
      T))` of each text's `T` real tokens drawn uniformly without
      replacement, afresh at each call (Random-LTD's choice, at test too);
    - `"strided"`: every `s`-th real token, from the first, with
      `s = max(1, round(1 / density))`, the same in every call.

    The chosen tokens get the logit `+logit`, the other real tokens
    `-logit`, padded positions a large negative value. With the default
    `logit=20`, a `GateSampler` relaxes them to gates within about 2e-9 of
    1 and 0 at temperature 1, and its `threshold` rule opens exactly the
    chosen tokens (the GA-Net builders' test rule for these gates).

    Args:
        rule: `"random"` or `"strided"`. Defaults to `"random"`.
        density: float in (0, 1], the share of real tokens to choose.
            Defaults to `0.2`.
        logit: float > 0, the magnitude of the logits. Defaults to `20.0`.
        seed: int or None, seed of the layer's
            `keras.random.SeedGenerator` (used by `"random"`).
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: float tensor `(batch, steps, features)`, the token
            embeddings; only their shape is read.
        mask: optional boolean tensor `(batch, steps)`, True at real
            tokens (padding may sit anywhere).
        training: unused; the rule is the same in training and at test.

    Returns:
        Float tensor `(batch, steps)` of gate logits.

    Example:

    >>> gates = UninformedGates(rule="strided", density=0.5)
    >>> logits = gates(np.zeros((1, 5, 8), "float32"))
    >>> (keras.ops.convert_to_numpy(logits) > 0).astype(int).tolist()
    [[1, 0, 1, 0, 1]]

    References:
        - [Yao et al., 2022](https://arxiv.org/abs/2211.11586), Random-LTD:
          Random and Layerwise Token Dropping Brings Efficient Training for
          Large-scale Transformers.
    """

    def __init__(self, rule="random", density=0.2, logit=20.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if rule not in RULES:
            raise ValueError(f"`rule` must be one of {RULES}. Received: rule={rule}")
        if not is_real(density) or not 0 < density <= 1:
            raise ValueError(f"`density` must be a number in (0, 1]. Received: density={density}")
        if not is_real(logit) or logit <= 0:
            raise ValueError(f"`logit` must be a positive number. Received: logit={logit}")
        self.rule = rule
        self.density = float(density)
        self.logit = float(logit)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.supports_masking = True
        self.built = True

    def call(self, inputs, mask=None, training=None):
        shape = ops.shape(inputs)[:2]
        real = ops.ones(shape, "bool") if mask is None else ops.cast(mask, "bool")
        if self.rule == "random":
            noise = keras.random.uniform(shape, dtype="float32", seed=self.seed_generator)
            chosen = keep_top_k(noise, real, self.density)
        else:
            stride = max(1, round(1.0 / self.density))
            index = ops.cumsum(ops.cast(real, "int32"), axis=1) - 1
            chosen = ops.logical_and(real, ops.equal(index % stride, 0))
        logits = ops.where(chosen, self.logit, -self.logit)
        logits = ops.where(real, logits, large_negative_number(self.compute_dtype))
        return ops.cast(logits, self.compute_dtype)

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1])

    def get_config(self):
        config = super().get_config()
        config.update({"rule": self.rule, "density": self.density, "logit": self.logit, "seed": self.seed})
        return config
