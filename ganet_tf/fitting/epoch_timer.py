"""`EpochTimer`: the seconds of every epoch, across the attempts of a resumed run."""

import json
import os
import time

import keras

from ganet_tf.policy.backup import unreadable_backup
from ganet_tf.policy.interruption import critical_section
from ganet_tf.policy.output_folder import write_json


class EpochTimer(keras.callbacks.Callback):
    """Records the wall-clock seconds of every training epoch.

    `seconds` maps each finished epoch (its index, a string) to its
    duration, validation included; `epoch_seconds` lists them in epoch
    order. The logs of each epoch carry its `epoch_seconds` (the fit's
    history holds them).

    Args:
        path: optional JSON file `{epoch: seconds}` (a `--backup-dir`'s
            `epoch_seconds.json`): the seconds of earlier attempts are read
            from it when training begins (`load`) and it is rewritten
            atomically after every epoch (a stop signal waits for the next
            batch), so a resumed run counts every epoch once. An unreadable
            file is one error line naming `--restart`.

    Example:

    >>> timer = EpochTimer()
    >>> model.fit(x, y, epochs=2, callbacks=[timer])
    >>> timer.epoch_seconds
    [3.1, 2.4]
    """

    def __init__(self, path=None):
        super().__init__()
        self.path = path
        self.seconds = {}
        # `time.perf_counter()` when the epoch under way began (None between epochs).
        self.epoch_start = None

    @property
    def epoch_seconds(self):
        return list(self.seconds.values())

    def load(self):
        """Reads the seconds of the earlier attempts' epochs from `path`, if any."""
        if self.path and os.path.exists(self.path):
            try:
                with open(self.path, encoding="utf-8") as handle:
                    self.seconds = dict(json.load(handle))
            except (OSError, ValueError, TypeError) as error:
                raise unreadable_backup(self.path, error) from error

    def on_train_begin(self, logs=None):
        self.load()

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch_start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        seconds = time.perf_counter() - self.epoch_start
        self.epoch_start = None
        self.seconds[str(epoch)] = seconds
        if self.path:
            with critical_section(raise_after=False):
                write_json(self.path, self.seconds)
        if logs is not None:
            logs["epoch_seconds"] = seconds
