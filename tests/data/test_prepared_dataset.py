"""`python -m ganet_tf prepare` writes the ids of the training path to one
`.npz`; `load_prepared` reads them back with NumPy alone, also under JAX with
TensorFlow unimportable; bad files are one error line."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ganet_tf.cli import main
from ganet_tf.data import prepared_dataset
from ganet_tf.data.prepared_dataset import load_prepared
from ganet_tf.errors import GANetInputError
from tests.conftest import REPO

# The packaged TREC, a few hundred questions: seconds.
FLAGS = ["--dataset", "trec", "--limit", "300", "--glove-vocabulary", "1000", "--seed", "3"]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("prepared") / "trec.npz")
    assert main(["prepare", *FLAGS, "--embedding-dtype", "float32", "--out", path]) == 0
    return path


def test_the_file_holds_the_ids_the_training_path_makes(written, capsys):
    from ganet_tf.training import TrainConfig
    from ganet_tf.training.prepare import prepare

    data = prepare(TrainConfig(dataset="trec", limit=300, glove_vocabulary=1000, seed=3))
    loaded = load_prepared(written)
    for split in ("train", "validation", "test"):
        np.testing.assert_array_equal(loaded.ids[split], data.ids[split])
        assert loaded.ids[split].dtype == np.int32
        np.testing.assert_array_equal(loaded.labels[split], getattr(data.splits, f"{split}_labels"))
    assert loaded.vocabulary == list(data.vocabulary)
    assert loaded.class_names == list(data.class_names)
    assert loaded.sequence_length == data.sequence_length and loaded.dataset == "trec"
    np.testing.assert_array_equal(loaded.embeddings, data.embeddings)
    assert loaded.config["seed"] == 3 and loaded.config["limit"] == 300


# A small dataset: length 4, train rows of 2, 3 and 0 tokens (ragged
# `train_ids` [5, 3, 7, 0, 2]), classes a and b.
SMALL_IDS = {
    "train": np.array([[5, 3, 0, 0], [7, 0, 2, 0], [0, 0, 0, 0]]),
    "validation": np.zeros((0, 4), int),
    "test": np.array([[1, 2, 3, 4]]),
}
SMALL_LABELS = {"train": [0, 1, 1], "validation": [], "test": [1]}


def _save_small(path, ids=SMALL_IDS, vocabulary_size=300):
    """Writes `ids` with `save_prepared`, a vocabulary of `vocabulary_size` ids."""
    vocabulary, embeddings = ["w"] * (vocabulary_size - 2), np.ones((vocabulary_size, 2))
    return prepared_dataset.save_prepared(
        str(path), ids, SMALL_LABELS, ["a", "b"], vocabulary, embeddings, {"dataset": "toy"}
    )


def test_ids_are_stored_ragged_in_the_narrowest_type(tmp_path):
    path = _save_small(tmp_path / "small.npz")
    with np.load(path) as archive:
        assert archive["train_ids"].dtype == np.uint16  # 300 ids
        np.testing.assert_array_equal(archive["train_ids"], [5, 3, 7, 0, 2])
        np.testing.assert_array_equal(archive["train_lengths"], [2, 3, 0])
        assert archive["embeddings"].dtype == np.float16
    loaded = load_prepared(path)
    for split in SMALL_IDS:
        np.testing.assert_array_equal(loaded.ids[split], SMALL_IDS[split])
    assert loaded.vocabulary_size == 300 and loaded.num_classes == 2
    # Above 65,536 ids: 16 low bits and 8 high bits in two planes.
    wide = {split: value * 1000 for split, value in SMALL_IDS.items()}
    _save_small(path, wide, 2**17)
    with np.load(path) as archive:
        assert archive["train_ids"].dtype == np.uint16 and archive["train_ids_high"].dtype == np.uint8
    for split in SMALL_IDS:
        np.testing.assert_array_equal(load_prepared(path).ids[split], wide[split])


READ_UNDER_JAX = """
import sys
from tests import tensorflow_blocker
tensorflow_blocker.install()
from ganet_tf.data.prepared_dataset import load_prepared
data = load_prepared(sys.argv[1])
import keras
assert keras.backend.backend() == "jax"
assert not [name for name in sys.modules if name.split(".")[0] in ("tensorflow", "tensorflow_probability")]
print(data.ids["train"].shape, data.ids["train"].dtype, len(data.vocabulary), data.embeddings.shape)
"""


def test_the_reader_runs_under_jax_without_tensorflow(written):
    environment = dict(os.environ, KERAS_BACKEND="jax")
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", READ_UNDER_JAX, written], cwd=REPO, env=environment, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    expected = load_prepared(written)
    assert done.stdout.split("\n")[0].startswith(f"{expected.ids['train'].shape} int32 {len(expected.vocabulary)}")


def _rewrite(source, target, **arrays):
    """Copies the prepared file `source` to `target`, `arrays` replaced or added."""
    with np.load(source) as archive:
        np.savez_compressed(target, **{**dict(archive), **arrays})


def _rewrite_metadata(source, target, **changes):
    with np.load(source) as archive:
        metadata = json.loads(archive["metadata"].tobytes())
    _rewrite(source, target, metadata=np.frombuffer(json.dumps({**metadata, **changes}).encode(), np.uint8))


@pytest.mark.parametrize("damage", ["missing", "text", "other_npz", "version", "truncated"])
def test_a_bad_file_is_one_error_line_naming_the_fix(written, tmp_path, damage):
    path = str(tmp_path / "bad.npz")
    if damage == "text":
        with open(path, "w") as handle:
            handle.write("not a zip\n")
    elif damage == "other_npz":
        np.savez(path, x=np.arange(3))
    elif damage == "version":
        _rewrite_metadata(written, path, version=99)
    elif damage == "truncated":
        with open(written, "rb") as source, open(path, "wb") as handle:
            handle.write(source.read()[: os.path.getsize(written) // 2])
    with pytest.raises(GANetInputError) as raised:
        load_prepared(path)
    message = str(raised.value)
    assert "\n" not in message and path in message and "python -m ganet_tf prepare" in message
    if damage == "version":
        assert "version 99" in message


def test_prepare_refuses_an_out_that_is_not_a_prepared_file(tmp_path, capsys):
    other = tmp_path / "notes.npz"
    other.write_text("mine")
    for out, words in ((str(other), "is not a prepared dataset"), (str(tmp_path / "trec.txt"), "must name a .npz")):
        assert main(["prepare", *FLAGS, "--out", out]) == 2
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("ganet_tf: error: --out") and words in lines[0]
    assert other.read_text() == "mine" and sorted(os.listdir(tmp_path)) == ["notes.npz"]


@pytest.fixture
def small(tmp_path):
    """The small dataset written by `save_prepared`: 300 ids."""
    return _save_small(tmp_path / "small.npz")


# One field damaged each (as a damaged or hand-made file has it), and the
# words of the one error line.
DAMAGES = {
    "id_past_the_vocabulary": (
        {"train_ids": np.array([5, 3, 7, 0, 300], np.uint16)},
        "token id 300 at train row 1 is outside the vocabulary of 300 ids",
    ),
    "negative_id": ({"test_ids": np.array([1, -2, 3, 4])}, "token id -2 at test row 0 is outside the vocabulary"),
    "high_plane": (
        {"train_ids_high": np.array([0, 0, 0, 1, 0], np.uint8)},
        "token id 65536 at train row 1 is outside the vocabulary of 300 ids",
    ),
    "label_past_the_classes": (
        {"train_labels": np.array([0, 1, 2], np.uint8)},
        "label 2 at train row 2 is outside the 2 classes",
    ),
    "negative_label": ({"test_labels": np.array([-1])}, "label -1 at test row 0 is outside the 2 classes"),
    "length_past_the_sequence": (
        {"train_lengths": np.array([2, 5, 0], np.uint8)},
        "train row 1 has length 5, outside 0 to the sequence length 4",
    ),
    "lengths_not_the_ids": (
        {"train_lengths": np.array([2, 2, 0], np.uint8)},
        "the lengths of train's rows add up to 4 token ids, but it holds 5",
    ),
    "labels_not_the_rows": ({"train_labels": np.array([0, 1], np.uint8)}, "train has 3 rows of ids but 2 labels"),
    "float_ids": ({"train_ids": np.array([5.0, 3, 7, 0, 2])}, "train_ids is float64 of shape (5,)"),
    "dense_ids": ({"test_ids": np.array([[1, 2, 3, 4]])}, "test_ids is int64 of shape (1, 4)"),
    "embeddings_short": (
        {"embeddings": np.ones((299, 2), np.float16)},
        "embeddings of shape (299, 2) for a vocabulary of 300 ids",
    ),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_file_that_contradicts_itself_is_one_error_line_naming_the_row(small, tmp_path, damage):
    arrays, words = DAMAGES[damage]
    path = str(tmp_path / "damaged.npz")
    _rewrite(small, path, **arrays)
    with pytest.raises(GANetInputError) as raised:
        load_prepared(path)
    message = str(raised.value)
    assert type(raised.value) is GANetInputError and "\n" not in message
    assert message.startswith(f"{path} is a damaged prepared dataset (") and words in message, message
    assert message.endswith(f"write it again with {prepared_dataset.PREPARE_COMMAND}.")


def test_the_gpu_check_refuses_a_damaged_file_in_one_line_writing_nothing(small, tmp_path):
    # `python -m experiments.gpu_check` reads a prepared file for its train part: a
    # damaged one stops it before any part runs, not after the others wrote.
    path = str(tmp_path / "damaged.npz")
    _rewrite(small, path, **DAMAGES["id_past_the_vocabulary"][0])
    environment = dict(os.environ, KERAS_BACKEND="jax")
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))
    out = tmp_path / "results"
    command = ["-m", "experiments.gpu_check", "--smoke", "--prepared", path, "--out", str(out)]
    done = subprocess.run([sys.executable, *command], cwd=REPO, env=environment, capture_output=True, text=True)
    assert done.returncode == 2, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gpu_check: error: {path} is a damaged prepared dataset")
    assert "token id 300 at train row 1" in lines[0] and not out.exists()
