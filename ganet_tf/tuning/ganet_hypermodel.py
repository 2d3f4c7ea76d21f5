from ganet_tf.metrics import AccuracyDensityTradeoff
from ganet_tf.models import build_ganet
from ganet_tf.models.gate_layers import target_density_argument
from ganet_tf.tuning.text_classifier_hypermodel import TextClassifierHyperModel


class GANetHyperModel(TextClassifierHyperModel):
    """The search space of GA-Net, as a `keras_tuner.HyperModel`.

    Tunes the learning rate `lr`, the `batch_size`, the gate temperature
    `tau`, the L1 weight `lam` and the auxiliary network (`aux`, its width
    `aux_hidden`) over `space`, by default the paper's grids (see
    `SearchSpace`); an empty `HyperParameters()` gives lr 1e-3, batch 32,
    tau 0.5, lambda 1e-3 and a BiLSTM auxiliary network of width 20.
    `build` returns a compiled `ganet_tf.models.build_ganet` model; `fit`
    batches the data by the trial's batch size (see
    `TextClassifierHyperModel`). The model logs `density`; with
    `density_weight` it also logs `tradeoff` (`AccuracyDensityTradeoff`),
    the objective `val_tradeoff`.

    Args:
        num_classes: int >= 2, the number of classes.
        density_weight: optional float >= 0; compiles the metric
            `tradeoff`, accuracy minus this weight times the density.
        **kwargs: the other arguments of `TextClassifierHyperModel`
            (`embeddings`, `vocabulary_size`, `space`, by default
            `SearchSpace("ganet")`, `hidden_dim`, `dropout`, `seed`, which
            also seeds the gate sampler, `buckets`, `run_eagerly`, `name`,
            `tunable`).

    Example:

    >>> import keras_tuner
    >>> hypermodel = GANetHyperModel(num_classes=6, vocabulary_size=1000)
    >>> model = hypermodel.build(keras_tuner.HyperParameters())
    >>> tuner = keras_tuner.RandomSearch(
    ...     hypermodel, objective="val_accuracy", max_trials=20
    ... )
    >>> # Not run by the tests: 20 trials of 10 epochs on your data.
    >>> tuner.search(train_ids, train_labels, epochs=10,  # doctest: +SKIP
    ...              validation_data=(validation_ids, validation_labels))
    """

    model_name = "ganet"

    def __init__(self, num_classes, density_weight=None, **kwargs):
        super().__init__(num_classes, **kwargs)
        if density_weight is not None:
            # Fails early on a bad weight, before any trial runs.
            AccuracyDensityTradeoff(density_weight)
        self.density_weight = density_weight

    def build_network(self, hp):
        return build_ganet(self.num_classes, **self.gate_arguments(hp), **self.network_arguments())

    def gate_arguments(self, hp):
        """The gate arguments of the builder for the trial `hp`, as `ganet_tf train` passes them."""
        return {
            "auxiliary": self.space.declare(hp, "aux"),
            "auxiliary_hidden_dim": self.space.declare(hp, "aux_hidden"),
            "temperature": self.space.declare(hp, "tau"),
            "penalty": self.space.declare(hp, "lam"),
            "target_density": target_density_argument(self.space.declare(hp, "target_density")),
            "seed": self.seed,
        }

    def extra_metrics(self, model):
        if self.density_weight is None:
            return []
        return [AccuracyDensityTradeoff(self.density_weight).bind(model)]
