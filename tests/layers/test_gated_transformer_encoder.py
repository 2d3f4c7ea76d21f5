import keras
import numpy as np
import pytest
import tensorflow as tf

from ganet_tf.layers import GatedAttentionPooling
from ganet_tf.layers import GatedTransformerEncoder
from tests.layer_harness import run_layer_test

RNG = np.random.default_rng(1)
X = RNG.normal(size=[3, 10, 8]).astype("float32")
GATES = (RNG.random([3, 10]) > 0.5).astype("float32")
GATES[:, 0] = 1.0
PADDING = np.ones([3, 10], bool)
PADDING[1, 7:] = False
OPEN = (GATES > 0.5) & PADDING


def blocks(normalize_first=False, **kwargs):
    """A dense and a token-dropping block with the same weights."""
    dense = GatedTransformerEncoder(16, 2, normalize_first=normalize_first, **kwargs)
    dropping = GatedTransformerEncoder(
        16, 2, normalize_first=normalize_first, token_dropping=True, sparse_buckets=[0.3, 0.6], **kwargs
    )
    dense(X)
    dropping(X)
    dropping.set_weights(dense.get_weights())
    return dense, dropping


def test_layer_harness(tmp_path):
    run_layer_test(
        GatedTransformerEncoder,
        {
            "intermediate_dim": 16,
            "num_heads": 2,
            "dropout": 0.1,
            "activation": "gelu",
            "normalize_first": True,
            "token_dropping": True,
            "sparse_inference": True,
            "sparse_buckets": [0.5, 1.0],
        },
        X,
        tmp_path,
        call_kwargs={"gates": GATES, "padding_mask": PADDING},
    )


def test_all_gates_open_equals_the_ungated_block():
    dense, dropping = blocks()
    ones = np.ones([3, 10], "float32")
    expected = dense(X, padding_mask=PADDING).numpy()[PADDING]
    for layer in (dense, dropping):
        got = layer(X, padding_mask=PADDING, gates=ones).numpy()[PADDING]
        np.testing.assert_allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize("normalize_first", [False, True])
def test_token_dropping_keeps_open_tokens_and_passes_closed_ones(normalize_first):
    dense, dropping = blocks(normalize_first)
    attention_mask = RNG.random([3, 10, 10]) > 0.2
    kwargs = {"padding_mask": PADDING, "attention_mask": attention_mask, "gates": GATES}
    expected = dense(X, **kwargs).numpy()
    got = dropping(X, **kwargs).numpy()
    np.testing.assert_allclose(got[OPEN], expected[OPEN], atol=1e-5)
    np.testing.assert_array_equal(got[~OPEN], X[~OPEN])


def test_two_dropping_blocks_and_gated_pooling_equal_the_dense_stack():
    first, first_dropping = blocks()
    second, second_dropping = blocks()
    pooling = GatedAttentionPooling(units=4, return_attention_scores=False)

    def model(a, b):
        x = b(a(X, padding_mask=PADDING, gates=GATES), padding_mask=PADDING, gates=GATES)
        return pooling(x, gates=GATES, mask=PADDING)

    np.testing.assert_allclose(model(first_dropping, second_dropping), model(first, second), atol=1e-5)


def test_training_uses_every_token_and_reaches_the_gates():
    _, dropping = blocks()
    gates = tf.Variable(np.clip(RNG.random([3, 10]), 0.1, 1.0).astype("float32"))
    with tf.GradientTape() as tape:
        out = dropping(X, gates=gates, training=True)
        loss = tf.reduce_sum(out**2)
    grad = tape.gradient(loss, gates).numpy()
    assert np.all(np.isfinite(grad)) and np.all(grad != 0)


def test_errors():
    with pytest.raises(ValueError, match="multiple of `num_heads`"):
        GatedTransformerEncoder(16, 3)(X)
    with pytest.raises(ValueError, match="intermediate_dim"):
        GatedTransformerEncoder(0, 2)
    with pytest.raises(ValueError, match="sparse_buckets"):
        GatedTransformerEncoder(16, 2, sparse_buckets=[2.0])
    with pytest.raises(ValueError, match="dropout"):
        GatedTransformerEncoder(16, 2, dropout=1.0)
    assert keras.saving.get_registered_object("ganet_tf>GatedTransformerEncoder") is GatedTransformerEncoder
