import numpy as np
import pytest
from keras import ops

from ganet_tf.layers.act_blocks import act_blocks


@pytest.mark.backends
def test_a_block_closes_at_the_threshold_and_at_the_last_real_child():
    halting = np.array([[0.5, 0.6, 0.2, 0.9, 0.1, 0.0]], "float32")
    real = np.array([[1, 1, 1, 1, 1, 0]], "float32")
    weights, parent, blocks = (ops.convert_to_numpy(x) for x in act_blocks(halting, real, 0.99))
    # Blocks {0, 1} (0.5 + 0.6 >= 0.99), {2, 3}, {4} (the last real child).
    np.testing.assert_array_equal(parent[0, :5], [0, 0, 1, 1, 2])
    np.testing.assert_allclose(weights, [[0.5, 0.5, 0.2, 0.8, 1.0, 0.0]], atol=1e-6)
    np.testing.assert_array_equal(blocks, [3])


@pytest.mark.backends
def test_the_largest_th_child_closes_a_block():
    halting = np.full((2, 5), 0.1, "float32")
    real = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], "float32")
    _, parent, blocks = (ops.convert_to_numpy(x) for x in act_blocks(halting * real, real, 0.99, largest=2))
    np.testing.assert_array_equal(parent[0], [0, 0, 1, 1, 2])
    np.testing.assert_array_equal(parent[1, :2], [0, 0])
    np.testing.assert_array_equal(blocks, [3, 1])
