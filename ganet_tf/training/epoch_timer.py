import time

import keras


class EpochTimer(keras.callbacks.Callback):
    """Records the wall-clock seconds of every training epoch.

    After `fit`, `epoch_seconds` lists one duration per epoch (validation
    included), and the logs of each epoch carry `epoch_seconds`.

    Example:

    >>> timer = EpochTimer()
    >>> model.fit(x, y, epochs=2, callbacks=[timer])
    >>> timer.epoch_seconds
    [3.1, 2.4]
    """

    def __init__(self):
        super().__init__()
        self.epoch_seconds = []
        self._start = None

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        seconds = time.perf_counter() - self._start
        self.epoch_seconds.append(seconds)
        if logs is not None:
            logs["epoch_seconds"] = seconds
