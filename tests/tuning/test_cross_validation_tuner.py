import keras_tuner
import numpy as np
import pytest
import tensorflow as tf

from ganet_tf.tuning import CrossValidationTuner
from ganet_tf.tuning import GANetHyperModel


def _tuner(tmp_path, folds):
    oracle = keras_tuner.oracles.RandomSearchOracle(
        objective=keras_tuner.Objective("val_accuracy", "max"), max_trials=1, seed=1
    )
    hypermodel = GANetHyperModel(num_classes=3, vocabulary_size=20, hidden_dim=2)
    return CrossValidationTuner(
        oracle, hypermodel, folds=folds, fold_seed=0, directory=str(tmp_path), project_name="cv"
    )


def test_folds_partition_train_and_validation(tmp_path):
    tuner = _tuner(tmp_path, folds=3)
    ids = np.arange(20, dtype="int32").reshape(10, 2)
    labels = np.arange(10)
    validation = (ids[:5] + 100, labels[:5] + 100)
    folds = list(tuner._split(ids, labels, validation))
    assert len(folds) == 3
    held = [set(fold[2][1].tolist()) for fold in folds]
    assert sorted(len(h) for h in held) == [5, 5, 5]
    assert set().union(*held) == set(range(10)) | set(range(100, 105))
    for train_ids, train_labels, (_, held_labels) in folds:
        assert not set(train_labels.tolist()) & set(held_labels.tolist())
        assert len(train_labels) + len(held_labels) == 15
        # Rows stay with their labels.
        np.testing.assert_array_equal(train_ids[:, 0] % 100, 2 * (train_labels % 100))


def test_folds_of_datasets(tmp_path):
    tuner = _tuner(tmp_path, folds=2)
    ids = np.arange(12, dtype="int32").reshape(6, 2)
    labels = np.arange(6)
    train = tf.data.Dataset.from_tensor_slices((ids[:4], labels[:4]))
    validation = tf.data.Dataset.from_tensor_slices((ids[4:], labels[4:])).batch(2)
    folds = list(tuner._split(train, None, validation))
    held = [sorted(int(label) for _, label in fold[2]) for fold in folds]
    kept = [sorted(int(label) for _, label in fold[0]) for fold in folds]
    assert held == [[0, 2, 4], [1, 3, 5]] and kept == [[1, 3, 5], [0, 2, 4]]


def test_bad_folds(tmp_path):
    with pytest.raises(ValueError, match="`folds` must be an integer >= 1"):
        _tuner(tmp_path, folds=0)
    tuner = _tuner(tmp_path, folds=4)
    with pytest.raises(ValueError, match="4 folds need at least 4 examples"):
        list(tuner._split(np.zeros([2, 3], "int32"), np.zeros([2]), None))
