"""The harness's checks fail on layers that break what they check."""

import keras
import numpy as np
import pytest
from keras import ops

from tests.layer_harness import check_config_round_trip
from tests.layer_harness import check_fit_step
from tests.layer_harness import check_masked_rows

INPUTS = np.random.default_rng(0).normal(size=[2, 4, 3]).astype("float32")
MASK = np.array([[1, 1, 0, 0], [0, 0, 0, 0]], bool)


class ForgetsItsArgument(keras.layers.Layer):
    def __init__(self, units=2, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def get_config(self):
        return {"name": self.name}


class IgnoresTheMask(keras.layers.Layer):
    supports_masking = True

    def call(self, inputs, mask=None):
        return ops.sum(inputs, axis=1)


class StopsTheGradient(keras.layers.Layer):
    def call(self, inputs):
        return ops.stop_gradient(inputs)


def test_config_check_fails_on_a_missing_argument():
    with pytest.raises(AssertionError, match="units"):
        check_config_round_trip(ForgetsItsArgument, {"units": 3})


def test_masked_row_check_fails_on_a_layer_that_reads_padding():
    with pytest.raises(AssertionError):
        check_masked_rows(IgnoresTheMask, {}, {"inputs": INPUTS, "mask": MASK})


def test_masked_row_check_fails_on_a_mask_that_masks_nothing():
    with pytest.raises(AssertionError, match="masks nothing"):
        check_masked_rows(IgnoresTheMask, {}, {"inputs": INPUTS, "mask": np.ones([2, 4], bool)})


def test_fit_check_fails_on_a_weightless_layer_that_passes_no_gradient():
    with pytest.raises(AssertionError, match="gradient"):
        check_fit_step(StopsTheGradient, {}, {"inputs": INPUTS})
