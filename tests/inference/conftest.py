"""One tiny classification run per session, exported once (the seq2seq run: tests/conftest.py)."""

import pytest

from ganet_tf.cli import main
from tests.eager import functions_run_eagerly
from tests.made_once import made_once

TINY = ["--epochs", "1", "--hidden", "4", "--auxiliary-hidden-dim", "3", "--glove-vocabulary", "0", "--verbose", "0"]


@pytest.fixture(scope="session")
def classifier_run(tmp_path_factory):
    """A GA-Net run written by `train --out`, trained in seconds on 40 lines."""
    return made_once(tmp_path_factory, "classifier_run", train_classifier_run)


def train_classifier_run(root, flags=()):
    """`train --out root/run` on 40 lines of two classes (the first 10 as test), with `flags` last."""
    lines = [f"{'pos' if i % 2 else 'neg'} {'good fine' if i % 2 else 'bad awful'} film {i}" for i in range(40)]
    (root / "train.txt").write_text("\n".join(lines), encoding="utf-8")
    (root / "test.txt").write_text("\n".join(lines[:10]), encoding="utf-8")
    out = root / "run"
    files = ["--train-file", str(root / "train.txt"), "--test-file", str(root / "test.txt")]
    shape = ["--batch-size", "16", "--sequence-length", "6"]
    with functions_run_eagerly():
        assert main(["train", *files, *TINY, *shape, *flags, "--out", str(out)]) == 0
    return str(out)


@pytest.fixture(scope="session")
def saved_model(classifier_run, tmp_path_factory):
    """The run exported by `export_saved_model` (what `python -m ganet_tf export` writes)."""
    from ganet_tf.export import export_saved_model

    def export(folder):
        return export_saved_model(classifier_run, "tiny", base=str(folder / "saved_models"))

    return made_once(tmp_path_factory, "saved_model", export)
