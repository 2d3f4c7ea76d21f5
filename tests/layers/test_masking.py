import warnings

import numpy as np
import pytest
from keras import ops

from ganet_tf.layers.masking import masked_softmax


def _reference(scores, allowed):
    shifted = np.where(allowed, scores, -np.inf)
    exp = np.where(allowed, np.exp(shifted - shifted.max(-1, keepdims=True, initial=-1e30)), 0.0)
    total = exp.sum(-1, keepdims=True)
    return np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)


@pytest.mark.backends
def test_masked_softmax_matches_numpy_and_zeroes_empty_rows():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(3, 5)).astype("float32")
    allowed = np.array([[1, 1, 0, 1, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]], bool)
    weights = ops.convert_to_numpy(masked_softmax(ops.convert_to_tensor(scores), allowed))
    np.testing.assert_allclose(weights, _reference(scores, allowed), atol=1e-6)
    np.testing.assert_array_equal(weights[1], 0.0)


def test_masked_softmax_over_one_node_is_one_without_warning():
    scores = ops.convert_to_tensor(np.array([[[0.3], [-2.0], [5.0]]], "float32"))
    allowed = np.array([[[True], [False], [True]]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        weights = ops.convert_to_numpy(masked_softmax(scores, allowed))
    np.testing.assert_array_equal(weights[..., 0], [[1.0, 0.0, 1.0]])
