"""A prepared text classification dataset in one `.npz` that NumPy alone reads.

`python -m ganet_tf prepare` (TensorFlow: `tf.data`, `TextVectorization`,
GloVe) runs the one preparation of `train` (`ganet_tf.training.prepare`)
once and writes its result with `save_prepared`; `load_prepared` reads it
back with NumPy only, on every Keras backend, TensorFlow installed or not.

The file (`np.savez_compressed`, read with `allow_pickle=False`) holds:

- `metadata`: UTF-8 JSON as `uint8`: `format` (`FORMAT`), `version`
  (`VERSION`), `dataset`, `sequence_length`, `class_names`, `splits`,
  `glove_coverage` and `config`, the preparation flags.
- `vocabulary`: UTF-8 JSON as `uint8`, the tokens of ids 2, 3, ... (0 is
  padding, 1 out of vocabulary).
- `embeddings`: `(vocabulary size, dimension)` float16 or float32.
- per split (`train`, `validation`, `test`): `SPLIT_ids`, the token ids of
  every row without their padding, one after the other, in the smallest
  unsigned integer type that holds the vocabulary (`uint16` up to 65,536
  ids); above 65,536 ids (up to 2**24), `SPLIT_ids` holds their low 16 bits
  and `SPLIT_ids_high` (`uint8`) the next 8: 3 bytes an id, in two planes
  that compress better than `uint32` (IMDB: 18% smaller); `SPLIT_lengths`, each row's length (row `i` is
  `ids[offsets[i]:offsets[i + 1]]`, `offsets` the cumulative sum of the
  lengths from 0); and `SPLIT_labels`.
"""

import dataclasses
import json
import os
import tempfile
import zipfile

import numpy as np

from ganet_tf.errors import GANetInputError

FORMAT = "ganet_tf.prepared_dataset"
VERSION = 1
SPLITS = ("train", "validation", "test")
EMBEDDING_DTYPES = ("float16", "float32")
PREPARE_COMMAND = "python -m ganet_tf prepare --dataset NAME --out FILE.npz"


@dataclasses.dataclass(frozen=True)
class PreparedArrays:
    """A prepared dataset as NumPy arrays (`load_prepared`).

    Attributes:
        ids: `{"train", "validation", "test"}` -> int32 token ids
            `(examples, sequence_length)`, right-padded with 0: the ids
            `python -m ganet_tf train` trains and tests on.
        labels: the same splits -> int32 labels `(examples,)`.
        class_names: label `i` means `class_names[i]`.
        vocabulary: the tokens of ids 2, 3, ... (0 padding, 1 unknown).
        embeddings: `(len(vocabulary) + 2, dimension)` initial embeddings,
            float16 or float32 as written.
        sequence_length: the padded length.
        dataset: the dataset's name (e.g. `"trec"`).
        glove_coverage: the share of `vocabulary` that GloVe knows.
        config: the preparation flags (a dict of `TrainConfig` fields).
        version: the file format's version.
    """

    ids: dict
    labels: dict
    class_names: list
    vocabulary: list
    embeddings: np.ndarray
    sequence_length: int
    dataset: str
    glove_coverage: float
    config: dict
    version: int

    @property
    def num_classes(self):
        return len(self.class_names)

    @property
    def vocabulary_size(self):
        """Ids of the embedding table: the vocabulary, padding and unknown."""
        return len(self.vocabulary) + 2


def _json_bytes(value):
    return np.frombuffer(json.dumps(value, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)


def _ragged(ids, vocabulary_size):
    """`{"ids": flat ids, "lengths": row lengths}` of right-padded `ids`, each
    in its narrowest type (plus `"ids_high"` above 65,536 ids)."""
    ids = np.asarray(ids)
    nonzero = ids != 0
    # A row's length ends at its last non-padding id (padding is on the right).
    lengths = np.where(nonzero.any(axis=1), ids.shape[1] - np.argmax(nonzero[:, ::-1], axis=1), 0)
    keep = np.arange(ids.shape[1])[None, :] < lengths[:, None]
    flat = ids[keep]
    arrays = {"lengths": lengths.astype(np.min_scalar_type(ids.shape[1]))}
    if vocabulary_size <= 2**16:
        return {**arrays, "ids": flat.astype(np.min_scalar_type(max(vocabulary_size - 1, 0)))}
    if vocabulary_size > 2**24:
        raise GANetInputError(f"A vocabulary of {vocabulary_size} ids is more than a prepared file holds (2**24).")
    return {**arrays, "ids": (flat & 0xFFFF).astype(np.uint16), "ids_high": (flat >> 16).astype(np.uint8)}


def save_prepared(path, ids, labels, class_names, vocabulary, embeddings, metadata, embedding_dtype="float16"):
    """Writes a prepared dataset to the `.npz` file `path` (all or nothing).

    Args:
        path: the file to write, ending in `.npz`; an earlier one is replaced.
        ids: `{split: int token ids (examples, sequence_length)}`, right-padded
            with 0, for the splits of `SPLITS`.
        labels: `{split: int labels (examples,)}`.
        class_names: the names of labels 0, 1, ...
        vocabulary: the tokens of ids 2, 3, ...
        embeddings: `(len(vocabulary) + 2, dimension)` float array.
        metadata: a JSON-ready dict with at least `dataset`, `glove_coverage`
            and `config`.
        embedding_dtype: `"float16"` (half the size; GloVe's values keep
            about 3 significant digits) or `"float32"`.

    Returns:
        `path`.
    """
    if embedding_dtype not in EMBEDDING_DTYPES:
        raise GANetInputError(f"Unknown embedding dtype {embedding_dtype!r}: choose one of {list(EMBEDDING_DTYPES)}.")
    vocabulary_size = len(vocabulary) + 2
    sequence_length = int(np.asarray(ids["train"]).shape[1])
    arrays = {
        "metadata": _json_bytes(
            {
                **metadata,
                "format": FORMAT,
                "version": VERSION,
                "sequence_length": sequence_length,
                "class_names": list(class_names),
                "splits": list(SPLITS),
            }
        ),
        "vocabulary": _json_bytes(list(vocabulary)),
        "embeddings": np.asarray(embeddings).astype(embedding_dtype),
    }
    for split in SPLITS:
        arrays.update({f"{split}_{name}": array for name, array in _ragged(ids[split], vocabulary_size).items()})
        arrays[f"{split}_labels"] = np.asarray(labels[split]).astype(np.min_scalar_type(max(len(class_names) - 1, 0)))
    folder = os.path.dirname(os.path.abspath(path))
    handle, staging = tempfile.mkstemp(prefix=".prepared-", suffix=".npz", dir=folder)
    try:
        with os.fdopen(handle, "wb") as file:
            np.savez_compressed(file, **arrays)
        # mkstemp makes the file private (0600); a written file gets the
        # permissions the user's umask gives any new file.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staging, 0o666 & ~umask)
        os.replace(staging, path)
    finally:
        if os.path.exists(staging):
            os.remove(staging)
    return path


def _read_metadata(path, archive):
    """The checked metadata of the open `archive` read from `path`."""
    not_prepared = f"{path} is not a prepared dataset: write one with {PREPARE_COMMAND}."
    if "metadata" not in archive.files:
        raise GANetInputError(not_prepared)
    try:
        metadata = json.loads(archive["metadata"].tobytes().decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise GANetInputError(not_prepared) from None
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        raise GANetInputError(not_prepared)
    if metadata.get("version") != VERSION:
        raise GANetInputError(
            f"{path} is a prepared dataset of version {metadata.get('version')!r}, but this ganet_tf reads "
            f"version {VERSION}: write it again with {PREPARE_COMMAND}."
        )
    return metadata


def _damaged(path, problem):
    """The error of a prepared file at `path` whose arrays break its own metadata."""
    return GANetInputError(f"{path} is a damaged prepared dataset ({problem}): write it again with {PREPARE_COMMAND}.")


def _integers(path, archive, key):
    """The 1-D integer array `key` of `archive`, or the error naming it."""
    values = archive[key]
    if values.ndim != 1 or not np.issubdtype(values.dtype, np.integer):
        raise _damaged(path, f"{key} is {values.dtype} of shape {values.shape}, not a 1-D array of integers")
    return values


def _first_outside(values, low, high):
    """The index of the first of `values` outside `[low, high)`, or None."""
    if not values.size or (values.min() >= low and values.max() < high):
        return None
    return int(np.flatnonzero((values < low) | (values >= high))[0])


def _token_ids(path, archive, split):
    """The ids of `split`'s rows one after the other, low and high planes joined."""
    flat = _integers(path, archive, f"{split}_ids")
    if f"{split}_ids_high" not in archive.files:
        return flat
    high = _integers(path, archive, f"{split}_ids_high")
    # As written (16 and 8 bits) an id fits int32; wider planes need int64.
    wide = np.int32 if flat.dtype.itemsize <= 2 and high.dtype.itemsize == 1 else np.int64
    return flat.astype(wide) | (high.astype(wide) << 16)


def _read_split(path, archive, split, sequence_length, vocabulary_size, num_classes):
    """`(ids, labels)` of `split`: right-padded int32 ids `(rows,
    sequence_length)` and int32 labels, checked against the file's own
    sequence length, vocabulary size and number of classes."""
    lengths = _integers(path, archive, f"{split}_lengths")
    labels = _integers(path, archive, f"{split}_labels")
    flat = _token_ids(path, archive, split)
    row = _first_outside(lengths, 0, sequence_length + 1)
    if row is not None:
        raise _damaged(
            path, f"{split} row {row} has length {lengths[row]}, outside 0 to the sequence length {sequence_length}"
        )
    if len(labels) != len(lengths):
        raise _damaged(path, f"{split} has {len(lengths)} rows of ids but {len(labels)} labels")
    total = int(lengths.sum(dtype=np.int64))
    if total != len(flat):
        raise _damaged(path, f"the lengths of {split}'s rows add up to {total} token ids, but it holds {len(flat)}")
    index = _first_outside(flat, 0, vocabulary_size)
    if index is not None:
        row = int(np.searchsorted(np.cumsum(lengths), index, side="right"))
        raise _damaged(
            path, f"token id {flat[index]} at {split} row {row} is outside the vocabulary of {vocabulary_size} ids"
        )
    row = _first_outside(labels, 0, num_classes)
    if row is not None:
        raise _damaged(path, f"label {labels[row]} at {split} row {row} is outside the {num_classes} classes")
    dense = np.zeros((len(lengths), sequence_length), np.int32)
    dense[np.arange(sequence_length)[None, :] < lengths[:, None]] = flat
    return dense, labels.astype(np.int32)


def is_prepared_file(path):
    """Whether `path` is a file `save_prepared` wrote (any version)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            metadata = json.loads(archive["metadata"].tobytes().decode("utf-8"))
        return isinstance(metadata, dict) and metadata.get("format") == FORMAT
    except (OSError, ValueError, KeyError, UnicodeDecodeError, zipfile.BadZipFile, AttributeError):
        return False


def load_prepared(path):
    """Reads a file of `python -m ganet_tf prepare` with NumPy alone.

    Runs on every Keras backend and imports neither TensorFlow nor Keras.

    Args:
        path: the `.npz` file.

    Returns:
        A `PreparedArrays`: per split dense int32 ids padded with 0 and int32
        labels, the class names, vocabulary, embeddings and metadata.

    Raises:
        GANetInputError: (one line naming the fix) the file is missing, is
            not a prepared dataset, is of another format version, or
            contradicts itself: a token id outside `[0, vocabulary size)`,
            a label outside `[0, number of classes)`, a row length outside
            `[0, sequence length]`, row lengths that do not add up to the
            ids, a split with more or fewer labels than rows, or embeddings
            whose rows are not the vocabulary's ids (under JAX an embedding
            lookup out of range gives wrong numbers, not an error).

    Example:

    >>> # Not run by the tests: needs a file written by `prepare --out trec.npz`.
    >>> data = load_prepared("trec.npz")  # doctest: +SKIP
    >>> model.fit(data.ids["train"], data.labels["train"])  # doctest: +SKIP
    """
    if not os.path.isfile(path):
        raise GANetInputError(f"No prepared dataset at {path}: write one with {PREPARE_COMMAND}.")
    try:
        with np.load(path, allow_pickle=False) as archive:
            metadata = _read_metadata(path, archive)
            length = int(metadata["sequence_length"])
            vocabulary = json.loads(archive["vocabulary"].tobytes().decode("utf-8"))
            embeddings = archive["embeddings"]
            # Ids index the embeddings: padding, unknown, then the vocabulary.
            vocabulary_size = len(vocabulary) + 2
            if embeddings.ndim != 2 or len(embeddings) != vocabulary_size:
                raise _damaged(
                    path, f"embeddings of shape {embeddings.shape} for a vocabulary of {vocabulary_size} ids"
                )
            ids, labels = {}, {}
            for split in metadata["splits"]:
                ids[split], labels[split] = _read_split(
                    path, archive, split, length, vocabulary_size, len(metadata["class_names"])
                )
    except (OSError, ValueError, KeyError, UnicodeDecodeError, zipfile.BadZipFile) as error:
        if isinstance(error, GANetInputError):
            raise
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise GANetInputError(
            f"{path} is not a readable prepared dataset ({reason}): write it again with {PREPARE_COMMAND}."
        ) from None
    return PreparedArrays(
        ids=ids,
        labels=labels,
        class_names=list(metadata["class_names"]),
        vocabulary=vocabulary,
        embeddings=embeddings,
        sequence_length=length,
        dataset=metadata.get("dataset"),
        glove_coverage=metadata.get("glove_coverage"),
        config=metadata.get("config", {}),
        version=metadata["version"],
    )
