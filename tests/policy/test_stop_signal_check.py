"""A SIGTERM stops the fit at the next batch, even one that came inside a `__del__`."""

import keras
import numpy as np
import pytest

from ganet_tf.policy import StopSignalCheck
from ganet_tf.policy import Terminated
from ganet_tf.policy import install_signal_handlers
from ganet_tf.policy import interruption_message
from ganet_tf.policy import restore_signal_handlers
from tests.command_checks import SigtermWhileCollected


class _SignalAtBatch(keras.callbacks.Callback):
    def __init__(self, batch):
        super().__init__()
        self.signal_batch, self.batches = batch, []

    def on_train_batch_end(self, batch, logs=None):
        self.batches.append(batch)
        if batch == self.signal_batch:
            SigtermWhileCollected()  # collected at once: the handler runs in `__del__`


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("check", [True, False])
def test_a_sigterm_in_a_del_stops_the_fit_at_the_next_batch(check):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.zeros((40, 3), "float32"), np.zeros((40, 1), "float32")
    signaller = _SignalAtBatch(batch=1)
    callbacks = [signaller, StopSignalCheck()] if check else [signaller]
    previous = install_signal_handlers()
    try:
        if not check:  # the handler raises nothing: without the check the fit runs to its end
            model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=callbacks)
            assert signaller.batches == list(range(10))
            return
        with pytest.raises(Terminated) as raised:
            model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=callbacks)
        assert signaller.batches == [0, 1]
        assert interruption_message(raised.value)[0] == 143
        model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[StopSignalCheck()])  # reported: forgotten
    finally:
        restore_signal_handlers(previous)
