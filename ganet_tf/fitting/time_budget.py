"""`TimeBudget`: ends training once the run's epochs have taken a given number of seconds."""

import time

import keras


class TimeBudget(keras.callbacks.Callback):
    """Stops `fit` once the run's training time reaches `seconds`.

    The training time is that of an `EpochTimer`: the seconds of every
    finished epoch, of this attempt and of the earlier attempts of a resumed
    run, plus the time of the epoch under way. It is checked after every
    training batch and every epoch: the batch that reaches the budget ends
    the epoch, which is then validated and logged like any other (a shorter
    last epoch), and training ends; an epoch whose validation reaches it is
    the last. Two models given the same budget are compared at equal
    wall-clock time, validation included.

    Args:
        seconds: the budget, a number above 0.
        timer: the `EpochTimer` of the same `fit` (placed before this
            callback), whose seconds count against the budget.

    Example:

    >>> from ganet_tf.fitting import EpochTimer
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
    >>> model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    >>> x, y = np.random.rand(16, 4), np.arange(16) % 2
    >>> timer = EpochTimer()
    >>> history = model.fit(x, y, epochs=10_000, callbacks=[timer, TimeBudget(1, timer)], verbose=0)
    >>> len(history.epoch) < 10_000  # stopped after a second of training
    True
    """

    def __init__(self, seconds, timer):
        super().__init__()
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not seconds > 0:
            raise ValueError(f"`seconds` must be a number above 0. Received: seconds={seconds}")
        self.seconds = float(seconds)
        self.timer = timer
        self.stopped = False

    def spent(self):
        """The seconds the run has trained: its finished epochs and the one under way."""
        running = time.perf_counter() - self.timer.epoch_start if self.timer.epoch_start is not None else 0.0
        return sum(self.timer.epoch_seconds) + running

    def used_up(self):
        """Whether the run has trained for the budget's seconds."""
        return self.spent() >= self.seconds

    def on_train_begin(self, logs=None):
        self.stopped = False

    def on_train_batch_end(self, batch, logs=None):
        self._check()

    def on_epoch_end(self, epoch, logs=None):
        self._check()  # a validation that took the budget: no other epoch begins

    def _check(self):
        if self.used_up():
            self.stopped = True
            self.model.stop_training = True
