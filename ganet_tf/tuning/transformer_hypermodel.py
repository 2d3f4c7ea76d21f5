from ganet_tf.models import build_transformer
from ganet_tf.training.config import TRANSFORMER_HEADS
from ganet_tf.tuning.text_classifier_hypermodel import TextClassifierHyperModel


def check_encoder_arguments(arguments):
    """Refuses the constructor's `hidden_dim` and `dropout`: the trial's set them.

    Args:
        arguments: the keyword arguments of a Transformer HyperModel.

    Raises:
        ValueError: where `arguments` holds `hidden_dim` or `dropout`.
    """
    given = [f"{name}={arguments[name]}" for name in ("hidden_dim", "dropout") if name in arguments]
    if given:
        raise ValueError(
            "The width and dropout of a Transformer model are hyperparameters of the trial: set "
            f"`hidden` and `dropout` in `space` instead. Received: {', '.join(given)}"
        )


def encoder_arguments(hypermodel, hp):
    """The builder arguments of a Transformer model for the trial `hp`.

    `hypermodel.network_arguments()` with the trial's encoder: `num_layers`
    blocks of width `hidden` and `dropout`, and `ganet_tf train`'s heads
    (`TRANSFORMER_HEADS`).

    Args:
        hypermodel: a `TextClassifierHyperModel` whose space has
            `num_layers`, `hidden` and `dropout`.
        hp: the trial's `keras_tuner.HyperParameters`.

    Returns:
        A dict of keyword arguments of `build_transformer` and
        `build_ganet_transformer`.
    """
    return {
        **hypermodel.network_arguments(),
        "num_layers": hypermodel.space.declare(hp, "num_layers"),
        "hidden_dim": hypermodel.space.declare(hp, "hidden"),
        "dropout": hypermodel.space.declare(hp, "dropout"),
        "num_heads": TRANSFORMER_HEADS,
    }


class TransformerHyperModel(TextClassifierHyperModel):
    """The search space of the dense Transformer, as a `keras_tuner.HyperModel`.

    Tunes the learning rate `lr`, the `batch_size` and the encoder: its
    blocks `num_layers`, its width `hidden` (a multiple of the 4 heads of
    `ganet_tf train`) and the `dropout`, over `space` (see `SearchSpace`);
    an empty `HyperParameters()` gives `ganet_tf train --model
    transformer`'s setting: lr 1e-3, batch 32, 2 blocks of width 100,
    dropout 0.3. `build` returns a compiled
    `ganet_tf.models.build_transformer` model; `fit` batches the data by the
    trial's batch size (see `TextClassifierHyperModel`).

    Args:
        num_classes: int >= 2, the number of classes.
        **kwargs: the other arguments of `TextClassifierHyperModel`
            (`embeddings`, `vocabulary_size`, `space`, by default
            `SearchSpace("transformer")`, `seed`, `buckets`,
            `run_eagerly`, `name`, `tunable`), but not `hidden_dim` and
            `dropout`: the trial's `hidden` and `dropout` set them.

    Example:

    >>> import keras_tuner
    >>> hypermodel = TransformerHyperModel(num_classes=6, vocabulary_size=1000)
    >>> tuner = keras_tuner.RandomSearch(
    ...     hypermodel, objective="val_accuracy", max_trials=20
    ... )
    >>> # Not run by the tests: 20 trials of 10 epochs on your data.
    >>> tuner.search(train_ids, train_labels, epochs=10,  # doctest: +SKIP
    ...              validation_data=(validation_ids, validation_labels))
    """

    model_name = "transformer"

    def __init__(self, num_classes, **kwargs):
        check_encoder_arguments(kwargs)
        super().__init__(num_classes, **kwargs)

    def build_network(self, hp):
        return build_transformer(self.num_classes, **encoder_arguments(self, hp))
