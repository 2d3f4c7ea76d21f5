from ganet_tf.models import build_model
from ganet_tf.tuning.text_classifier_hypermodel import TextClassifierHyperModel

BASELINES = ("bilstm", "local", "soft", "sparsemax", "entmax")


class BaselineHyperModel(TextClassifierHyperModel):
    """The search space of a baseline of the paper, as a `keras_tuner.HyperModel`.

    The baselines (`"bilstm"`: the last BiLSTM state; `"local"`: Luong
    local attention; `"soft"`: soft attention over every token;
    `"sparsemax"`, `"entmax"`: attention with exact zeros, the gates'
    peers without an auxiliary network) have no gates: they tune the learning rate `lr` and the `batch_size` over the
    paper's grids (see `SearchSpace`); an empty `HyperParameters()` gives
    lr 1e-3 and batch 32. `build` returns a compiled model of
    `ganet_tf.models`; `fit` batches the data by the trial's batch size
    (see `TextClassifierHyperModel`).

    Args:
        model: `"bilstm"`, `"local"`, `"soft"`, `"sparsemax"` or
            `"entmax"`.
        num_classes: int >= 2, the number of classes.
        window: half-width D of the local attention window (`"local"`
            only; the paper uses 4 on TREC, 8 on SST); by default the
            builder's.
        **kwargs: the other arguments of `TextClassifierHyperModel`
            (`embeddings`, `vocabulary_size`, `space`, by default
            `SearchSpace(model)`, `hidden_dim`, `dropout`, `seed`,
            `buckets`, `run_eagerly`, `name`, `tunable`).

    Example:

    >>> import keras_tuner
    >>> hypermodel = BaselineHyperModel("soft", num_classes=6, vocabulary_size=1000)
    >>> tuner = keras_tuner.BayesianOptimization(
    ...     hypermodel, objective="val_loss", max_trials=20
    ... )
    >>> # Not run by the tests: 20 trials of 10 epochs on your data.
    >>> tuner.search(train_ids, train_labels, epochs=10,  # doctest: +SKIP
    ...              validation_data=(validation_ids, validation_labels))
    """

    def __init__(self, model, num_classes, window=None, **kwargs):
        if model not in BASELINES:
            raise ValueError(f"Unknown baseline. Expected one of {list(BASELINES)}. Received: model={model}")
        if window is not None and model != "local":
            raise ValueError(
                f"`window` belongs to the local attention baseline only. Received: model={model}, window={window}"
            )
        self.model_name = model
        super().__init__(num_classes, **kwargs)
        self.window = window

    def build_network(self, hp):
        arguments = self.network_arguments()
        if self.window is not None:
            arguments["window"] = self.window
        return build_model(self.model_name, self.num_classes, **arguments)
