import time

import pytest

from ganet_tf.fitting import EpochTimer
from ganet_tf.fitting import TimeBudget


class _Model:
    stop_training = False


def _budget(seconds, earlier):
    timer = EpochTimer()
    timer.seconds = {str(epoch): value for epoch, value in enumerate(earlier)}
    budget = TimeBudget(seconds, timer)
    budget.set_model(_Model())
    return timer, budget


def test_the_earlier_epochs_and_the_one_under_way_count():
    timer, budget = _budget(10.0, [4.0, 5.0])
    budget.on_train_begin()
    budget.on_train_batch_end(0)
    assert not budget.model.stop_training and budget.spent() == pytest.approx(9.0)
    timer.epoch_start = time.perf_counter() - 2.0  # an epoch under way for 2 seconds
    assert budget.spent() >= 11.0
    budget.on_train_batch_end(1)
    assert budget.model.stop_training and budget.stopped


@pytest.mark.parametrize("seconds", [0, -1.0, True, "60"])
def test_a_budget_must_be_a_positive_number(seconds):
    with pytest.raises(ValueError, match="`seconds` must be a number above 0"):
        TimeBudget(seconds, EpochTimer())
