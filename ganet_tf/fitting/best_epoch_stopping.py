"""Early stopping that ends `fit` with the best epoch's weights: the one rule of `train` and `seq2seq`."""

import csv
import os

import keras
import numpy as np

from ganet_tf.policy.backup import load_backup_weights
from ganet_tf.policy.backup import save_weights
from ganet_tf.policy.backup import unreadable_backup

# What a resumable run's `--backup-dir` keeps for early stopping: one row of
# logs per finished epoch, and the best epoch's weights.
HISTORY_FILE = "history.csv"
BEST_WEIGHTS_FILE = "best.weights.h5"


class BestEpochStopping(keras.callbacks.EarlyStopping):
    """Stops after `patience` epochs without a better `monitor`; keeps the best.

    The one best-weights rule of `train` and `seq2seq`: an epoch is better when its
    `monitor` value is strictly better than every earlier one (the first of
    equal values stays the best), training stops once `patience` epochs have
    passed without one, and `fit` ends with the weights of the best epoch.
    They are kept in memory, or, given `path`, written to that file
    (atomically) at each new best, so that they survive a killed process.

    A resumed attempt passes `best`, the best value of the earlier attempts,
    and `waited`, the epochs since it: Keras' `EarlyStopping` starts each
    `fit` afresh, and its `baseline` does not stand in for the best value
    (the first epoch of a `fit` always counts as an improvement), so a
    resumed run would train on past the point where the uninterrupted run
    stops. The weights of `path` are then those of the earlier attempts'
    best epoch until this attempt beats it.

    Args:
        monitor: the logged quantity to watch, e.g. `"val_loss"`.
        mode: `"min"` or `"max"`, the better direction of `monitor`.
        patience: epochs without a better value before training stops.
        path: optional `.weights.h5` file for the best weights.
        best: optional best value of earlier attempts (with `path`).
        waited: epochs since `best`.

    Example:

    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
    >>> # A learning rate of 0: no epoch beats the first (epoch 0).
    >>> model.compile(optimizer=keras.optimizers.SGD(0.0), loss="sparse_categorical_crossentropy")
    >>> x, y = np.random.rand(16, 4), np.arange(16) % 2
    >>> stopper = BestEpochStopping("val_loss", "min", patience=3)
    >>> history = model.fit(x, y, validation_split=0.25, epochs=30, callbacks=[stopper], verbose=0)
    >>> len(history.epoch), stopper.best_epoch  # the epoch whose weights the model now holds
    (4, 0)
    """

    def __init__(self, monitor, mode, patience, path=None, best=None, waited=0):
        if best is not None and path is None:
            raise ValueError(
                "`best` continues an earlier attempt, whose best weights are in a file: pass `path` too. "
                f"Received: best={best}, path=None"
            )
        super().__init__(monitor=monitor, mode=mode, patience=patience)
        self.path = path
        self.resumed_best = best
        self.resumed_wait = waited

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        self.best = self.resumed_best
        self.wait = self.resumed_wait
        self.best_epoch = None

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if self.best_epoch != epoch:
            return
        if self.path is None:
            self.best_weights = self.model.get_weights()
        else:
            save_weights(self.model, self.path)

    def on_train_end(self, logs=None):
        super().on_train_end(logs)
        if self.path is not None:
            load_backup_weights(self.model, self.path)
        elif self.best_weights is not None:
            self.model.set_weights(self.best_weights)


def best_epoch(values, mode):
    """Index of the best of `values` (`mode` `"min"` or `"max"`; the first on ties)."""
    return int(np.argmin(values) if mode == "min" else np.argmax(values))


def read_history(path):
    """`{log name: [one float per finished epoch]}` of a `CSVLogger` file; `{}` if there is none."""
    if not os.path.isfile(path):
        return {}
    try:
        with open(path, newline="") as handle:
            rows = list(csv.DictReader(handle))
        return {key: [float(row[key]) for row in rows] for key in (rows[0] if rows else {})}
    except (OSError, ValueError, TypeError, csv.Error) as error:
        raise unreadable_backup(path, error) from None


def backup_history(backup_dir):
    """The logs of every attempt of a run backed up in `backup_dir` (`read_history`)."""
    return read_history(os.path.join(backup_dir, HISTORY_FILE))


def load_best_weights(model, backup_dir):
    """Loads the best epoch's weights that the attempts wrote to `backup_dir`."""
    load_backup_weights(model, os.path.join(backup_dir, BEST_WEIGHTS_FILE))


def stopping_callbacks(monitor, mode, patience, epochs, backup_dir=None):
    """`(callbacks, finished)`: early stopping for `fit`, resumable with `backup_dir`.

    Without `backup_dir`, `callbacks` is one in-memory `BestEpochStopping`
    and `finished` is False. With it, `callbacks` logs each epoch to
    `backup_dir/history.csv` (a `CSVLogger` appending) and stops with a
    `BestEpochStopping` that writes the best weights to
    `backup_dir/best.weights.h5` and continues from the attempts the history
    records; `finished` says whether those attempts already ended the run
    (`epochs` trained, or `patience` epochs passed since the best), in which
    case the caller trains nothing and calls `load_best_weights` instead.
    """
    if backup_dir is None:
        return [BestEpochStopping(monitor, mode, patience)], False
    logger = keras.callbacks.CSVLogger(os.path.join(backup_dir, HISTORY_FILE), append=True)
    path = os.path.join(backup_dir, BEST_WEIGHTS_FILE)
    done = backup_history(backup_dir).get(monitor, [])
    if not done:
        return [logger, BestEpochStopping(monitor, mode, patience, path=path)], False
    best = best_epoch(done, mode)
    waited = len(done) - 1 - best
    stopper = BestEpochStopping(monitor, mode, patience, path=path, best=done[best], waited=waited)
    return [logger, stopper], len(done) >= epochs or waited >= patience
