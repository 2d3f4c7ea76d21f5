"""Loaders of labelled text: the paper's datasets by name, the user's files.

A dataset of the paper is read through its `DatasetSpec`
(`ganet_tf.data.registry`): from its local copy in a data directory DIR
(`data_dir`, else the environment variable `GANET_DATA_DIR`), e.g.
`DIR/trec/train_5500.label`; without one from the copy the package ships
(TREC), else from TFDS. File formats are in
`ganet_tf.data.file_formats`, the local readers in
`ganet_tf.data.local_datasets`, the TFDS adapter in `ganet_tf.data.tfds_source`.
"""

import os

import numpy as np

from ganet_tf.data.file_formats import DATA_DIR_ENV
from ganet_tf.data.file_formats import FORMATS
from ganet_tf.data.file_formats import check_input_file
from ganet_tf.data.file_formats import class_order
from ganet_tf.data.file_formats import encode_labels
from ganet_tf.data.file_formats import read_delimited  # noqa: F401 - re-exported
from ganet_tf.data.file_formats import read_label_text  # noqa: F401 - re-exported
from ganet_tf.data.file_formats import read_labelled_file
from ganet_tf.data.file_formats import warn_small_classes
from ganet_tf.data.local_datasets import read_ag_news  # noqa: F401 - re-exported
from ganet_tf.data.registry import DATASETS  # noqa: F401 - re-exported
from ganet_tf.data.registry import get_dataset_spec
from ganet_tf.data.text_splits import TextSplits
from ganet_tf.data.tfds_source import read_tfds
from ganet_tf.errors import GANetInputError


def _carve_validation(texts, labels, fraction, seed):
    if not 0.0 < fraction < 1.0:
        raise GANetInputError(f"validation fraction must be in (0, 1), got {fraction}.")
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
            f"{DATA_DIR_ENV}) to a folder DIR that holds one folder per dataset "
            "(DIR/trec/, DIR/sst/, DIR/imdb/, DIR/ag_news/)."
        )
    return data_dir


PACKAGED_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "packaged")


def dataset_source(name, data_dir=None):
    """Where `load_dataset(name, data_dir)` reads dataset `name` from.

    Args:
        name: one of `DATASETS`.
        data_dir: the folder DIR of the local copies, or None for
            `$GANET_DATA_DIR`.

    Returns:
        `("local", folder)` for a data directory (`data_dir`, else
        `$GANET_DATA_DIR`), else `("packaged", folder)` for a dataset the
        package ships (`DatasetSpec.packaged_folder`), else `("tfds", None)`.

    Example:

    >>> dataset_source("trec", None)[0] in ("local", "packaged")
    True
    """
    spec = get_dataset_spec(name)
    data_dir = resolve_data_dir(data_dir)
    if data_dir:
        return "local", os.path.join(data_dir, spec.local_folder)
    if spec.packaged_folder is not None:
        return "packaged", os.path.join(PACKAGED_DATA, spec.packaged_folder)
    return "tfds", None


def load_dataset(name, data_dir=None, validation_fraction=0.1, seed=0):
    """Loads a dataset of the paper by name as `TextSplits`.

    Args:
        name: one of `DATASETS`: `"trec"`, `"sst1"`, `"sst2"`, `"imdb"`
            (the official `aclImdb` folder or its tarball under `imdb/`) or
            `"ag_news"` (`ag_news/[ag_news_csv/]{train,test}.csv`).
        data_dir: the folder DIR of the local copies (`DIR/trec/`,
            `DIR/sst/`, ...; each spec's `local_layout` names the files);
            defaults to `$GANET_DATA_DIR`; without either, the copy the
            package ships (TREC), else TFDS (`dataset_source`).
        validation_fraction: share of training carved out (seeded) as the
            validation split. A local copy with a dev split of its own
            (SST-1 and SST-2: the spec's `dev_file`) uses that file instead
            and ignores `validation_fraction` and `seed`.
        seed: seed of that carving.
    """
    spec = get_dataset_spec(name)
    source, folder = dataset_source(name, data_dir)
    parts = read_tfds(spec) if source == "tfds" else spec.read_local(folder)
    if spec.dev_file is not None and "dev" in parts:
        train = (*parts["train"], *parts["dev"])
    else:
        train = _carve_validation(*parts["train"], validation_fraction, seed)
    return TextSplits(spec.name, list(spec.class_names), *train, *parts["test"])


def load_files(
    train_file,
    test_file=None,
    fmt=None,
    validation_fraction=0.1,
    seed=0,
    name="custom",
    encoding="utf-8",
    text_column="text",
    label_column="label",
):
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
        raise GANetInputError(f"{train_file} has a single label {class_names}: a classifier needs at least two.")
    warn_small_classes(train_file, labels)
    encoded = encode_labels(labels, class_names, train_file)
    train = _carve_validation(texts, encoded, validation_fraction, seed)
    test_texts, test_labels = [], np.zeros([0], "int64")
    if test_file is not None:
        test_texts, raw = read_labelled_file(test_file, fmt, **columns)
        test_labels = encode_labels(raw, class_names, test_file)
    return TextSplits(name, class_names, *train, test_texts, test_labels)
