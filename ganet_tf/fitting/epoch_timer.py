"""`EpochTimer`: the seconds of every epoch, across the attempts of a resumed run."""

import json
import os
import time

import keras

from ganet_tf.policy.backup import unreadable_backup
from ganet_tf.policy.interruption import critical_section
from ganet_tf.policy.output_folder import write_json


class EpochTimer(keras.callbacks.Callback):
    """Records the wall-clock seconds of every training epoch and of its validation.

    `seconds` maps each finished epoch (its index, a string) to its
    duration, validation included; `epoch_seconds` lists them in epoch
    order. `validation` maps each epoch to the seconds of its validation
    (0 for an epoch not validated); `validation_seconds` lists them beside
    `epoch_seconds`, None for an epoch whose validation was not timed (an
    earlier attempt's, from before validation was timed). The logs of each
    epoch carry its `epoch_seconds` and `validation_seconds` (the fit's
    history holds them).

    Args:
        path: optional JSON file `{epoch: seconds}` (a `--backup-dir`'s
            `epoch_seconds.json`): the seconds of earlier attempts are read
            from it when training begins (`load`) and it is rewritten
            atomically after every epoch (a stop signal waits for the next
            batch), so a resumed run counts every epoch once. An unreadable
            file is one error line naming `--restart`.
        validation_path: optional JSON file `{epoch: seconds}` for the
            validation seconds, read and written like `path`.

    Example:

    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
    >>> model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    >>> x, y = np.random.rand(16, 4), np.arange(16) % 2
    >>> timer = EpochTimer()
    >>> history = model.fit(x, y, validation_split=0.25, epochs=2, callbacks=[timer], verbose=0)
    >>> len(timer.epoch_seconds), len(timer.validation_seconds)  # e.g. [0.52, 0.03], [0.11, 0.01]
    (2, 2)
    """

    def __init__(self, path=None, validation_path=None):
        super().__init__()
        self.path = path
        self.validation_path = validation_path
        self.seconds = {}
        self.validation = {}
        # `time.perf_counter()` when the epoch under way began (None between epochs).
        self.epoch_start = None
        self._epoch = None
        self._validation_start = None

    @property
    def epoch_seconds(self):
        return list(self.seconds.values())

    @property
    def validation_seconds(self):
        return [self.validation.get(epoch) for epoch in self.seconds]

    def load(self):
        """Reads the seconds of the earlier attempts' epochs from `path` (and `validation_path`), if any."""
        self.seconds = _read(self.path)
        self.validation = _read(self.validation_path)

    def on_train_begin(self, logs=None):
        self.load()

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch_start = time.perf_counter()
        self._epoch = str(epoch)
        self.validation[self._epoch] = 0.0

    def on_test_begin(self, logs=None):
        if self.epoch_start is not None:  # the validation of `fit`'s epoch under way
            self._validation_start = time.perf_counter()

    def on_test_end(self, logs=None):
        if self._validation_start is not None:
            self.validation[self._epoch] += time.perf_counter() - self._validation_start
            self._validation_start = None

    def on_epoch_end(self, epoch, logs=None):
        seconds = time.perf_counter() - self.epoch_start
        self.epoch_start = None
        self.seconds[str(epoch)] = seconds
        with critical_section(raise_after=False):
            for path, values in ((self.path, self.seconds), (self.validation_path, self.validation)):
                if path:
                    write_json(path, values)
        if logs is not None:
            logs["epoch_seconds"] = seconds
            logs["validation_seconds"] = self.validation[str(epoch)]


def _read(path):
    """`{epoch: seconds}` of a timer's JSON file; `{}` without one."""
    if not path or not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as handle:
            return dict(json.load(handle))
    except (OSError, ValueError, TypeError) as error:
        raise unreadable_backup(path, error) from error
