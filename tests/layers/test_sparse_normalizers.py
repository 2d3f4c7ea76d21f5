import numpy as np
import pytest

from ganet_tf.layers.sparse_normalizers import entmax15
from ganet_tf.layers.sparse_normalizers import sparse_normalizer
from ganet_tf.layers.sparse_normalizers import sparsemax
from tests.lazy_import import tensorflow as tf


def numpy_sparsemax(scores, mask):
    """Sparsemax of one row, float64: the Euclidean projection onto the
    simplex (Martins & Astudillo, 2016, eq. 2), found as the tau with
    sum_i max(z_i - tau, 0) = 1 by bisection over the allowed positions."""
    z = np.asarray(scores, "float64")[mask]
    if z.size == 0:
        return np.zeros(len(mask))
    low, high = z.max() - 1.0, z.max()
    for _ in range(200):
        tau = (low + high) / 2
        if np.maximum(z - tau, 0).sum() > 1:
            low = tau
        else:
            high = tau
    weights = np.zeros(len(mask))
    weights[mask] = np.maximum(z - (low + high) / 2, 0)
    return weights


def numpy_entmax15(scores, mask):
    """1.5-entmax of one row, float64, by the exact sort-based threshold of
    Peters et al. (2019, Algorithm 2): with u = z / 2 sorted decreasingly,
    tau_k = mean_k - sqrt((1 - ss_k) / k) (ss_k the squared deviations of
    the top k from their mean), support the largest k with tau_k <= u_(k)."""
    u = np.asarray(scores, "float64")[mask] / 2
    weights = np.zeros(len(mask))
    if u.size == 0:
        return weights
    ordered = np.sort(u)[::-1]
    tau = None
    for k in range(1, len(ordered) + 1):
        top = ordered[:k]
        mean = top.mean()
        spread = np.sum((top - mean) ** 2)
        if 1 - spread < 0:
            continue
        tau_k = mean - np.sqrt((1 - spread) / k)
        if tau_k <= ordered[k - 1]:
            tau = tau_k
    weights[mask] = np.maximum(u - tau, 0) ** 2
    return weights


def reference(function, scores, mask):
    return np.stack([function(row, row_mask) for row, row_mask in zip(scores, mask, strict=True)])


REFERENCES = {"sparsemax": numpy_sparsemax, "entmax15": numpy_entmax15}
RNG = np.random.default_rng(0)
SCORES = RNG.normal(scale=2.0, size=[6, 9]).astype("float32")
SCORES[4, :3] = 1.5  # ties
MASK = np.ones([6, 9], bool)
MASK[1, 5:] = False
MASK[2, 1:] = False  # one real token
MASK[3] = False  # no real token
MASK[5, ::2] = False


@pytest.mark.backends
@pytest.mark.parametrize("name", ["sparsemax", "entmax15"])
def test_matches_numpy_reference_with_masks(name):
    weights = np.asarray(sparse_normalizer(name)(SCORES, MASK))
    expected = reference(REFERENCES[name], SCORES, MASK)
    assert weights.dtype == np.float32
    np.testing.assert_allclose(weights, expected, atol=1e-6)
    assert np.all(weights[~MASK] == 0)
    assert weights[2, 0] == 1.0
    np.testing.assert_allclose(weights.sum(axis=1), [1, 1, 1, 0, 1, 1], atol=1e-6)


@pytest.mark.parametrize("name", ["sparsemax", "entmax15"])
def test_exact_zeros_adapt_to_each_row(name):
    # One dominant score: all weight on it; near-equal scores: all open.
    scores = np.array([[10.0, 0.0, 0.0, 0.0], [0.01, 0.0, 0.02, 0.0], [1.0, 0.8, -3.0, -3.0]], "float32")
    weights = np.asarray(sparse_normalizer(name)(scores))
    np.testing.assert_array_equal(weights[0], [1, 0, 0, 0])
    assert np.all(weights[1] > 0)
    assert np.all(weights[2, :2] > 0) and np.all(weights[2, 2:] == 0)
    np.testing.assert_allclose(weights, reference(REFERENCES[name], scores, np.ones_like(scores, bool)), atol=1e-6)


@pytest.mark.parametrize("name", ["sparsemax", "entmax15"])
def test_masked_scores_never_enter_the_threshold(name):
    noisy = SCORES.copy()
    noisy[~MASK] = 1e4
    clean = np.asarray(sparse_normalizer(name)(SCORES, MASK))
    np.testing.assert_array_equal(np.asarray(sparse_normalizer(name)(noisy, MASK)), clean)
    noisy[~MASK] = -1e30
    np.testing.assert_array_equal(np.asarray(sparse_normalizer(name)(noisy, MASK)), clean)


@pytest.mark.parametrize("name", ["sparsemax", "entmax15"])
def test_other_axis_float16_and_extreme_scores(name):
    function = sparse_normalizer(name)
    moved = np.asarray(function(np.swapaxes(SCORES, 0, 1), MASK.T, axis=0))
    np.testing.assert_allclose(moved.T, np.asarray(function(SCORES, MASK)), atol=1e-7)
    half = np.asarray(function(SCORES.astype("float16"), MASK))
    assert half.dtype == np.float32
    np.testing.assert_allclose(half, reference(REFERENCES[name], SCORES.astype("float16"), MASK), atol=1e-6)
    extreme = np.array([[3e4, -3e4, 3e4 - 0.5, 0.0], [-6e4, -6e4, -6e4, -6e4]], "float16")
    weights = np.asarray(function(extreme))
    assert np.all(np.isfinite(weights))
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(weights[1], 0.25, atol=1e-6)


def analytic_jacobian(name, weights):
    """d alpha / d z of one row: diag(s) - s s^T / sum(s), s = alpha on the
    support for sparsemax (as 1 there) and sqrt(alpha) for 1.5-entmax."""
    support = weights > 0
    s = support.astype("float64") if name == "sparsemax" else np.sqrt(weights)
    return np.diag(s) - np.outer(s, s) / s.sum()


@pytest.mark.parametrize("name", ["sparsemax", "entmax15"])
def test_gradients_are_finite_and_equal_the_analytic_jacobian(name):
    function = sparse_normalizer(name)
    scores = tf.Variable(SCORES)
    with tf.GradientTape(persistent=True) as tape:
        weights = function(scores, MASK)
        loss = tf.reduce_sum(weights * tf.range(1.0, 10.0))
    gradient = np.asarray(tape.gradient(loss, scores))
    assert np.all(np.isfinite(gradient)) and np.any(gradient != 0)
    assert np.all(gradient[~MASK] == 0) and np.all(gradient[3] == 0)
    jacobian = np.asarray(tape.batch_jacobian(weights, scores))
    assert np.all(np.isfinite(jacobian))
    for row in (0, 1, 5):
        real = MASK[row]
        expected = analytic_jacobian(name, np.asarray(weights)[row][real])
        np.testing.assert_allclose(jacobian[row][np.ix_(real, real)], expected, atol=1e-5)


def test_normalizers_by_name():
    assert sparse_normalizer("sparsemax") is sparsemax and sparse_normalizer("entmax15") is entmax15
    with pytest.raises(ValueError, match="normalizer"):
        sparse_normalizer("softmax")


@pytest.mark.parametrize("name", ["sparsemax", "entmax15"])
def test_same_weights_under_xla_and_unknown_shapes(name):
    function = sparse_normalizer(name)
    expected = np.asarray(function(SCORES, MASK))
    compiled = tf.function(lambda s, m: function(s, m), jit_compile=True)
    dynamic = tf.function(
        lambda s, m: function(s, m),
        input_signature=[tf.TensorSpec([None, None]), tf.TensorSpec([None, None], tf.bool)],
    )
    for run in (compiled, dynamic):
        np.testing.assert_allclose(np.asarray(run(SCORES, MASK)), expected, atol=1e-7)
