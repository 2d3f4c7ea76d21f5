"""Readers for the paper's datasets and for the user's own labelled text.

Local files are read from a data directory laid out like `../shared/data`
(`trec/`, `sst/`, ...), named by `data_dir` or the environment variable
`GANET_DATA_DIR`. Without one, datasets that TFDS has are loaded with TFDS.
"""

import csv
import os
import re
import tarfile

import numpy as np

from ganet_tf.data.file_formats import DATA_DIR_ENV
from ganet_tf.data.file_formats import FORMATS
from ganet_tf.data.file_formats import check_input_file
from ganet_tf.data.file_formats import class_order
from ganet_tf.data.file_formats import read_delimited  # noqa: F401 - re-exported
from ganet_tf.data.file_formats import read_label_text
from ganet_tf.data.file_formats import read_labelled_file
from ganet_tf.data.file_formats import read_lines
from ganet_tf.data.file_formats import warn_small_classes
from ganet_tf.data.text_splits import TextSplits
from ganet_tf.errors import GANetInputError


TREC_CLASSES = ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
SST1_CLASSES = ["very negative", "negative", "neutral", "positive", "very positive"]
SST2_CLASSES = ["negative", "positive"]
IMDB_CLASSES = ["negative", "positive"]
AG_NEWS_CLASSES = ["World", "Sports", "Business", "Sci/Tech"]
IMDB_TARBALL = "aclImdb_v1_train_test.tar.gz"
_IMDB_REVIEW = re.compile(r"aclImdb/(train|test)/(pos|neg)/[^/]+\.txt$")


def _encode_labels(labels, class_names, path):
    index = {name: i for i, name in enumerate(class_names)}
    encoded = []
    for label in labels:
        if label not in index:
            raise GANetInputError(
                f"{path}: unknown label {label!r}; expected one of "
                f"{class_names}."
            )
        encoded.append(index[label])
    return np.asarray(encoded, dtype="int64")


def _carve_validation(texts, labels, fraction, seed):
    if not 0.0 < fraction < 1.0:
        raise GANetInputError(
            f"validation fraction must be in (0, 1), got {fraction}."
        )
    order = np.random.default_rng(seed).permutation(len(texts))
    count = max(1, int(round(fraction * len(texts))))
    validation, train = order[:count], order[count:]
    pick = lambda rows: [texts[i] for i in rows]  # noqa: E731
    return pick(train), labels[train], pick(validation), labels[validation]


def resolve_data_dir(data_dir=None):
    """`data_dir`, else `$GANET_DATA_DIR`, else None (meaning TFDS)."""
    data_dir = data_dir or os.environ.get(DATA_DIR_ENV) or None
    if data_dir is not None and not os.path.isdir(data_dir):
        raise GANetInputError(
            f"Data directory not found: {data_dir}. Pass --data-dir (or set "
            f"{DATA_DIR_ENV}) to a folder laid out like shared/data."
        )
    return data_dir


def _local_trec(data_dir, validation_fraction, seed):
    folder = os.path.join(data_dir, "trec")
    splits = {}
    for split, file in (("train", "train_5500.label"), ("test", "TREC_10.label")):
        # TREC is distributed in latin-1; labels are COARSE:fine.
        texts, labels = read_label_text(os.path.join(folder, file), "latin-1")
        coarse = [label.split(":", 1)[0] for label in labels]
        splits[split] = (texts, _encode_labels(coarse, TREC_CLASSES, file))
    train = _carve_validation(*splits["train"], validation_fraction, seed)
    return TextSplits("trec", TREC_CLASSES, *train, *splits["test"])


def _local_sst(data_dir, fine):
    prefix, class_names = ("stsa.fine", SST1_CLASSES) if fine else (
        "stsa.binary",
        SST2_CLASSES,
    )
    splits = []
    for split in ("train", "dev", "test"):
        path = os.path.join(data_dir, "sst", f"{prefix}.{split}")
        texts, labels = read_label_text(path)
        numbers = [str(i) for i in range(len(class_names))]
        splits.extend([texts, _encode_labels(labels, numbers, path)])
    return TextSplits("sst1" if fine else "sst2", class_names, *splits)


def _tfds_splits(name, tfds_name, text_key, label_key, class_names, split_names,
                 validation_fraction, seed):
    try:
        import tensorflow_datasets as tfds

        loaded = tfds.load(tfds_name, split=list(split_names), batch_size=-1)
    except ImportError as error:  # TFDS itself, or a module it needs
        raise GANetInputError(
            f"Could not load {name} from TFDS: the Python module "
            f"{error.name or str(error)!r} is missing (pip install it), or pass "
            f"--data-dir (or set {DATA_DIR_ENV}) to a local copy."
        ) from None
    except Exception as error:  # noqa: BLE001 - any download failure
        raise GANetInputError(
            f"Could not load {name} from TFDS ({type(error).__name__}); "
            "without network pass --data-dir (or set "
            f"{DATA_DIR_ENV}) to a local copy."
        ) from None
    decoded = []
    for split in loaded:
        split = tfds.as_numpy(split)
        keys = (text_key,) if isinstance(text_key, str) else text_key
        columns = [[t.decode("utf-8", "replace") for t in split[k]] for k in keys]
        texts = [" ".join(parts) for parts in zip(*columns)]
        decoded.append((texts, np.asarray(split[label_key], dtype="int64")))
    if len(decoded) == 2:
        train = _carve_validation(*decoded[0], validation_fraction, seed)
        return TextSplits(name, class_names, *train, *decoded[1])
    return TextSplits(name, class_names, *decoded[0], *decoded[1], *decoded[2])


def _load_trec(data_dir, validation_fraction, seed):
    if data_dir:
        return _local_trec(data_dir, validation_fraction, seed)
    return _tfds_splits("trec", "trec", "text", "label-coarse", TREC_CLASSES,
                        ("train", "test"), validation_fraction, seed)


def _load_sst1(data_dir, validation_fraction, seed):
    if data_dir:
        return _local_sst(data_dir, fine=True)
    raise GANetInputError(
        "SST-1 is not in TFDS: pass --data-dir (or set "
        f"{DATA_DIR_ENV}) to a folder with sst/stsa.fine.{{train,dev,test}}."
    )


def _load_sst2(data_dir, validation_fraction, seed):
    if data_dir:
        return _local_sst(data_dir, fine=False)
    # GLUE's SST-2 test labels are hidden: its validation split is the test.
    return _tfds_splits("sst2", "glue/sst2", "sentence", "label", SST2_CLASSES,
                        ("train", "validation"), validation_fraction, seed)


def _imdb_reviews(folder):
    """(split, label, path, text) of every review, sorted by path."""
    extracted = os.path.join(folder, "aclImdb")
    reviews = []
    if os.path.isdir(extracted):
        for root, _, files in os.walk(extracted):
            for file in files:
                path = os.path.join(root, file)
                match = _IMDB_REVIEW.search(path.replace(os.sep, "/"))
                if match:
                    with open(path, encoding="utf-8") as handle:
                        reviews.append((*match.groups(), path, handle.read()))
    else:
        tarball = os.path.join(folder, IMDB_TARBALL)
        if not os.path.isfile(tarball):
            raise GANetInputError(
                f"No IMDB data in {folder}: expected the extracted aclImdb/ "
                f"folder or {IMDB_TARBALL}."
            )
        with tarfile.open(tarball, "r:gz") as archive:
            for member in archive:
                match = _IMDB_REVIEW.search(member.name)
                if match and member.isfile():
                    text = archive.extractfile(member).read().decode("utf-8")
                    reviews.append((*match.groups(), member.name, text))
    return sorted(reviews, key=lambda review: review[2])


def _local_imdb(data_dir, validation_fraction, seed):
    try:
        reviews = _imdb_reviews(os.path.join(data_dir, "imdb"))
    except UnicodeDecodeError:
        raise GANetInputError("An IMDB review is not valid UTF-8: is the archive intact?") from None
    splits = {}
    for split in ("train", "test"):
        rows = [r for r in reviews if r[0] == split]
        if not rows:
            raise GANetInputError(f"The IMDB data has no {split} reviews.")
        labels = np.asarray([int(r[1] == "pos") for r in rows], "int64")
        splits[split] = ([r[3] for r in rows], labels)
    train = _carve_validation(*splits["train"], validation_fraction, seed)
    return TextSplits("imdb", IMDB_CLASSES, *train, *splits["test"])


def _load_imdb(data_dir, validation_fraction, seed):
    if data_dir:
        return _local_imdb(data_dir, validation_fraction, seed)
    return _tfds_splits("imdb", "imdb_reviews", "text", "label", IMDB_CLASSES,
                        ("train", "test"), validation_fraction, seed)


def read_ag_news(path):
    """Reads an official AG News CSV (no header: class 1-4, title, description)."""
    texts, labels = [], []
    numbered = read_lines(path, "utf-8")
    rows = csv.reader(line for _, line in numbered)
    for (number, _), row in zip(numbered, rows):
        if len(row) != 3 or row[0].strip() not in ("1", "2", "3", "4"):
            raise GANetInputError(
                f"{path}:{number}: expected 'class(1-4),title,description', "
                f"got {','.join(row)[:60]!r}."
            )
        # The official files write line breaks inside a field as a backslash.
        text = f"{row[1]} {row[2]}".replace("\\", " ")
        texts.append(text)
        labels.append(int(row[0]) - 1)
    return texts, np.asarray(labels, "int64")


def _load_ag_news(data_dir, validation_fraction, seed):
    if not data_dir:
        return _tfds_splits("ag_news", "ag_news_subset", ("title", "description"),
                            "label", AG_NEWS_CLASSES, ("train", "test"),
                            validation_fraction, seed)
    folder = os.path.join(data_dir, "ag_news")
    if os.path.isdir(os.path.join(folder, "ag_news_csv")):
        folder = os.path.join(folder, "ag_news_csv")
    train = read_ag_news(os.path.join(folder, "train.csv"))
    test = read_ag_news(os.path.join(folder, "test.csv"))
    train = _carve_validation(*train, validation_fraction, seed)
    return TextSplits("ag_news", AG_NEWS_CLASSES, *train, *test)


DATASETS = {
    "trec": _load_trec,
    "sst1": _load_sst1,
    "sst2": _load_sst2,
    "imdb": _load_imdb,
    "ag_news": _load_ag_news,
}


def load_dataset(name, data_dir=None, validation_fraction=0.1, seed=0):
    """Loads a dataset of the paper by name as `TextSplits`.

    Args:
        name: one of `DATASETS`: `"trec"`, `"sst1"`, `"sst2"`, `"imdb"`
            (the official `aclImdb` folder or its tarball under `imdb/`) or
            `"ag_news"` (`ag_news/[ag_news_csv/]{train,test}.csv`).
        data_dir: a folder laid out like `shared/data`; defaults to
            `$GANET_DATA_DIR`, and without either to TFDS.
        validation_fraction: share of training carved out (seeded) as the
            validation split when the dataset has no dev split.
        seed: seed of that carving.
    """
    if name not in DATASETS:
        raise GANetInputError(
            f"Unknown dataset {name!r}: choose one of {sorted(DATASETS)}, or "
            "pass your own with --train-file."
        )
    return DATASETS[name](resolve_data_dir(data_dir), validation_fraction, seed)


def load_files(train_file, test_file=None, fmt=None, validation_fraction=0.1,
               seed=0, name="custom", encoding="utf-8", text_column="text",
               label_column="label"):
    """Loads the user's own labelled text as `TextSplits`.

    Args:
        train_file: path to the training examples.
        test_file: optional path to test examples with the same labels.
        fmt: `"csv"` or `"tsv"` (a header with `text` and `label` columns)
            or `"label_text"` (`LABEL text` lines); by default from the file
            extension (`.csv`, `.tsv`, else `label_text`).
        validation_fraction, seed: the validation split carved from training.
        encoding: text encoding of both files (a UTF-8 byte-order mark is
            dropped).
        text_column, label_column: the CSV/TSV header names to read.

    Class ids follow the sorted labels (numerically when all are numbers).
    A class with fewer than 10 training examples draws one warning line.
    """
    if fmt is None:
        extension = os.path.splitext(train_file)[1].lower().lstrip(".")
        fmt = extension if extension in ("csv", "tsv") else "label_text"
    if fmt not in FORMATS:
        raise GANetInputError(f"Unknown format {fmt!r}: choose one of {FORMATS}.")
    check_input_file(train_file, "--train-file")
    if test_file is not None:
        check_input_file(test_file, "--test-file")
    columns = {"encoding": encoding, "text_column": text_column, "label_column": label_column}
    texts, labels = read_labelled_file(train_file, fmt, **columns)
    class_names = class_order(labels)
    if len(class_names) < 2:
        raise GANetInputError(
            f"{train_file} has a single label {class_names}: a classifier "
            "needs at least two."
        )
    warn_small_classes(train_file, labels)
    encoded = _encode_labels(labels, class_names, train_file)
    train = _carve_validation(texts, encoded, validation_fraction, seed)
    test_texts, test_labels = [], np.zeros([0], "int64")
    if test_file is not None:
        test_texts, raw = read_labelled_file(test_file, fmt, **columns)
        test_labels = _encode_labels(raw, class_names, test_file)
    return TextSplits(name, class_names, *train, test_texts, test_labels)
