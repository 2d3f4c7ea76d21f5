import keras
import numpy as np
import pytest

from ganet_tf.layers import ComplementClassifier
from tests.lazy_import import tensorflow as tf

RNG = np.random.default_rng(0)
CONTEXT = RNG.normal(size=[4, 6]).astype("float32")
COMPLEMENT = RNG.normal(size=[4, 6]).astype("float32")


def built(weight):
    layer = ComplementClassifier(3, complement_weight=weight)
    layer(CONTEXT, complement=COMPLEMENT)
    return layer


def numpy_divergence(layer, complement):
    logits = complement @ np.asarray(layer.kernel) + np.asarray(layer.bias)
    logits -= logits.max(axis=1, keepdims=True)
    log_q = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    uniform = np.full_like(log_q, 1 / 3)
    return (uniform * (np.log(uniform) - log_q)).sum(axis=1)


def test_probabilities_are_a_softmax_dense_layer():
    layer = built(0.7)
    dense = keras.layers.Dense(3, activation="softmax")
    dense(CONTEXT)
    dense.set_weights(layer.get_weights())
    np.testing.assert_allclose(layer(CONTEXT, complement=COMPLEMENT), dense(CONTEXT), rtol=1e-6)


def test_loss_matches_numpy_only_while_training_with_a_weight():
    layer = built(0.7)
    assert not layer.losses  # not training
    layer(CONTEXT, complement=COMPLEMENT, training=True)
    (loss,) = layer.losses
    np.testing.assert_allclose(float(loss), 0.7 * numpy_divergence(layer, COMPLEMENT).mean(), rtol=1e-5)
    silent = built(0.0)
    silent(CONTEXT, complement=COMPLEMENT, training=True)
    assert not silent.losses


def test_gradient_reaches_the_complement_not_the_classifier():
    layer = built(1.0)
    complement = tf.Variable(COMPLEMENT)
    with tf.GradientTape(persistent=True) as tape:
        layer(CONTEXT, complement=complement, training=True)
        loss = layer.losses[0]
    kernel, bias, towards_complement = tape.gradient(loss, [layer.kernel, layer.bias, complement])
    assert kernel is None and bias is None
    assert np.abs(np.asarray(towards_complement)).sum() > 0


def test_config_round_trip_keeps_the_weight():
    layer = built(0.25)
    copy = ComplementClassifier.from_config(layer.get_config())
    assert copy.complement_weight == 0.25 and copy.units == 3 and copy.activation.__name__ == "softmax"


@pytest.mark.backends
@pytest.mark.parametrize("arguments", [{"complement_weight": -1.0}, {"complement_weight": float("nan")}, {"units": 1}])
def test_bad_arguments_are_refused(arguments):
    with pytest.raises(ValueError, match="Received"):
        ComplementClassifier(**{"units": 3, **arguments})
