import types

import numpy as np
import pytest
from keras import ops

from ganet_tf.layers import GateSampler
from ganet_tf.layers.sparse_gather import DEFAULT_SPARSE_BUCKETS
from ganet_tf.layers.sparse_gather import bucket_sizes
from ganet_tf.layers.sparse_gather import check_sparse_training
from ganet_tf.layers.sparse_gather import keep_top_k
from ganet_tf.layers.sparse_gather import kept_count
from ganet_tf.layers.sparse_gather import set_sparse_options
from ganet_tf.layers.sparse_gather import straight_through_ones
from ganet_tf.layers.sparse_gather import training_buckets
from tests.lazy_import import tensorflow as tf

RNG = np.random.default_rng(3)


@pytest.mark.parametrize("density", [0.1, 0.3, 0.5, 1.0])
def test_keep_top_k_is_the_top_k_rule_of_the_gate_sampler(density):
    logits = RNG.normal(size=[5, 12]).astype("float32")
    logits[2, :6] = 1.0  # ties: the earlier token first
    real = np.ones([5, 12], bool)
    real[1, 5:] = False
    real[3, 1:] = False
    real[4] = False  # no real token: nothing kept
    sampler = GateSampler(inference_mode="top_k", inference_density=density)
    expected = np.asarray(sampler(logits, mask=real)) > 0.5
    got = np.asarray(keep_top_k(tf.sigmoid(logits), real, density))
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(keep_top_k(logits, None, density), np.asarray(sampler(logits)) > 0.5)


def test_kept_count_static_and_in_graph_agree():
    lengths = np.arange(0, 300)
    for density in (0.1, 0.2, 0.3, 0.5):
        graph = np.asarray(kept_count(density, tf.constant(lengths, "float32")))
        static = [kept_count(density, int(n)) if n else 0 for n in lengths]
        np.testing.assert_array_equal(graph[1:], static[1:])
    assert kept_count(0.2, 4096) == 819 and kept_count(0.3, 5) == 2 and kept_count(0.01, 10) == 1


def test_training_buckets_end_at_the_kept_count():
    buckets = list(DEFAULT_SPARSE_BUCKETS)
    for steps, density in ((4096, 0.2), (512, 0.1), (10, 0.3), (7, 1.0)):
        sizes, _ = bucket_sizes(training_buckets(buckets, steps, density), steps)
        assert sizes[-1] == kept_count(density, steps)
        assert set(sizes[:-1]) < set(bucket_sizes(buckets, steps)[0])
    assert training_buckets(None, 10, 0.5) is None
    assert training_buckets(buckets, tf.constant(10), 0.5) is buckets


def test_bucket_sizes_round_up_to_the_multiple_static_and_in_graph():
    buckets = list(DEFAULT_SPARSE_BUCKETS)
    for steps in (4096, 1000, 100, 40):
        sizes, _ = bucket_sizes(buckets, steps, 64)
        assert all(size % 64 == 0 or size == steps for size in sizes) and sizes[-1] == steps
        assert sizes == sorted({min(steps, 64 * -(-size // 64)) for size in bucket_sizes(buckets, steps)[0]})
        _, graph = bucket_sizes(buckets, tf.constant(steps), 64)
        assert sorted(set(np.asarray(graph).tolist())) == sizes
    # Sparse training at density 0.2 of 4,096 tokens keeps 819: its bucket is 832.
    assert bucket_sizes(training_buckets(buckets, 4096, 0.2), 4096, 64)[0][-1] == 832


def test_straight_through_ones():
    gates = tf.Variable([0.3, 1.0, 1e-12, 0.7])
    with tf.GradientTape() as tape:
        ones = straight_through_ones(gates, 1e-9)
        loss = tf.reduce_sum(ones * [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(ones, [1.0, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(tape.gradient(loss, gates), [1 / 0.3, 2.0, 0.0, 4 / 0.7], rtol=1e-6)


@pytest.mark.backends
def test_check_sparse_training():
    assert check_sparse_training(False, None) == (False, None)
    assert check_sparse_training(True, 1) == (True, 1.0)
    for arguments, match in (
        ((True, None), "training_density"),
        ((False, 0.0), "training_density"),
        ((False, True), "training_density"),
        (("yes", 0.5), "sparse_training"),
    ):
        with pytest.raises(ValueError, match=match):
            check_sparse_training(*arguments)


def test_set_sparse_options_sets_the_checked_options_and_a_multiple_only_where_given():
    layer = types.SimpleNamespace()
    set_sparse_options(layer, 1, [0.5], True, 0.25, sparse_bucket_multiple=4)
    assert vars(layer) == {
        "sparse_inference": True,
        "sparse_buckets": [0.5, 1.0],
        "sparse_bucket_multiple": 4,
        "sparse_training": True,
        "training_density": 0.25,
    }
    bare = types.SimpleNamespace()
    set_sparse_options(bare, False, DEFAULT_SPARSE_BUCKETS, False, None)
    assert not hasattr(bare, "sparse_bucket_multiple")
    with pytest.raises(ValueError, match="sparse_bucket_multiple"):
        set_sparse_options(bare, False, None, False, None, sparse_bucket_multiple=0)


def test_bucket_sizes_start_at_the_smallest_and_stay_within_the_steps():
    assert bucket_sizes([0.05, 0.5, 1.0], 20, smallest=2)[0] == [2, 10, 20]
    assert bucket_sizes([0.05, 0.5, 1.0], 20)[0] == [1, 10, 20]
    assert bucket_sizes([0.5, 1.0], 1, smallest=2)[0] == [1]
    _, sizes = bucket_sizes([0.05, 0.5, 1.0], ops.convert_to_tensor(20), smallest=2)
    assert list(ops.convert_to_numpy(sizes)) == [2, 10, 20]
