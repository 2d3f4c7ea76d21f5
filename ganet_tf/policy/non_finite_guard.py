"""Stops a training whose loss or weights stop being finite."""

import keras
import numpy as np

from ganet_tf.errors import GANetInputError


class TrainingDivergedError(GANetInputError):
    """The loss or the weights of a training became NaN or infinite."""


def non_finite_weights(model):
    """Names of the weights of `model` that hold a NaN or an infinity."""
    return [
        variable.path for variable in model.weights if not np.all(np.isfinite(keras.ops.convert_to_numpy(variable)))
    ]


class NonFiniteGuard(keras.callbacks.Callback):
    """Raises `TrainingDivergedError` as soon as training diverges.

    Like `keras.callbacks.TerminateOnNaN` it watches the loss after every
    batch; it also checks the weights at the end of every epoch, and it
    raises instead of stopping, so that nothing after it (the epoch's
    backup, the best-weights checkpoint, the run folder) saves the diverged
    model. Put it first in the callbacks list.

    Example:

    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
    >>> model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    >>> x, y = np.random.rand(16, 4), np.arange(16) % 2
    >>> x[0, 0] = np.nan  # a NaN loss from the first batch on
    >>> model.fit(x, y, callbacks=[NonFiniteGuard()], verbose=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ganet_tf.policy.non_finite_guard.TrainingDivergedError: ...
    """

    def __init__(self, hint="lower --lr"):
        super().__init__()
        self.hint = hint
        self._epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def _diverged(self, what):
        return TrainingDivergedError(
            f"training diverged in epoch {self._epoch + 1} ({what}); nothing "
            f"was saved: {self.hint} (or raise --batch-size) and train again."
        )

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not np.isfinite(float(keras.ops.convert_to_numpy(loss))):
            raise self._diverged(f"loss {float(keras.ops.convert_to_numpy(loss))} at batch {batch + 1}")

    def on_epoch_end(self, epoch, logs=None):
        bad = non_finite_weights(self.model)
        if bad:
            raise self._diverged(f"non-finite weights in {bad[0]}")


def check_finite_weights(model, hint="lower --lr"):
    """Raises `TrainingDivergedError` if a weight of `model` is NaN or infinite."""
    bad = non_finite_weights(model)
    if bad:
        raise TrainingDivergedError(
            f"training diverged (non-finite weights in {bad[0]}); nothing was saved: {hint} and train again."
        )
