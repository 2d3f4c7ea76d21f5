import keras

from ganet_tf.layers import GateSparsity


@keras.saving.register_keras_serializable(package="ganet_tf")
class AccuracyDensityTradeoff(keras.metrics.Metric):
    """Accuracy minus a weight times the gate density: one score to maximise.

    `result() = accuracy - density_weight * density`, where `accuracy` is the
    sparse categorical accuracy of the batches seen and `density` the share
    of open gates on the same batches (the metric `density` of GA-Net's
    `GateSparsity` layer). A model compiled with it logs `tradeoff` and
    `val_tradeoff`, so that a tuner can maximise `val_tradeoff`: accuracy
    first, and fewer attended tokens at `density_weight` accuracy points per
    unit of density.

    Design: a compiled metric only sees `(y_true, y_pred)`, and GA-Net's
    `y_pred` are class probabilities; the gates are inside the model, where
    the `GateSparsity` layer already averages their density over exactly the
    batches that the compiled metrics see (Keras resets layer and compiled
    metrics together, every epoch and every evaluation). So the metric
    keeps its own accuracy state and reads that existing density tracker,
    which `bind(model)` attaches. This needs neither a second output for the
    gates nor a callback that patches the logs afterwards, and
    `val_tradeoff` equals `val_accuracy - density_weight * val_density`.
    The binding is a reference to the model's layer, not part of the
    metric's state or config: a deserialized instance is unbound, and
    `result()` raises until `bind` is called.

    Args:
        density_weight: float >= 0, accuracy points that one unit of density
            costs. 0 gives plain accuracy.
        name: metric name; the tuner's objective is `"val_" + name`.
        dtype: dtype of the result.

    Returns:
        A scalar: the accuracy minus `density_weight` times the density.

    Example:

    >>> model = ganet_tf.models.build_ganet(6, vocabulary_size=100)
    >>> tradeoff = AccuracyDensityTradeoff(density_weight=0.1)
    >>> model.compile(
    ...     optimizer="adam",
    ...     loss="sparse_categorical_crossentropy",
    ...     metrics=["accuracy", tradeoff],
    ... )
    >>> tradeoff.bind(model)
    <AccuracyDensityTradeoff name=tradeoff>
    >>> # model.fit(..., validation_data=...) now logs `val_tradeoff`.
    """

    def __init__(self, density_weight=0.1, name="tradeoff", dtype=None):
        super().__init__(name=name, dtype=dtype)
        if isinstance(density_weight, bool) or not isinstance(density_weight, (int, float)) or not density_weight >= 0:
            raise ValueError(
                f"`density_weight` must be a non-negative number. Received: density_weight={density_weight}"
            )
        self.density_weight = float(density_weight)
        self._accuracy = keras.metrics.SparseCategoricalAccuracy(name="accuracy", dtype=dtype)
        # A layer is not metric state: Keras does not track it here.
        self._gate_sparsity = None

    def bind(self, model):
        """Reads the gate density of `model`'s `GateSparsity` layer.

        Args:
            model: a GA-Net `keras.Model` with exactly one `GateSparsity`
                layer, e.g. from `ganet_tf.models.build_ganet`.

        Returns:
            The metric itself.
        """
        layers = [layer for layer in _all_layers(model) if isinstance(layer, GateSparsity)]
        if len(layers) != 1:
            raise ValueError(
                "`AccuracyDensityTradeoff` needs a model with exactly one "
                "`GateSparsity` layer (a GA-Net); "
                f"model {model.name!r} has {len(layers)}."
            )
        self._gate_sparsity = layers[0]
        return self

    def update_state(self, y_true, y_pred, sample_weight=None):
        self._accuracy.update_state(y_true, y_pred, sample_weight=sample_weight)

    def result(self):
        if self._gate_sparsity is None:
            raise ValueError(
                f"Metric {self.name!r} is not bound to a GA-Net: call `metric.bind(model)` after `model.compile(...)`."
            )
        density = self._gate_sparsity.density.result()
        return self._accuracy.result() - self.density_weight * density

    def get_config(self):
        return {
            "name": self.name,
            "dtype": self.dtype,
            "density_weight": self.density_weight,
        }


def _all_layers(model):
    for layer in model.layers:
        yield layer
        if hasattr(layer, "layers"):
            yield from _all_layers(layer)
