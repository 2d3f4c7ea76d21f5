from ganet_tf.metrics import AccuracyDensityTradeoff
from ganet_tf.models import build_ganet

from .text_classifier_hypermodel import TextClassifierHyperModel


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
        embeddings: optional `(vocabulary_size, dim)` initial embeddings.
        vocabulary_size: int, the vocabulary size without `embeddings`.
        space: a `SearchSpace("ganet")`; by default the paper's grids.
        hidden_dim: LSTM units each way of the backbone (not tuned).
        dropout: dropout rate (not tuned).
        density_weight: optional float >= 0; compiles the metric
            `tradeoff`, accuracy minus this weight times the density.
        seed: seed of the gate sampler and of the training shuffles.
        buckets: optional number of length buckets of the batches.
        run_eagerly: run the models eagerly (debugging, smoke runs).
        name: optional name of the HyperModel.
        tunable: whether the hyperparameters join the search space.

    Example:

    >>> hypermodel = GANetHyperModel(num_classes=6, vocabulary_size=1000)
    >>> model = hypermodel.build(keras_tuner.HyperParameters())
    >>> tuner = keras_tuner.RandomSearch(
    ...     hypermodel, objective="val_accuracy", max_trials=20
    ... )
    >>> tuner.search(train_ids, train_labels, epochs=10,
    ...              validation_data=(validation_ids, validation_labels))
    """

    model_name = "ganet"

    def __init__(
        self,
        num_classes,
        embeddings=None,
        vocabulary_size=None,
        space=None,
        hidden_dim=100,
        dropout=0.3,
        density_weight=None,
        seed=0,
        buckets=None,
        run_eagerly=False,
        name=None,
        tunable=True,
    ):
        super().__init__(
            num_classes,
            embeddings=embeddings,
            vocabulary_size=vocabulary_size,
            space=space,
            hidden_dim=hidden_dim,
            dropout=dropout,
            seed=seed,
            buckets=buckets,
            run_eagerly=run_eagerly,
            name=name,
            tunable=tunable,
        )
        if density_weight is not None:
            # Fails early on a bad weight, before any trial runs.
            AccuracyDensityTradeoff(density_weight)
        self.density_weight = density_weight

    def build_network(self, hp):
        return build_ganet(
            self.num_classes,
            auxiliary=self.space.declare(hp, "aux"),
            auxiliary_hidden_dim=self.space.declare(hp, "aux_hidden"),
            temperature=self.space.declare(hp, "tau"),
            penalty=self.space.declare(hp, "lam"),
            target_density=self.space.declare(hp, "target_density") or None,
            seed=self.seed,
            **self.network_arguments(),
        )

    def extra_metrics(self, model):
        if self.density_weight is None:
            return []
        return [AccuracyDensityTradeoff(self.density_weight).bind(model)]
