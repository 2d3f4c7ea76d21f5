import keras_tuner
import numpy as np
import tensorflow as tf

from ganet_tf.data import make_dataset
from ganet_tf.training.train import compile_model
from ganet_tf.tuning.search_space import SearchSpace

# Batch size of validation passes: it changes no result, only speed.
EVALUATION_BATCH_SIZE = 128
# Shuffle buffer for a dataset of unknown size (a known size is used whole).
DEFAULT_SHUFFLE_BUFFER = 10_000


class TextClassifierHyperModel(keras_tuner.HyperModel):
    """Base of the tuning HyperModels of `ganet_tf`'s text classifiers.

    `build(hp)` declares the optimisation hyperparameters `lr` and
    `batch_size`, asks the subclass for the network (`build_network`) and
    compiles it as `ganet_tf train` does: Adam at `lr`, sparse categorical
    cross-entropy, and the metric `accuracy` (plus `extra_metrics`).

    `fit(hp, model, x, y=None, validation_data=None, **kwargs)` batches the
    data by the trial's `batch_size` and calls `model.fit`, forwarding
    `**kwargs` (the tuner's `epochs`, `callbacks`, `verbose`). The data
    are token ids `(examples, steps)` and labels as NumPy arrays, or an
    unbatched `tf.data.Dataset` of `(token_ids, label)` pairs (a dataset
    already batched is unbatched first); the training data are reshuffled
    every epoch.

    Args:
        num_classes: int >= 2, the number of classes.
        embeddings: optional `(vocabulary_size, dim)` array of initial
            embeddings, e.g. from `ganet_tf.embeddings.embedding_matrix`.
        vocabulary_size: int, the vocabulary size without `embeddings`.
        space: a `SearchSpace` for this model; by default the paper's.
        hidden_dim: LSTM units each way of the backbone (not tuned).
        dropout: dropout rate (not tuned).
        seed: seed of the training shuffles (and of GA-Net's gates).
        buckets: optional number of length buckets for array data: batches
            of texts of similar length, padded to their longest (see
            `ganet_tf.data.make_dataset`; for long, varied texts).
        run_eagerly: compile the models to run eagerly, without tracing
            `tf.function`s: for debugging and smoke runs of a few batches.
        name: optional name of the HyperModel.
        tunable: whether the hyperparameters join the search space.

    Example:

    >>> import keras_tuner
    >>> import ganet_tf
    >>> class OneLayerHyperModel(TextClassifierHyperModel):
    ...     model_name = "bilstm"
    ...
    ...     def build_network(self, hp):
    ...         return ganet_tf.models.build_bilstm(
    ...             self.num_classes, num_layers=1, **self.network_arguments()
    ...         )
    >>> hypermodel = OneLayerHyperModel(num_classes=2, vocabulary_size=1000)
    >>> hp = keras_tuner.HyperParameters()
    >>> model = hypermodel.build(hp)
    >>> ids, labels = np.random.randint(2, 1000, size=(32, 12)), np.arange(32) % 2
    >>> history = hypermodel.fit(hp, model, ids, labels, epochs=1, verbose=0)
    >>> len(history.epoch)
    1
    """

    # The `SearchSpace` model whose hyperparameters the subclass tunes.
    model_name = None

    def __init__(
        self,
        num_classes,
        embeddings=None,
        vocabulary_size=None,
        space=None,
        hidden_dim=100,
        dropout=0.3,
        seed=0,
        buckets=None,
        run_eagerly=False,
        name=None,
        tunable=True,
    ):
        super().__init__(name=name, tunable=tunable)
        if not isinstance(num_classes, int) or num_classes < 2:
            raise ValueError(f"`num_classes` must be an integer >= 2. Received: {num_classes}")
        if embeddings is None and (not isinstance(vocabulary_size, int) or vocabulary_size < 2):
            raise ValueError(
                f"Pass `embeddings` or an integer `vocabulary_size` >= 2. Received: vocabulary_size={vocabulary_size}"
            )
        if not isinstance(hidden_dim, int) or hidden_dim < 1:
            raise ValueError(f"`hidden_dim` must be a positive integer. Received: {hidden_dim}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"`dropout` must be in [0, 1). Received: {dropout}")
        space = SearchSpace(self.model_name) if space is None else space
        if space.model != self.model_name:
            raise ValueError(f"`space` is the search space of {space.model!r}, not of {self.model_name!r}.")
        self.num_classes = num_classes
        self.embeddings = embeddings
        self.vocabulary_size = vocabulary_size
        self.space = space
        self.hidden_dim = hidden_dim
        self.dropout = dropout
        self.seed = seed
        self.buckets = buckets
        self.run_eagerly = run_eagerly

    def build_network(self, hp):
        """Returns the uncompiled `keras.Model` of this trial."""
        raise NotImplementedError

    def extra_metrics(self, model):
        """Metrics of `model` compiled beside `accuracy`; none by default."""
        return []

    def network_arguments(self):
        """Builder arguments shared by every model of `ganet_tf.models`."""
        return {
            "embeddings": self.embeddings,
            "vocabulary_size": None if self.embeddings is not None else self.vocabulary_size,
            "hidden_dim": self.hidden_dim,
            "dropout": self.dropout,
        }

    def build(self, hp):
        """Builds and compiles the model of the trial `hp`.

        Args:
            hp: a `keras_tuner.HyperParameters`; an empty one gives the
                space's defaults.

        Returns:
            A compiled `keras.Model`.
        """
        learning_rate = self.space.declare(hp, "lr")
        self.space.declare(hp, "batch_size")
        model = self.build_network(hp)
        return compile_model(model, learning_rate, metrics=self.extra_metrics(model), run_eagerly=self.run_eagerly)

    def fit(self, hp, model, x, y=None, validation_data=None, **kwargs):
        """Trains `model` on batches of the trial's `batch_size`.

        Args:
            hp: the trial's `keras_tuner.HyperParameters`.
            model: the model from `build(hp)`.
            x: token ids `(examples, steps)`, or an unbatched
                `tf.data.Dataset` of `(token_ids, label)`.
            y: labels `(examples,)` with array `x`; None with a dataset.
            validation_data: `(token_ids, labels)` or a dataset, or None.
            **kwargs: passed on to `model.fit` (`epochs`, `callbacks`, ...),
                except `batch_size`, which is the trial's.

        Returns:
            The `keras.callbacks.History` of `model.fit`.
        """
        if "batch_size" in kwargs:
            raise ValueError(
                "`batch_size` is a hyperparameter of the trial: do not pass "
                f"it to `fit`. Received: batch_size={kwargs['batch_size']}"
            )
        kwargs.pop("shuffle", None)  # the pipeline reshuffles every epoch
        batch_size = self.space.declare(hp, "batch_size")
        train = _batched(x, y, batch_size, True, self.seed, self.buckets)
        if validation_data is not None:
            if isinstance(validation_data, tf.data.Dataset):
                validation_data = (validation_data, None)
            validation_data = _batched(*validation_data, EVALUATION_BATCH_SIZE, buckets=self.buckets)
        return model.fit(train, validation_data=validation_data, shuffle=False, **kwargs)


def _batched(x, y, batch_size, shuffle=False, seed=None, buckets=None):
    """A batched `tf.data.Dataset` of `(token_ids, label)` from arrays or a dataset."""
    if not isinstance(x, tf.data.Dataset):
        if y is None:
            raise ValueError("Pass labels `y` with token ids `x`.")
        return make_dataset(np.asarray(x), np.asarray(y), batch_size, shuffle, seed, buckets)
    if y is not None:
        raise ValueError("A dataset `x` holds its labels: do not pass `y`.")
    if x.element_spec[0].shape.rank != 1:
        x = x.unbatch()
    if shuffle:
        size = int(x.cardinality())
        buffer = size if size > 0 else DEFAULT_SHUFFLE_BUFFER
        x = x.shuffle(buffer, seed=seed, reshuffle_each_iteration=True)
    return x.batch(batch_size).prefetch(tf.data.AUTOTUNE)
