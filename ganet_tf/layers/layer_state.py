import keras


def add_state_scalar(layer, name, aggregation, value=0.0):
    """A non-trainable float32 scalar weight of `layer` named `name`,
    starting at `value`: state a layer updates in its `call` (a step
    count, a Lagrange multiplier, a metric's sums), not a parameter.

    `aggregation` says how the replicas of a distribution strategy combine
    their updates: `"mean"` (each replica steps on its own batch) or
    `"sum"` (each adds its share)."""
    return layer.add_weight(
        shape=(),
        initializer=keras.initializers.Constant(value),
        trainable=False,
        autocast=False,
        dtype="float32",
        aggregation=aggregation,
        name=name,
    )
