"""Stops a fit at the next batch after Ctrl-C or SIGTERM."""

import keras

from ganet_tf.policy.interruption import check_stop_signal


class StopSignalCheck(keras.callbacks.Callback):
    """Raises the interruption of a Ctrl-C or SIGTERM that came during the fit.

    The signal handler of `ganet_tf`'s commands only records the signal
    (`ganet_tf.policy.interruption`); this callback raises it after every
    batch and epoch, with `check_stop_signal`, so `train`, `seq2seq` and
    `tune` stop there, with the epoch's backup as it was.

    Example:

    >>> from ganet_tf.policy import NonFiniteGuard
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
    >>> model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    >>> x, y = np.random.rand(16, 4), np.arange(16) % 2
    >>> history = model.fit(x, y, callbacks=[StopSignalCheck(), NonFiniteGuard()], verbose=0)
    """

    def on_train_batch_end(self, batch, logs=None):
        check_stop_signal()

    def on_test_batch_end(self, batch, logs=None):
        check_stop_signal()

    def on_predict_batch_end(self, batch, logs=None):
        check_stop_signal()

    def on_epoch_end(self, epoch, logs=None):
        check_stop_signal()
