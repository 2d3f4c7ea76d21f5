"""The reliability suite's commands: a command joins every test by a row in `COMMANDS`.

Each row says how to build a minimal valid command line on tiny data, which
numbers to corrupt, which output folders it owns (refused when they hold the
user's files, are the same or nested) and which run folder it reads. The
trainings the tests share (one `train` run, one `seq2seq` run) are made
once per session.
"""

import dataclasses
import os
import subprocess
import sys

import pytest

from ganet_tf.cli import main
from tests.conftest import SHORT_COPY
from tests.eager import functions_run_eagerly
from tests.made_once import made_once

TRAIN_TINY = [
    "--model",
    "soft",
    "--epochs",
    "1",
    "--hidden",
    "4",
    "--glove-vocabulary",
    "0",
    "--verbose",
    "0",
    "--batch-size",
    "16",
    "--buckets",
    "0",
]
# The sizes of a tiny seq2seq run, on any task.
SEQ2SEQ_SIZES = [
    "--limit",
    "4",
    "--epochs",
    "1",
    "--hidden",
    "4",
    "--embedding-dim",
    "4",
    "--batch-size",
    "4",
    "--verbose",
    "0",
]
# The session's `translator_run` (tests/conftest.py) has these flags.
SEQ2SEQ_TINY = [*SHORT_COPY, *SEQ2SEQ_SIZES]
NON_FINITE = ("nan", "inf", "-inf")


@dataclasses.dataclass
class Command:
    """How the suite runs one command.

    Args:
        argv: `argv(data)` -> a valid command line (without outputs) on the
            `Data` of the session.
        outputs: `{flag: default path below the test's folder}` of its
            output folders; the first is given in every run.
        owned: the output flags naming folders the command owns (a folder
            with the user's files is refused).
        numbers: `[(flag, bad value, words of the message)]`.
        reads_run: the flag naming the run folder it reads, if any.
        trains: whether it trains (divergence, SIGTERM, kill -9 and resume).
        writes_files: whether its outputs are files (replaced whole), not folders.
    """

    argv: object
    outputs: dict
    owned: tuple = ()
    numbers: tuple = ()
    reads_run: str = None
    trains: bool = False
    writes_files: bool = False


@dataclasses.dataclass
class Data:
    root: str
    train_files: list
    train_run: str
    seq2seq_run: str


def _numbers(*flags, values=NON_FINITE):
    return tuple((flag, value, "must be") for flag in flags for value in values)


COMMANDS = {
    "train": Command(
        argv=lambda data: ["train", *data.train_files, *TRAIN_TINY],
        outputs={"--out": "out", "--backup-dir": "backup"},
        owned=("--out", "--backup-dir"),
        numbers=(
            *_numbers("--lr", "--temperature", "--penalty", "--dropout", "--initial-gate-logit"),
            ("--lr", "0", "positive"),
            ("--lr", "-1", "positive"),
            ("--dropout", "1", "in [0, 1)"),
            ("--epochs", "0", "a positive integer"),
            ("--seed", "-1", "an integer in [0, "),
            ("--limit", "0", "a positive integer"),
            ("--target-density", "1.5", "in [0, 1)"),
            ("--length-percentile", "0", "in (0, 100]"),
        ),
        trains=True,
    ),
    "prepare": Command(
        argv=lambda data: ["prepare", *data.train_files, "--glove-vocabulary", "0"],
        outputs={"--out": "prepared.npz"},
        numbers=(
            ("--seed", "-1", "an integer in [0, "),
            ("--limit", "0", "a positive integer"),
            ("--length-percentile", "0", "in (0, 100]"),
            ("--sequence-length", "0", "a positive integer"),
        ),
        writes_files=True,
    ),
    "seq2seq": Command(
        argv=lambda data: ["seq2seq", *SEQ2SEQ_TINY],
        outputs={"--out": "out", "--export": "export", "--backup-dir": "backup"},
        owned=("--out", "--export", "--backup-dir"),
        numbers=(
            *_numbers("--lr", "--dropout"),
            ("--lr", "0", "positive"),
            ("--lr", "-1", "positive"),
            ("--dropout", "1", "in [0, 1)"),
            ("--epochs", "0", "a positive integer"),
            ("--seed", "-1", "an integer in [0, "),
            ("--beam-size", "0", "a positive integer"),
            ("--patience", "0", "a positive integer"),
            ("--attention gated --initial-gate-logit", "nan", "must be a finite number"),
            ("--attention gated --penalty", "-1", ">= 0"),
            ("--attention gated --inference-density", "0", "in (0, 1]"),
            ("--attention gated --target-density", "1", "in [0, 1)"),
            ("--attention hier-act --halting-penalty", "nan", "must be a finite number"),
            ("--attention hier-act --halting-penalty", "-0.1", ">= 0"),
            ("--attention hier-rnn --levels", "1", "an integer >= 2"),
            # A flag of another attention: refused, never silently dropped.
            ("--attention gated --halting-penalty", "0.1", "applies to --attention hier-act only"),
            ("--attention bahdanau --initial-gate-logit", "1", "applies to --attention gated only"),
            ("--attention hier-act --block-size", "4", "applies to --attention hier-rnn or hier-cnn only"),
            ("--attention bahdanau --summary-inputs", "keys", "applies to --attention hier-rnn or hier-cnn only"),
        ),
        reads_run="--init-from",
        trains=True,
    ),
    "export": Command(
        argv=lambda data: ["export", "--model", data.train_run, "--name", "tiny"],
        outputs={"--base": "saved_models"},
        numbers=(("--version", "0", "a positive integer"), ("--version", "-2", "a positive integer")),
        reads_run="--model",
    ),
    "explain": Command(
        argv=lambda data: ["explain", "--model", data.train_run, "--text", "a good film"],
        outputs={"--out": "report"},
        owned=("--out",),
        reads_run="--model",
    ),
    "predict": Command(
        argv=lambda data: ["predict", "--model", data.train_run, "--text", "a good film", "--quiet"],
        outputs={"--out": "predictions.jsonl"},
        numbers=(("--batch-size", "0", "a positive integer"),),
        reads_run="--model",
        writes_files=True,
    ),
    # Only the refusals: a search is too slow for this suite (tests/tuning).
    "tune": Command(
        argv=lambda data: [
            "tune",
            "--dataset",
            "trec",
            "--max-trials",
            "1",
            "--epochs",
            "1",
            "--limit",
            "20",
            "--directory",
            os.path.join(data.root, "tuning"),
        ],
        outputs={"--out": "best"},
        owned=("--out",),
        numbers=(
            *_numbers("--density-weight", "--dropout"),
            ("--max-trials", "0", "a positive integer"),
            ("--dropout", "1.5", "in [0, 1)"),
            ("--seed", "-1", "an integer in [0, "),
        ),
    ),
}


def write_train_files(folder):
    os.makedirs(folder, exist_ok=True)
    lines = [f"{'pos' if i % 2 else 'neg'} {'good fine' if i % 2 else 'bad awful'} film {i}" for i in range(40)]
    with open(os.path.join(folder, "train.txt"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines))
    with open(os.path.join(folder, "test.txt"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines[:10]))
    return ["--train-file", os.path.join(folder, "train.txt"), "--test-file", os.path.join(folder, "test.txt")]


@pytest.fixture(scope="session")
def data(tmp_path_factory, translator_run):
    """Tiny training files, one finished `train` run and one `seq2seq` run,
    made once for both xdist workers (`tests.made_once`; the tests copy a
    run before they change it). The `seq2seq` run is the session's
    `translator_run` (tests/conftest.py), trained with `SEQ2SEQ_TINY`'s flags."""

    def make(root):
        files = write_train_files(str(root / "data"))
        train_run = str(root / "train_run")
        with functions_run_eagerly():
            assert main(["train", *files, *TRAIN_TINY, "--out", train_run]) == 0
        return {"root": str(root), "train_files": files, "train_run": train_run}

    return Data(**made_once(tmp_path_factory, "reliability_data", make), seq2seq_run=translator_run)


def dead_pid():
    """The id of a process that has ended (for a lock left by a killed run)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid
