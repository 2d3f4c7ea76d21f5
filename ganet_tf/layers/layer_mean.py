import keras
from keras import ops

from ganet_tf.keras_compat import scoped_value
from ganet_tf.layers.layer_state import add_state_scalar

# The names of a `LayerMean`'s sums among its layer's weights end so.
SUM_SUFFIXES = ("_total", "_count")


class _Sums:
    """The two weights of a `LayerMean`, held where a metric's tracker does
    not collect them as the metric's own variables."""

    def __init__(self, total, count):
        self.total = total
        self.count = count


class LayerMean(keras.metrics.Metric):
    """A weighted mean that a layer updates in its `call`, true on every backend.

    A `keras.metrics.Mean` whose running sums are not the metric's own
    variables but two non-trainable float32 weights of the layer that owns
    it, `{name}_total` and `{name}_count`, the way `BatchNormalization`
    keeps its moving statistics. A layer's `call` runs, in JAX's compiled
    `fit`, `evaluate` and `predict` steps, in a stateless scope that carries
    the layer's weights from step to step but not its metrics' variables
    (keras-team/keras#21639): a `keras.metrics.Mean` updated there keeps
    nothing. The sums of a `LayerMean` are carried like any other state of
    the layer, so `result()` after a `fit` epoch or an `evaluate` is the
    mean over every batch on JAX, TensorFlow and PyTorch alike.

    The metric is tracked by the layer (`layer.metrics`), so the model's
    logs show it under `name` (`val_{name}` in validation), and
    `model.reset_metrics()`, which `fit` and `evaluate` call, sets both sums
    to zero. Within a JAX compiled step (the per-batch logs of `fit` and
    `evaluate`) the sums of the step are not within reach of the metric:
    `result()` there is NaN, and the epoch's logs, read after the step,
    hold the mean. The sums are state, not weights of the model: the layer
    leaves them out of what it saves (`saved_variables`), so a `.keras`
    file is the same with and without them.

    Args:
        layer: the `keras.layers.Layer` that owns the metric (as an
            attribute, so that it tracks it) and calls `update_state` from
            its `call`; the sums are added to its weights, and its
            `save_own_variables`/`load_own_variables` leave them out with
            `save_variables`/`load_variables`.
        name: string, the metric's name in the logs.

    Example:

    >>> layer = keras.layers.Layer()
    >>> layer.density = LayerMean(layer, name="density")  # tracked by the layer
    >>> layer.density.update_state(np.array([0.5, 1.0]), sample_weight=np.array([1.0, 0.0]))
    >>> float(layer.density.result())
    0.5
    """

    def __init__(self, layer, name):
        super().__init__(name=name, dtype="float32")
        # Under a distribution strategy the replicas' additions are summed.
        sums = (add_state_scalar(layer, f"{name}{suffix}", aggregation="sum") for suffix in SUM_SUFFIXES)
        self._sums = _Sums(*sums)

    def update_state(self, values, sample_weight=None):
        """Adds the `values` (any shape), weighted by `sample_weight`
        (broadcast to `values`; default 1), to the sums."""
        values = ops.cast(values, "float32")
        if sample_weight is None:
            weights = ops.ones_like(values)
        else:
            weights = ops.broadcast_to(ops.cast(sample_weight, "float32"), ops.shape(values))
        self._sums.total.assign_add(ops.sum(values * weights))
        self._sums.count.assign_add(ops.sum(weights))

    def result(self):
        total, count = scoped_value(self._sums.total), scoped_value(self._sums.count)
        if total is None or count is None:
            return ops.convert_to_tensor(float("nan"), dtype="float32")
        return ops.divide_no_nan(total, count)

    def reset_state(self):
        self._sums.total.assign(0.0)
        self._sums.count.assign(0.0)


def saved_variables(layer):
    """`layer`'s own variables, in the order Keras saves them, without the
    sums of its `LayerMean` metrics."""
    sums = set()
    for metric in layer.metrics:
        if isinstance(metric, LayerMean):
            sums.update((id(metric._sums.total), id(metric._sums.count)))
    # Keras' own listing, in its order: the base class's `save_own_variables`.
    own = {}
    keras.layers.Layer.save_own_variables(layer, own)
    return [variable for variable in own.values() if id(variable) not in sums]


def save_variables(layer, store):
    """`layer.save_own_variables(store)` without its metrics' sums."""
    for index, variable in enumerate(saved_variables(layer)):
        store[f"{index}"] = variable


def load_variables(layer, store):
    """`layer.load_own_variables(store)` without its metrics' sums."""
    variables = saved_variables(layer)
    if len(store.keys()) != len(variables):
        raise ValueError(
            f"Layer '{layer.name}' expected {len(variables)} saved variables, but the file holds "
            f"{len(store.keys())}: save the model again with this version of ganet_tf."
        )
    for index, variable in enumerate(variables):
        variable.assign(store[f"{index}"])
