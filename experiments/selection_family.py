"""The synthetic selection family's tasks (issue 39), as `adaptive_gates.py`
and `gate_cut_rules.py` train on them.

`ganet_tf.data.synthetic_selection`: texts of 5-400 words (log-uniform)
whose label only their keywords carry, with about 5 %, 20 % and 50 % of
keywords per task (the share varies by text). Each task is written as CSV
files (`write_task_files`, under `runs/.../data/`) for `python -m ganet_tf
train --train-file ... --test-file ...`, always the same texts (`task_data`).
"""

import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import REPO

# Task name -> the mean share of keywords of its texts.
TASKS = {"share05": 0.05, "share20": 0.2, "share50": 0.5}
# Flags of every run: a small BiLSTM (the task needs no more), every word
# kept (texts are at most 400 words), and patience enough to settle.
COMMON = ["--hidden", "32", "--patience", "3", "--sequence-length", "400"]
EPOCHS = 8
TRAIN_TEXTS, TEST_TEXTS = 1000, 400
MAX_LENGTH = 400
# One data set per task for every model and training seed, test apart from train.
DATA_SEEDS = {"train": 100, "test": 200}


def _sizes(limit):
    return (TRAIN_TEXTS, TEST_TEXTS) if limit is None else (limit, max(limit // 4, 8))


def task_data(task, split, limit):
    """(texts, labels, keyword masks) of `split` of `task`, always the same."""
    from ganet_tf.data.synthetic_selection import selection_task

    size = _sizes(limit)[split == "test"]
    seed = DATA_SEEDS[split] + list(TASKS).index(task)
    return selection_task(size, TASKS[task], seed=seed, max_length=MAX_LENGTH)


def write_task_files(task, limit, runs_dir):
    """Writes `task`'s train and test CSV files (rewritten only when they
    differ); returns their paths, relative to the repository."""
    folder = os.path.join(runs_dir, "data", task + (f"_limit{limit}" if limit else ""))
    os.makedirs(os.path.join(REPO, folder), exist_ok=True)
    paths = []
    for split in ("train", "test"):
        texts, labels, _ = task_data(task, split, limit)
        rows = [["text", "label"], *([text, f"c{label}"] for text, label in zip(texts, labels, strict=True))]
        path = os.path.join(folder, f"{split}.csv")
        absolute = os.path.join(REPO, path)
        if not os.path.exists(absolute) or _read_rows(absolute) != rows:
            with open(absolute + ".tmp", "w", newline="", encoding="utf-8") as handle:
                csv.writer(handle).writerows(rows)
            os.replace(absolute + ".tmp", absolute)
        paths.append(path)
    return paths


def _read_rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))
