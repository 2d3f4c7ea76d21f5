import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from ganet_tf.fitting.resumable_fit import fit_resumably

_RNG = np.random.default_rng(0)
X = _RNG.normal(size=(64, 4)).astype("float32")
Y = _RNG.integers(0, 2, 64).astype("int32")
TRAIN = tf.data.Dataset.from_tensor_slices((X[:48], Y[:48])).batch(16)
VALIDATION = tf.data.Dataset.from_tensor_slices((X[48:], Y[48:])).batch(16)


def _model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
    model.compile(keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy")
    return model


def _kill_after(epochs):
    """A callback that kills the fit once `epochs` epochs have ended."""

    def kill(epoch, logs):
        if epoch + 1 == epochs:
            raise KeyboardInterrupt("simulated kill")

    return keras.callbacks.LambdaCallback(on_epoch_end=kill)


def test_without_a_backup_the_train_seconds_are_the_epochs_seconds():
    fitted = fit_resumably(_model(), TRAIN, VALIDATION, epochs=3, verbose=0)
    assert len(fitted.epoch_seconds) == fitted.epochs_trained == 3 and fitted.best_epoch is None
    assert fitted.history["epoch_seconds"] == fitted.epoch_seconds
    assert fitted.train_seconds == pytest.approx(sum(fitted.epoch_seconds)) and fitted.train_seconds > 0


@pytest.mark.parametrize("patience", [None, 5])
def test_a_resumed_fit_counts_the_seconds_of_every_attempt(tmp_path, patience):
    """Killed after epoch 2 and started again, the run trains epoch 3 only;
    its train seconds, epoch seconds and history count all three epochs,
    and so does a third start that finds nothing left to train."""
    backup = str(tmp_path / "backup")
    options = {"epochs": 3, "patience": patience, "backup_dir": backup, "keep_checkpoint": True, "verbose": 0}
    with pytest.raises(KeyboardInterrupt):
        fit_resumably(_model(), TRAIN, VALIDATION, callbacks=[_kill_after(2)], **options)
    first = json.loads((tmp_path / "backup" / "epoch_seconds.json").read_text())
    assert sorted(first) == ["0", "1"]

    epochs_run = []
    counter = keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: epochs_run.append(epoch))
    fitted = fit_resumably(_model(), TRAIN, VALIDATION, callbacks=[counter], **options)
    assert epochs_run == [2]
    assert fitted.epochs_trained == 3 and fitted.epoch_seconds[:2] == list(first.values())
    assert fitted.history["epoch_seconds"] == fitted.epoch_seconds
    assert fitted.train_seconds == pytest.approx(sum(fitted.epoch_seconds))
    assert len(fitted.history.get("val_loss", [])) == (3 if patience else 0)
    assert (fitted.best_epoch is None) == (patience is None)

    again = fit_resumably(_model(), TRAIN, VALIDATION, callbacks=[counter], **options)
    assert epochs_run == [2]  # nothing left to train
    assert again.epoch_seconds == fitted.epoch_seconds and again.train_seconds == fitted.train_seconds
    assert (again.epochs_trained, again.best_epoch) == (3, fitted.best_epoch)


def test_epochs_trained_before_a_patience_count_in_the_best_epoch(tmp_path):
    """Two epochs without a patience, then two with one: `history.csv`
    holds the last two, and the best epoch counts the first two."""
    options = {"backup_dir": str(tmp_path / "backup"), "keep_checkpoint": True, "verbose": 0}
    fit_resumably(_model(), TRAIN, VALIDATION, epochs=2, **options)
    fitted = fit_resumably(_model(), TRAIN, VALIDATION, epochs=4, patience=5, **options)
    losses = fitted.history["val_loss"]
    assert len(losses) == 2 and fitted.epochs_trained == 4 and len(fitted.epoch_seconds) == 4
    assert fitted.best_epoch == 3 + int(np.argmin(losses))
