import keras
import numpy as np
import pytest

from ganet_tf.layers import AuxiliaryNetwork
from tests.layer_harness import check_config_round_trip
from tests.layer_harness import run_layer_test
from tests.lazy_import import tensorflow as tf

EMBEDDED = np.random.default_rng(0).normal(size=[3, 7, 10]).astype("float32")
MASK = np.array([[1] * 7, [1] * 3 + [0] * 4, [0] * 7], bool)


@pytest.mark.parametrize("encoder", ["bilstm", "lstm", "fnn", "attention", "conv"])
def test_every_encoder_gives_a_probability_per_token(encoder):
    layer = AuxiliaryNetwork(encoder=encoder, hidden_dim=5)
    probabilities = np.asarray(layer(EMBEDDED, mask=MASK))
    assert probabilities.shape == (3, 7)
    assert np.all((probabilities[MASK] > 0) & (probabilities[MASK] < 1))
    assert np.all(probabilities[~MASK] == 0)
    assert layer.compute_output_shape((3, 7, 10)) == (3, 7)


def test_probabilities_are_the_sigmoid_of_the_linear_gate_unit():
    layer = AuxiliaryNetwork(encoder="fnn", hidden_dim=4)
    probabilities = np.asarray(layer(EMBEDDED))
    w, b = layer.encoder_layer.get_weights()
    u, c = layer.gate_unit.get_weights()
    logits = (np.tanh(EMBEDDED @ w + b) @ u + c)[..., 0]
    np.testing.assert_allclose(probabilities, 1 / (1 + np.exp(-logits)), rtol=1e-5)
    logits_layer = AuxiliaryNetwork.from_config({**layer.get_config(), "return_logits": True})
    logits_layer.build(EMBEDDED.shape)
    logits_layer.set_weights(layer.get_weights())
    np.testing.assert_allclose(np.asarray(logits_layer(EMBEDDED)), logits, rtol=1e-4, atol=1e-5)


def test_masked_tokens_do_not_change_the_real_ones():
    layer = AuxiliaryNetwork(encoder="bilstm", hidden_dim=4)
    noisy = EMBEDDED.copy()
    noisy[1, 3:] = 100.0
    np.testing.assert_allclose(
        np.asarray(layer(EMBEDDED, mask=MASK))[1, :3], np.asarray(layer(noisy, mask=MASK))[1, :3], rtol=1e-5
    )


@pytest.mark.parametrize("encoder", ["bilstm", "conv"])
def test_masked_tokens_do_not_change_the_real_ones_of(encoder):
    layer = AuxiliaryNetwork(encoder=encoder, hidden_dim=4)
    longer = np.concatenate([EMBEDDED, np.full([3, 5, 10], 50.0, "float32")], axis=1)
    longer_mask = np.concatenate([MASK, np.zeros([3, 5], bool)], axis=1)
    np.testing.assert_allclose(
        np.asarray(layer(EMBEDDED, mask=MASK))[MASK],
        np.asarray(layer(longer, mask=longer_mask))[:, :7][MASK],
        rtol=1e-5,
        atol=1e-6,
    )


def test_conv_encoder_matches_a_numpy_dilated_convolution():
    layer = AuxiliaryNetwork(encoder="conv", hidden_dim=3, dilation_rates=(1, 2), return_logits=True)
    logits = np.asarray(layer(EMBEDDED, mask=MASK))
    states = EMBEDDED * MASK[..., None]
    for convolution, rate in zip(layer.encoder_layer, (1, 2), strict=True):
        kernel, bias = convolution.get_weights()  # (3, in, out)
        padded = np.pad(states, [(0, 0), (rate, rate), (0, 0)])
        steps = states.shape[1]
        out = sum(padded[:, k * rate : k * rate + steps] @ kernel[k] for k in range(3)) + bias
        states = np.maximum(out, 0) * MASK[..., None]
    u, c = layer.gate_unit.get_weights()
    expected = (np.maximum(out, 0) @ u + c)[..., 0]
    np.testing.assert_allclose(logits[MASK], expected[MASK], rtol=1e-4, atol=1e-5)


def test_conv_config_round_trip():
    check_config_round_trip(AuxiliaryNetwork, {"encoder": "conv", "hidden_dim": 6, "dilation_rates": [1, 3]})


def test_lstm_config_round_trip():
    check_config_round_trip(AuxiliaryNetwork, {"encoder": "lstm", "hidden_dim": 6, "return_logits": True})


def test_gradients_reach_the_encoder():
    layer = AuxiliaryNetwork(encoder="bilstm", hidden_dim=3)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(EMBEDDED, mask=MASK))
    gradients = tape.gradient(loss, layer.trainable_weights)
    assert all(g is not None and np.any(np.asarray(g) != 0) for g in gradients)


@pytest.mark.backends
@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"encoder": "gru"}, "encoder"),
        ({"hidden_dim": 0}, "hidden_dim"),
        ({"hidden_dim": "20"}, "hidden_dim"),
        ({"encoder": "conv", "dilation_rates": (1, 0)}, "dilation_rates"),
        ({"encoder": "conv", "dilation_rates": ()}, "dilation_rates"),
    ],
)
def test_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        AuxiliaryNetwork(**arguments)


@pytest.mark.backends
def test_bad_input_rank():
    with pytest.raises(ValueError, match="inputs"):
        AuxiliaryNetwork()(np.zeros([2, 7], "float32"))


def test_gate_bias_initializer_opens_the_gates_at_the_start():
    layer = AuxiliaryNetwork(encoder="fnn", hidden_dim=4, gate_bias_initializer=keras.initializers.Constant(2.0))
    probabilities = np.asarray(layer(np.zeros([1, 3, 10], "float32")))
    np.testing.assert_allclose(probabilities, 1 / (1 + np.exp(-2.0)), rtol=1e-6)
    clone = AuxiliaryNetwork.from_config(layer.get_config())
    assert clone.get_config()["gate_bias_initializer"]["config"]["value"] == 2.0


@pytest.mark.backends
@pytest.mark.parametrize("encoder", ["bilstm", "fnn", "attention", "conv"])
def test_layer_harness(encoder, tmp_path):
    run_layer_test(
        AuxiliaryNetwork,
        {"encoder": encoder, "hidden_dim": 4, "return_logits": True},
        EMBEDDED,
        tmp_path,
        mask=MASK,
    )
