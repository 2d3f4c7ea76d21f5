"""The one data preparation of text classification, for `train` and `tuning`.

Texts -> vocabulary -> embedding matrix -> token ids, done once here, so that
`python -m ganet_tf train` and `python -m ganet_tf tune` give the same
vocabulary, sequence length, embeddings and token ids for the same data and
flags.
"""

import dataclasses

from ganet_tf.data import build_vectorizer
from ganet_tf.data import load_dataset
from ganet_tf.data import load_files
from ganet_tf.data.vectorizer import vectorize
from ganet_tf.embeddings import embedding_matrix
from ganet_tf.embeddings import load_glove
from ganet_tf.policy.interruption import check_stop_signal

SPLITS = ("train", "validation", "test")


def load_splits(config):
    """The `TextSplits` that `config` names (a dataset or the user's files)."""
    if config.train_file:
        splits = load_files(
            config.train_file,
            config.test_file,
            config.format,
            config.validation_fraction,
            config.seed,
            encoding=config.encoding,
            text_column=config.text_column,
            label_column=config.label_column,
        )
    else:
        splits = load_dataset(config.dataset, config.data_dir, config.validation_fraction, config.seed)
    if config.limit:
        splits = splits.subset(config.limit)
    return splits


@dataclasses.dataclass(frozen=True)
class Prepared:
    """A text classification dataset made ready for a model by `prepare`.

    Attributes:
        splits: the `TextSplits` (texts, labels and class names of train,
            validation and test).
        vectorizer: the `TextVectorization` layer adapted on the training
            texts (plus the most frequent GloVe words), padding to
            `sequence_length`.
        embeddings: float32 `(len(vocabulary) + 2, dimension)` initial
            embeddings (`ganet_tf.embeddings.embedding_matrix`), or None
            for byte tokens (learned from scratch).
        glove_coverage: the share of `vocabulary` that GloVe knows.
        ids: `{"train", "validation", "test"}` -> int32 token ids
            `(examples, sequence_length)`.
    """

    splits: object
    vectorizer: object
    embeddings: object
    glove_coverage: float
    ids: dict

    @property
    def vocabulary(self):
        """The tokens of ids 2, 3, ... (0 is padding, 1 out of vocabulary)."""
        return self.vectorizer.get_vocabulary(include_special_tokens=False)

    @property
    def sequence_length(self):
        return int(self.ids["train"].shape[1])

    @property
    def class_names(self):
        return self.splits.class_names

    @property
    def num_classes(self):
        return self.splits.num_classes


def _glove_vocabulary(config, glove):
    """The `config.glove_vocabulary` most frequent GloVe words (`glove`: the
    packaged vectors, already loaded, or None for a text file)."""
    if not config.glove_vocabulary:
        return ()
    top = config.glove_vocabulary
    return glove[0][:top] if glove else load_glove(config.glove, top=top)[0]


def prepare(config):
    """Loads `config`'s data and turns it into token ids and embeddings.

    The vocabulary is adapted on the training texts only (no validation or
    test text), then extended by the `config.glove_vocabulary` most frequent
    GloVe words, so that words unseen in training but known to GloVe keep an
    id. Texts are padded or cut to `config.sequence_length`, by default the
    `config.length_percentile` of the training lengths.

    Args:
        config: a `TrainConfig`; `prepare` reads its data flags: `dataset`,
            `data_dir` or the user's files (`train_file`, `test_file`,
            `format`, `encoding`, `text_column`, `label_column`),
            `validation_fraction`, `seed`, `limit`, `glove`,
            `glove_vocabulary`, `sequence_length`, `length_percentile` and
            `tokenizer` (`"bytes"`: every byte a token, no embeddings).

    Returns:
        A `Prepared`.
    """
    splits = load_splits(config)
    if config.tokenizer == "bytes":
        # Every byte a token: no vocabulary to adapt, no GloVe; the model
        # learns its byte embeddings from scratch.
        vectorizer = build_vectorizer(
            splits.train_texts, config.sequence_length, config.length_percentile, tokenizer="bytes"
        )
        embeddings, coverage = None, 0.0
    else:
        vectorizer, embeddings, coverage = _words_and_embeddings(config, splits)
    ids = {split: vectorize(vectorizer, getattr(splits, f"{split}_texts")) for split in SPLITS}
    return Prepared(splits=splits, vectorizer=vectorizer, embeddings=embeddings, glove_coverage=coverage, ids=ids)


def _words_and_embeddings(config, splits):
    """The word vectorizer of the training texts and its GloVe embeddings: `(vectorizer, embeddings, coverage)`."""
    # The packaged vectors are memory-mapped: one load serves both uses. A
    # text file is read twice, the second time for the vocabulary's words
    # only, so that a large file never sits in memory whole.
    glove = load_glove() if config.glove is None else None
    vectorizer = build_vectorizer(
        splits.train_texts,
        config.sequence_length,
        config.length_percentile,
        extra_vocabulary=_glove_vocabulary(config, glove),
    )
    vocabulary = vectorizer.get_vocabulary(include_special_tokens=False)
    glove = glove or load_glove(config.glove, vocabulary)
    embeddings, coverage = embedding_matrix(vocabulary, glove, config.seed)
    return vectorizer, embeddings, coverage


# The `TrainConfig` fields that decide what `prepare` makes (recorded in a
# prepared file; the rest of a config trains).
PREPARATION_FIELDS = (
    "dataset",
    "data_dir",
    "train_file",
    "test_file",
    "format",
    "encoding",
    "text_column",
    "label_column",
    "validation_fraction",
    "seed",
    "limit",
    "glove",
    "glove_vocabulary",
    "sequence_length",
    "length_percentile",
    "tokenizer",
)


def write_prepared(config, path, embedding_dtype="float16"):
    """Runs `prepare(config)` and writes its result to the `.npz` file `path`
    (`ganet_tf.data.prepared_dataset`), which every Keras backend reads
    with NumPy alone (`load_prepared`).

    Returns:
        The `Prepared`.
    """
    from ganet_tf.data.prepared_dataset import save_prepared

    data = prepare(config)
    check_stop_signal()  # Ctrl-C or SIGTERM while preparing: nothing written
    splits = data.splits
    metadata = {
        "dataset": splits.name,
        "glove_coverage": round(float(data.glove_coverage), 4),
        "config": {field: getattr(config, field) for field in PREPARATION_FIELDS},
    }
    labels = {split: getattr(splits, f"{split}_labels") for split in SPLITS}
    save_prepared(
        path, data.ids, labels, splits.class_names, data.vocabulary, data.embeddings, metadata, embedding_dtype
    )
    return data
