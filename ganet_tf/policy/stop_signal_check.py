"""Stops a training at the next batch when a stop signal's exception was lost."""

import keras

from ganet_tf.policy.interruption import check_stop_signal


class StopSignalCheck(keras.callbacks.Callback):
    """Raises the interruption of a Ctrl-C or SIGTERM that did not stop the fit.

    `ganet_tf`'s commands stop on SIGTERM by raising an exception from the
    signal handler. Python runs a handler wherever the main thread is when
    the signal comes; inside a `__del__` method or a garbage-collector
    callback (JAX and TensorFlow install some) an exception is printed and
    ignored, and the training would go on. This callback raises it again
    after every batch and epoch, with `check_stop_signal`.

    Example:

    >>> model.fit(x, y, callbacks=[StopSignalCheck(), NonFiniteGuard()])
    """

    def on_train_batch_end(self, batch, logs=None):
        check_stop_signal()

    def on_test_batch_end(self, batch, logs=None):
        check_stop_signal()

    def on_predict_batch_end(self, batch, logs=None):
        check_stop_signal()

    def on_epoch_end(self, epoch, logs=None):
        check_stop_signal()
