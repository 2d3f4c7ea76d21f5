"""Sentence pairs for sequence to sequence: Multi30k and synthetic tasks."""

import os

import numpy as np

from ganet_tf.errors import GANetInputError
from ganet_tf.policy.input_files import read_input_lines

TASKS = ("multi30k", "copy", "reverse")
MULTI30K_SPLITS = {"train": "train", "val": "val", "test": "test_2016_flickr"}
SYNTHETIC_SIZES = {"train": 10000, "val": 500, "test": 500}
SYNTHETIC_SYMBOLS = 20


def _read_lines(path):
    if not os.path.isfile(path):
        raise GANetInputError(
            f"File not found: {path}. Point --data-dir to a folder with "
            "multi30k/{train,val,test_2016_flickr}.{de,en}.gz."
        )
    # As written: a BOM dropped, lines broken at \n, \r\n and \r only; a
    # damaged archive or a line in another encoding is one error line.
    fix = "convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8), or fix that line"
    return [line.strip() for line in read_input_lines(path, "utf-8", "--data-dir", fix)]


def read_parallel(source_path, target_path):
    """Line-aligned sentence pairs from two (gzip) files.

    Raises `GANetInputError` when the files have different line counts, a
    file is empty, or a source line is empty.
    """
    sources, targets = _read_lines(source_path), _read_lines(target_path)
    # A trailing empty line is a newline at the end of the file, not a pair.
    while sources and not sources[-1] and targets and not targets[-1]:
        sources.pop()
        targets.pop()
    if len(sources) != len(targets):
        raise GANetInputError(
            f"{source_path} has {len(sources)} lines but {target_path} has "
            f"{len(targets)}: line i of one must translate line i of the other."
        )
    if not sources:
        raise GANetInputError(f"{source_path} holds no sentences.")
    for number, source in enumerate(sources, 1):
        if not source:
            raise GANetInputError(
                f"Empty source sentence on line {number} of {source_path}: remove the pair or fill it in."
            )
    return sources, targets


def load_multi30k(data_dir, limit=None):
    """Multi30k task 1, German -> English: `{split: (sources, targets)}`.

    Reads `DATA_DIR/multi30k/{train,val,test_2016_flickr}.{de,en}.gz`.
    `limit` keeps the first N pairs of each split.
    """
    if not data_dir:
        data_dir = os.environ.get("GANET_DATA_DIR")
    if not data_dir:
        raise GANetInputError("Multi30k needs --data-dir (or $GANET_DATA_DIR).")
    folder = os.path.join(data_dir, "multi30k")
    splits = {}
    for split, stem in MULTI30K_SPLITS.items():
        sources, targets = read_parallel(os.path.join(folder, f"{stem}.de.gz"), os.path.join(folder, f"{stem}.en.gz"))
        splits[split] = (sources[:limit], targets[:limit])
    return splits


def synthetic_pairs(task, count, min_length=10, max_length=100, seed=0):
    """`count` random sequences of symbols `s0 .. s19` with lengths
    uniform in [min_length, max_length]; the target is the source (`copy`)
    or the source reversed (`reverse`)."""
    if task not in ("copy", "reverse"):
        raise GANetInputError(f"Unknown synthetic task {task!r}: use copy or reverse.")
    if not 1 <= min_length <= max_length:
        raise GANetInputError(f"Lengths must satisfy 1 <= min <= max, got {min_length} and {max_length}.")
    rng = np.random.default_rng(seed)
    sources, targets = [], []
    for _ in range(count):
        length = int(rng.integers(min_length, max_length + 1))
        symbols = [f"s{i}" for i in rng.integers(0, SYNTHETIC_SYMBOLS, length)]
        sources.append(" ".join(symbols))
        targets.append(" ".join(symbols if task == "copy" else symbols[::-1]))
    return sources, targets


def load_task(task, data_dir=None, limit=None, seed=0, min_length=10, max_length=100):
    """`{"train": (sources, targets), "val": ..., "test": ...}` of a task."""
    if task not in TASKS:
        raise GANetInputError(f"Unknown task {task!r}: use one of {', '.join(TASKS)}.")
    if limit is not None and limit < 1:
        raise GANetInputError(f"--limit must be a positive integer, got {limit}.")
    if task == "multi30k":
        return load_multi30k(data_dir, limit)
    splits = {}
    for offset, (split, size) in enumerate(SYNTHETIC_SIZES.items()):
        count = size if limit is None else min(size, limit)
        # Each split has its own seed, so test sequences are not training ones.
        splits[split] = synthetic_pairs(task, count, min_length, max_length, seed=1000 * seed + offset)
    return splits
