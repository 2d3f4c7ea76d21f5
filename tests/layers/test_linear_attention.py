import keras
import numpy as np
import pytest

from ganet_tf.layers import LinearAttention
from tests.layer_harness import run_layer_test

QUERY = np.random.default_rng(0).normal(size=[3, 5, 8]).astype("float32")
MASK = np.array([[1] * 5, [1] * 3 + [0] * 2, [0] * 5], bool)


def _elu_plus_one(x):
    return np.where(x > 0, x, np.exp(x) - 1) + 1


def _reference(layer, query, mask):
    """Linear attention token by token: sum_s phi(q).phi(k_s) v_s / sum_s phi(q).phi(k_s)."""
    wq, bq, wk, bk, wv, bv, wo, bo = [keras.ops.convert_to_numpy(w) for w in layer.weights]
    q = _elu_plus_one(np.einsum("btc,chd->bthd", query, wq) + bq)
    k = _elu_plus_one(np.einsum("btc,chd->bthd", query, wk) + bk)
    v = np.einsum("btc,chd->bthd", query, wv) + bv
    out = np.zeros(query.shape, "float64")
    for b in range(query.shape[0]):
        for t in range(query.shape[1]):
            heads = np.zeros(v.shape[2:])
            if mask[b, t]:
                for h in range(q.shape[2]):
                    weights = np.array([q[b, t, h] @ k[b, s, h] if mask[b, s] else 0.0 for s in range(q.shape[1])])
                    heads[h] = weights @ v[b, :, h] / weights.sum()
            out[b, t] = np.einsum("hd,hde->e", heads, wo) + bo
    return out


@pytest.mark.backends
def test_matches_a_numpy_reference():
    layer = LinearAttention(num_heads=2, key_dim=4)
    output = layer(QUERY, QUERY, query_mask=MASK, value_mask=MASK)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(output), _reference(layer, QUERY, MASK), atol=2e-5)


@pytest.mark.backends
def test_padded_keys_are_left_out_of_both_sums():
    layer = LinearAttention(num_heads=2, key_dim=4)
    longer = np.concatenate([QUERY, np.full([3, 4, 8], 30.0, "float32")], axis=1)
    longer_mask = np.concatenate([MASK, np.zeros([3, 4], bool)], axis=1)
    short = keras.ops.convert_to_numpy(layer(QUERY, QUERY, query_mask=MASK, value_mask=MASK))
    long = keras.ops.convert_to_numpy(layer(longer, longer, query_mask=longer_mask, value_mask=longer_mask))
    np.testing.assert_allclose(short[MASK], long[:, :5][MASK], rtol=1e-5, atol=1e-5)


@pytest.mark.backends
def test_cross_attention_to_a_source_of_another_length():
    layer = LinearAttention(num_heads=2, key_dim=3, value_dim=5)
    source = np.random.default_rng(1).normal(size=[3, 9, 6]).astype("float32")
    assert tuple(layer(QUERY, source).shape) == (3, 5, 8)
    assert layer.compute_output_shape((3, 5, 8), (3, 9, 6)) == (3, 5, 8)


def test_the_layer_test_harness(tmp_path):
    run_layer_test(
        LinearAttention,
        {"num_heads": 2, "key_dim": 4, "value_dim": 3, "dropout": 0.1, "epsilon": 1e-5},
        QUERY,
        tmp_path,
        call_kwargs={"value": QUERY},
        mask=MASK,
        mask_argument="value_mask",
        masked_input="value",
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_heads": 0, "key_dim": 4}, "`num_heads` must be a positive integer"),
        ({"num_heads": 2, "key_dim": 2.5}, "`key_dim` must be a positive integer"),
        ({"num_heads": 2, "key_dim": 4, "value_dim": -1}, "`value_dim` must be a positive integer"),
        ({"num_heads": 2, "key_dim": 4, "dropout": 1.0}, r"`dropout` must be a number in \[0, 1\)"),
        ({"num_heads": 2, "key_dim": 4, "epsilon": 0.0}, "`epsilon` must be a positive number"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LinearAttention(**kwargs)
