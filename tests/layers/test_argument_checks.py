import numpy as np
import pytest

from ganet_tf.layers.argument_checks import is_real


@pytest.mark.parametrize("value", [0, 1, -2.5, 1e-3, np.float32(0.5), np.int64(3)])
def test_finite_real_numbers_pass(value):
    assert is_real(value)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -np.inf, np.float32("nan"), True, "1", None, [1]])
def test_everything_else_fails(value):
    assert not is_real(value)
