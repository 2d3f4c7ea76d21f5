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


def test_ids_are_stored_ragged_in_the_narrowest_type(tmp_path):
    ids = {"train": np.array([[5, 3, 0, 0], [7, 0, 2, 0], [0, 0, 0, 0]]), "validation": np.zeros((0, 4), int)}
    ids["test"] = np.array([[1, 2, 3, 4]])
    labels = {"train": [0, 1, 1], "validation": [], "test": [1]}
    path = str(tmp_path / "small.npz")
    embeddings = np.ones((300, 2))
    prepared_dataset.save_prepared(path, ids, labels, ["a", "b"], ["w"] * 298, embeddings, {"dataset": "toy"})
    with np.load(path) as archive:
        assert archive["train_ids"].dtype == np.uint16  # 300 ids
        np.testing.assert_array_equal(archive["train_ids"], [5, 3, 7, 0, 2])
        np.testing.assert_array_equal(archive["train_lengths"], [2, 3, 0])
        assert archive["embeddings"].dtype == np.float16
    loaded = load_prepared(path)
    for split in ids:
        np.testing.assert_array_equal(loaded.ids[split], ids[split])
    assert loaded.vocabulary_size == 300 and loaded.num_classes == 2
    # Above 65,536 ids: 16 low bits and 8 high bits in two planes.
    wide = {split: value * 1000 for split, value in ids.items()}
    vocabulary = ["w"] * (2**17)
    prepared_dataset.save_prepared(path, wide, labels, ["a", "b"], vocabulary, embeddings, {"dataset": "toy"})
    with np.load(path) as archive:
        assert archive["train_ids"].dtype == np.uint16 and archive["train_ids_high"].dtype == np.uint8
    for split in ids:
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


def _rewrite_metadata(source, target, **changes):
    with np.load(source) as archive:
        arrays = dict(archive)
    metadata = json.loads(arrays["metadata"].tobytes())
    arrays["metadata"] = np.frombuffer(json.dumps({**metadata, **changes}).encode(), np.uint8)
    np.savez_compressed(target, **arrays)


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
