"""`fit_resumably`: the one fit loop of `train` and `seq2seq`, resumable with a `--backup-dir`."""

import dataclasses
import os

from ganet_tf.fitting.best_epoch_stopping import backup_history
from ganet_tf.fitting.best_epoch_stopping import best_epoch
from ganet_tf.fitting.best_epoch_stopping import load_best_weights
from ganet_tf.fitting.best_epoch_stopping import stopping_callbacks
from ganet_tf.fitting.epoch_timer import EpochTimer
from ganet_tf.fitting.time_budget import TimeBudget
from ganet_tf.policy.backup import EPOCH_SECONDS_FILE
from ganet_tf.policy.backup import VALIDATION_SECONDS_FILE
from ganet_tf.policy.backup import AtomicBackupAndRestore
from ganet_tf.policy.non_finite_guard import NonFiniteGuard
from ganet_tf.policy.stop_signal_check import StopSignalCheck

# The folder of a `--backup-dir` that Keras' `BackupAndRestore` writes.
CHECKPOINT_FOLDER = "backup"
# The epoch timer's files in a `--backup-dir`.
_TIMER_FILES = (EPOCH_SECONDS_FILE, VALIDATION_SECONDS_FILE)


@dataclasses.dataclass
class FittedRun:
    """What `fit_resumably` trained, over every attempt of a resumed run.

    Attributes:
        history: `{log name: one value per epoch}`, `epoch_seconds` among
            them. With a backup folder, the logs are those of every attempt
            that early stopping watched (`history.csv`: none for epochs
            trained without a patience).
        epoch_seconds: the seconds of every epoch trained, in epoch order
            and over every attempt.
        epochs_trained: the epochs of every attempt.
        best_epoch: the epoch (from 1) whose weights the model holds, or
            None without a patience.
        validation_seconds: the seconds of each epoch's validation, beside
            `epoch_seconds` (part of them); None for an epoch of an earlier
            attempt whose validation was not timed.
    """

    history: dict
    epoch_seconds: list
    epochs_trained: int
    best_epoch: int = None
    validation_seconds: list = None

    @property
    def train_seconds(self):
        """The training time of the run: the seconds of every epoch of every attempt."""
        return sum(self.epoch_seconds)


def fit_resumably(
    model,
    train,
    validation,
    epochs,
    monitor="val_loss",
    mode="min",
    patience=None,
    backup_dir=None,
    keep_checkpoint=False,
    callbacks=(),
    verbose=1,
    steps_per_epoch=None,
    time_budget=None,
):
    """Fits `model`, resumably, with the reliability policy's callbacks.

    The guard against non-finite losses and weights comes first
    (`NonFiniteGuard`), then the stop-signal check after every batch. With
    a `patience`, training stops after `patience` epochs without a better
    `monitor` and ends with the best epoch's weights (`BestEpochStopping`);
    without one, every epoch trains and the last one's weights are kept.

    With `backup_dir`, a killed process started again resumes from its last
    finished epoch: Keras' `BackupAndRestore` (in `backup_dir/backup`)
    restores weights, optimizer and epoch; the epoch times go to
    `epoch_seconds.json`, and, with a patience, the logs to `history.csv`
    and the best weights to `best.weights.h5`, so that early stopping
    continues from the earlier attempts. An attempt that finds the run
    already stopped trains nothing and loads the best weights.

    Args:
        model: a compiled `keras.Model`.
        train: the training dataset (a `tf.data` pipeline that reshuffles
            itself: `fit` does not shuffle it).
        validation: the validation dataset.
        epochs: the most epochs to train, over every attempt.
        monitor: the logged quantity early stopping watches.
        mode: `"min"` or `"max"`, the better direction of `monitor`.
        patience: epochs without a better `monitor` before training stops,
            or None to train every epoch.
        backup_dir: optional folder that makes the fit resumable (checked
            and fingerprinted by `ganet_tf.policy.prepare_backup_dir`).
        keep_checkpoint: keep `backup_dir/backup` once training ends (Keras
            deletes it), so that a run that fails after training resumes
            with nothing left to train even without a patience.
        callbacks: more callbacks, after this function's; their logs carry
            each epoch's `epoch_seconds`.
        verbose: `fit`'s verbosity.
        steps_per_epoch: optional batches per epoch: validation, the
            backup, the epoch timer and the patience then come every
            `steps_per_epoch` batches. `train` must then repeat itself (its
            batches continue from one epoch to the next).
        time_budget: optional seconds of training (`TimeBudget`), over
            every attempt, epochs' validation included: the batch that
            reaches them ends its epoch and the training. With `backup_dir`
            it needs a `patience` (an attempt that finds the budget spent
            loads the best weights).

    Returns:
        A `FittedRun`; its `train_seconds` are the seconds of every epoch of
        every attempt.

    Example:

    >>> import tensorflow as tf
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
    >>> model.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    >>> x, y = np.random.rand(16, 4), np.arange(16) % 2
    >>> train = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    >>> validation = train  # the loss of every epoch is lower than the last's
    >>> fitted = fit_resumably(model, train, validation, epochs=3, patience=2, backup_dir="backup", verbose=0)
    >>> fitted.epochs_trained, fitted.best_epoch, len(fitted.epoch_seconds)
    (3, 3, 3)
    """
    if time_budget is not None and backup_dir and patience is None:
        raise ValueError(
            "A `time_budget` with a `backup_dir` needs a `patience`: an attempt that finds the budget spent "
            f"ends with the best weights. Received: time_budget={time_budget}, patience=None"
        )
    timer = EpochTimer(*(os.path.join(backup_dir, name) for name in _TIMER_FILES) if backup_dir else ())
    budget = [TimeBudget(time_budget, timer)] if time_budget is not None else []
    resumable = []
    if backup_dir:
        os.makedirs(backup_dir, exist_ok=True)
        checkpoint = os.path.join(backup_dir, CHECKPOINT_FOLDER)
        resumable = [AtomicBackupAndRestore(checkpoint, delete_checkpoint=not keep_checkpoint)]
    stopping, finished = [], False
    if patience is not None:
        stopping, finished = stopping_callbacks(monitor, mode, patience, epochs, backup_dir)
        timer.load()  # the earlier attempts' seconds, which count against the budget
        finished = finished or any(limit.used_up() for limit in budget)
    if finished:  # an earlier attempt stopped: its best weights, nothing to train
        load_best_weights(model, backup_dir)
        history = {}
    else:
        history = model.fit(
            train,
            validation_data=validation,
            epochs=epochs,
            steps_per_epoch=steps_per_epoch,
            # The timer after early stopping, whose `history.csv` keeps the columns it began with.
            callbacks=[NonFiniteGuard(), StopSignalCheck(), *resumable, *stopping, timer, *budget, *callbacks],
            verbose=verbose,
            shuffle=False,
        ).history
    if backup_dir:  # every attempt's logs and epoch times
        history = backup_history(backup_dir)
    history = {**history, "epoch_seconds": timer.epoch_seconds}
    watched = history.get(monitor, [])
    # A backup from before `epoch_seconds.json` times only the later
    # attempts; epochs trained before `--patience` was given have no row in
    # `history.csv`, so the best epoch counts them too.
    epochs_trained = max(len(timer.seconds), len(watched))
    best = None
    if patience is not None and watched:
        best = epochs_trained - len(watched) + best_epoch(watched, mode) + 1
    return FittedRun(history, timer.epoch_seconds, epochs_trained, best, timer.validation_seconds)
