"""Readers of the local copies of the paper's datasets.

Each reader takes the dataset's folder in the data directory (`DIR/trec`,
`DIR/sst`, ...) and returns `{"train": (texts, labels), "test": (texts,
labels)}`, plus `"dev"` when the copy has its own dev split; labels are int64
class ids. `ganet_tf.data.registry` says which reader reads which dataset.
"""

import csv
import os
import re
import tarfile

import numpy as np

from ganet_tf.data.file_formats import DATA_DIR_ENV
from ganet_tf.data.file_formats import encode_labels
from ganet_tf.data.file_formats import read_label_text
from ganet_tf.data.file_formats import read_lines
from ganet_tf.errors import GANetInputError

TREC_LAYOUT = "DIR/trec/train_5500.label and DIR/trec/TREC_10.label"
IMDB_TARBALL = "aclImdb_v1_train_test.tar.gz"
IMDB_LAYOUT = f"DIR/imdb/aclImdb/{{train,test}}/{{pos,neg}}/*.txt or DIR/imdb/{IMDB_TARBALL}"
AG_NEWS_LAYOUT = "DIR/ag_news/train.csv and DIR/ag_news/test.csv (or under DIR/ag_news/ag_news_csv/)"
_IMDB_REVIEW = re.compile(r"aclImdb/(train|test)/(pos|neg)/[^/]+\.txt$")


def sst_layout(prefix):
    """The files of a local SST copy: `DIR/sst/<prefix>.{train,dev,test}`."""
    return f"DIR/sst/{prefix}.train, DIR/sst/{prefix}.dev and DIR/sst/{prefix}.test"


def _local_file(folder, file, layout):
    """`folder/file`, or one error line that describes the expected layout."""
    path = os.path.join(folder, file)
    if not os.path.isfile(path):
        raise GANetInputError(
            f"File not found: {path}. Expected {layout}, where DIR is --data-dir (or ${DATA_DIR_ENV})."
        )
    return path


def read_trec(folder, class_names):
    """TREC's `COARSE:fine question` files (latin-1); coarse labels only."""
    splits = {}
    for split, file in (("train", "train_5500.label"), ("test", "TREC_10.label")):
        texts, labels = read_label_text(_local_file(folder, file, TREC_LAYOUT), "latin-1")
        coarse = [label.split(":", 1)[0] for label in labels]
        splits[split] = (texts, encode_labels(coarse, class_names, file))
    return splits


def read_sst(folder, prefix, num_classes):
    """An SST copy `<prefix>.{train,dev,test}` of `LABEL text` lines (label 0..K-1)."""
    numbers = [str(i) for i in range(num_classes)]
    splits = {}
    for split in ("train", "dev", "test"):
        path = _local_file(folder, f"{prefix}.{split}", sst_layout(prefix))
        texts, labels = read_label_text(path)
        splits[split] = (texts, encode_labels(labels, numbers, path))
    return splits


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
                f"No IMDB data in {folder}: expected {IMDB_LAYOUT}, where DIR is --data-dir (or ${DATA_DIR_ENV})."
            )
        with tarfile.open(tarball, "r:gz") as archive:
            for member in archive:
                match = _IMDB_REVIEW.search(member.name)
                if match and member.isfile():
                    text = archive.extractfile(member).read().decode("utf-8")
                    reviews.append((*match.groups(), member.name, text))
    return sorted(reviews, key=lambda review: review[2])


def read_imdb(folder):
    """The official `aclImdb` reviews, extracted or as the tarball (no `unsup`)."""
    try:
        reviews = _imdb_reviews(folder)
    except UnicodeDecodeError:
        raise GANetInputError("An IMDB review is not valid UTF-8: is the archive intact?") from None
    splits = {}
    for split in ("train", "test"):
        rows = [r for r in reviews if r[0] == split]
        if not rows:
            raise GANetInputError(f"The IMDB data has no {split} reviews.")
        labels = np.asarray([int(r[1] == "pos") for r in rows], "int64")
        splits[split] = ([r[3] for r in rows], labels)
    return splits


def read_ag_news(path):
    """Reads an official AG News CSV (no header: class 1-4, title, description)."""
    texts, labels = [], []
    numbered = read_lines(path, "utf-8")
    rows = csv.reader(line for _, line in numbered)
    for (number, _), row in zip(numbered, rows, strict=True):
        if len(row) != 3 or row[0].strip() not in ("1", "2", "3", "4"):
            raise GANetInputError(
                f"{path}:{number}: expected 'class(1-4),title,description', got {','.join(row)[:60]!r}."
            )
        # The official files write line breaks inside a field as a backslash.
        text = f"{row[1]} {row[2]}".replace("\\", " ")
        texts.append(text)
        labels.append(int(row[0]) - 1)
    return texts, np.asarray(labels, "int64")


def read_ag_news_folder(folder):
    """The official AG News `train.csv` and `test.csv` (maybe in `ag_news_csv/`)."""
    if os.path.isdir(os.path.join(folder, "ag_news_csv")):
        folder = os.path.join(folder, "ag_news_csv")
    return {split: read_ag_news(_local_file(folder, f"{split}.csv", AG_NEWS_LAYOUT)) for split in ("train", "test")}
