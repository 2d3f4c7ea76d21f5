import numpy as np
import pytest
from keras import ops

from ganet_tf.layers.sibling_groups import group_softmax
from ganet_tf.layers.sibling_groups import group_winners
from ganet_tf.layers.sibling_groups import sibling_groups

# Two rows of 5 children: row 0 in groups {0, 1}, {2, 3, 4}; row 1 in
# {0, 1, 2}, {3}, its child 4 padding.
PARENT = np.array([[0, 0, 1, 1, 1], [0, 0, 0, 1, 0]])
MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]], bool)
PARENTS = np.eye(5, dtype="float32")[PARENT] * MASK[..., None]  # (2, 5, 5)


def _reference_softmax(scores):
    weights = np.zeros_like(scores)
    for row in range(2):
        for group in set(PARENT[row][MASK[row]]):
            members = (PARENT[row] == group) & MASK[row]
            exp = np.exp(scores[row][:, members] - scores[row][:, members].max(-1, keepdims=True))
            weights[row][:, members] = exp / exp.sum(-1, keepdims=True)
    return weights


@pytest.mark.backends
def test_group_softmax_is_a_softmax_within_each_group_and_zero_at_padding():
    scores = np.random.default_rng(0).normal(size=(2, 3, 5)).astype("float32")
    weights = ops.convert_to_numpy(group_softmax(scores, sibling_groups(PARENTS), MASK))
    np.testing.assert_allclose(weights, _reference_softmax(scores), atol=1e-6)
    np.testing.assert_array_equal(weights[1, :, 4], 0.0)


@pytest.mark.backends
def test_group_winners_mark_the_first_largest_child_of_each_group():
    weights = np.array(
        [[[0.3, 0.7, 0.2, 0.5, 0.5]], [[0.4, 0.4, 0.2, 1.0, 9.0]]],
        "float32",
    )
    winners = ops.convert_to_numpy(group_winners(weights, sibling_groups(PARENTS), MASK))
    np.testing.assert_array_equal(winners, [[[0, 1, 0, 1, 0]], [[1, 0, 0, 1, 0]]])
