import json
import time

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


class _SlowBatches(keras.callbacks.Callback):
    """Each training batch takes at least `seconds`; counts the batches of each epoch."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds
        self.batches = []

    def on_epoch_begin(self, epoch, logs=None):
        self.batches.append(0)

    def on_train_batch_end(self, batch, logs=None):
        time.sleep(self.seconds)
        self.batches[-1] += 1


def test_steps_per_epoch_makes_epochs_of_that_many_batches_of_a_repeated_dataset():
    slow = _SlowBatches(0)
    fitted = fit_resumably(
        _model(), TRAIN.repeat(), VALIDATION, epochs=4, steps_per_epoch=5, callbacks=[slow], verbose=0
    )
    # 3 batches a pass: the epochs of 5 continue one another over the passes.
    assert slow.batches == [5, 5, 5, 5] and fitted.epochs_trained == 4


def test_a_time_budget_ends_the_epoch_that_reaches_it_and_the_fit():
    slow = _SlowBatches(0.1)
    fitted = fit_resumably(
        _model(),
        TRAIN.repeat(),
        VALIDATION,
        epochs=100,
        steps_per_epoch=3,
        time_budget=1.0,
        callbacks=[slow],
        verbose=0,
    )
    assert 1 <= fitted.epochs_trained < 100 and len(slow.batches) == fitted.epochs_trained
    # Each epoch before the last took 3 batches; the last ended at the batch that reached the budget.
    assert all(batches == 3 for batches in slow.batches[:-1]) and 1 <= slow.batches[-1] <= 3
    assert sum(fitted.epoch_seconds[:-1]) < 1.0 <= fitted.train_seconds
    assert len(fitted.history["val_loss"]) == fitted.epochs_trained  # the last epoch is validated too


def test_a_resumed_run_counts_its_earlier_seconds_against_the_budget(tmp_path):
    """Killed after 2 epochs, a run whose budget those epochs already spent
    trains nothing more and ends with its best weights; a larger budget
    (a change a resumed run may make) trains on."""
    options = {"patience": 50, "backup_dir": str(tmp_path / "backup"), "keep_checkpoint": True, "verbose": 0}
    with pytest.raises(KeyboardInterrupt):
        fit_resumably(_model(), TRAIN, VALIDATION, epochs=10, callbacks=[_SlowBatches(0.05), _kill_after(2)], **options)
    spent = sum(json.loads((tmp_path / "backup" / "epoch_seconds.json").read_text()).values())
    slow = _SlowBatches(0.05)
    fitted = fit_resumably(_model(), TRAIN, VALIDATION, epochs=10, time_budget=spent, callbacks=[slow], **options)
    assert slow.batches == [] and fitted.epochs_trained == 2 and fitted.best_epoch in (1, 2)
    fitted = fit_resumably(_model(), TRAIN, VALIDATION, epochs=10, time_budget=spent + 0.2, callbacks=[slow], **options)
    assert len(slow.batches) >= 1 and fitted.epochs_trained == 2 + len(slow.batches) < 10
    assert fitted.train_seconds >= spent + 0.2


def test_a_time_budget_with_a_backup_needs_a_patience(tmp_path):
    with pytest.raises(ValueError, match="needs a `patience`"):
        fit_resumably(_model(), TRAIN, VALIDATION, epochs=2, time_budget=10, backup_dir=str(tmp_path), verbose=0)


def test_each_epochs_validation_is_timed_across_attempts(tmp_path):
    """The validation seconds are part of each epoch's seconds, for the
    epochs of a killed attempt too; an attempt from before they were timed
    (no `validation_seconds.json`) leaves its epochs' figure unknown."""
    backup = tmp_path / "backup"
    options = {"epochs": 3, "patience": 5, "backup_dir": str(backup), "keep_checkpoint": True, "verbose": 0}
    with pytest.raises(KeyboardInterrupt):
        fit_resumably(_model(), TRAIN, VALIDATION, callbacks=[_kill_after(2)], **options)
    (backup / "validation_seconds.json").write_text(json.dumps({"0": 0.01}))  # epoch 1 untimed
    fitted = fit_resumably(_model(), TRAIN, VALIDATION, **options)
    assert len(fitted.validation_seconds) == 3 and fitted.validation_seconds[1] is None
    for epoch in (0, 2):
        assert 0 < fitted.validation_seconds[epoch] < fitted.epoch_seconds[epoch]
    without_validation = fit_resumably(_model(), TRAIN, None, epochs=1, verbose=0)
    assert without_validation.validation_seconds == [0.0]
