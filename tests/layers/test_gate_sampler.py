import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp

from ganet_tf.layers import GateSampler

TEMPERATURES = [0.1, 0.5, 1.0, 1.5, 2.0]
LOGITS = [-80.0, -40.0, -10.0, 0.0, 10.0, 40.0, 80.0]


def test_config_round_trip_and_shape():
    layer = GateSampler(
        temperature=0.7, straight_through=True, inference_mode="sample", seed=3
    )
    config = layer.get_config()
    assert config["temperature"] == 0.7
    assert config["straight_through"] is True
    assert config["inference_mode"] == "sample"
    assert config["seed"] == 3
    clone = GateSampler.from_config(config)
    assert clone.get_config() == config
    assert layer(np.zeros([2, 7], "float32")).shape == (2, 7)
    assert layer.compute_output_shape((2, 7)) == (2, 7)


def test_fit_step_trains_logits_through_relaxed_gates():
    inputs = keras.Input((5,))
    logits = keras.layers.Dense(5)(inputs)
    gates = GateSampler(temperature=0.5, seed=1)(logits)
    outputs = keras.layers.Dense(1)(gates)
    model = keras.Model(inputs, outputs)
    model.compile("adam", "mse")
    before = model.layers[1].get_weights()[0].copy()
    model.fit(np.random.rand(16, 5), np.random.rand(16, 1), epochs=1, verbose=0)
    assert not np.allclose(before, model.layers[1].get_weights()[0])


@pytest.mark.parametrize("temperature", TEMPERATURES)
def test_gradients_are_finite_over_the_temperature_and_logit_grid(temperature):
    logits = tf.Variable(np.tile(np.asarray(LOGITS, "float32"), (64, 1)))
    layer = GateSampler(temperature=temperature, seed=0)
    with tf.GradientTape() as tape:
        gates = layer(logits, training=True)
        loss = tf.reduce_sum(gates * tf.range(1.0, 8.0))
    gradient = tape.gradient(loss, logits).numpy()
    assert np.all(np.isfinite(gates.numpy()))
    assert np.all(np.isfinite(gradient))
    assert np.all((gates.numpy() >= 0) & (gates.numpy() <= 1))


def test_tfp_alone_gives_nan_gradients_where_the_layer_does_not():
    # The reason for the layer's custom gradient: keep it true.
    logits = tf.Variable(tf.fill([256], 40.0))
    with tf.GradientTape() as tape:
        sample = tfp.distributions.RelaxedBernoulli(0.1, logits=logits).sample(seed=[1, 2])
        total = tf.reduce_sum(sample)
    assert not np.all(np.isfinite(tape.gradient(total, logits).numpy()))


def test_gradient_equals_tfp_reparameterisation_where_tfp_is_finite():
    logits = tf.Variable(np.linspace(-4, 4, 50).astype("float32"))
    temperature = 0.7
    seed = tf.constant([5, 6], "int32")
    with tf.GradientTape() as tape:
        reference = tfp.distributions.RelaxedBernoulli(temperature, logits=logits).sample(seed=seed)
        total = tf.reduce_sum(reference)
    expected = tape.gradient(total, logits).numpy()
    layer = GateSampler(temperature=temperature)
    layer._next_seed = lambda: seed
    with tf.GradientTape() as tape:
        gates = layer(logits, training=True)
        total = tf.reduce_sum(gates)
    actual = tape.gradient(total, logits).numpy()
    np.testing.assert_allclose(gates.numpy(), reference.numpy(), rtol=1e-6)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-6)


def test_training_samples_follow_the_gate_probability():
    layer = GateSampler(temperature=0.5, seed=2)
    logits = np.full([20000], np.log(0.2 / 0.8), "float32")
    gates = layer(logits, training=True).numpy()
    # P(relaxed gate > 0.5) is exactly the Bernoulli probability.
    assert abs(np.mean(gates > 0.5) - 0.2) < 0.02


def test_inference_modes():
    logits = np.array([[-3.0, -0.1, 0.1, 5.0]], "float32")
    threshold = GateSampler()(logits).numpy()
    np.testing.assert_array_equal(threshold, [[0, 0, 1, 1]])
    sampler = GateSampler(inference_mode="sample", seed=4)
    draws = sampler(np.full([20000], np.log(0.3 / 0.7), "float32")).numpy()
    assert set(np.unique(draws)) <= {0.0, 1.0}
    assert abs(draws.mean() - 0.3) < 0.02


def test_straight_through_is_hard_forward_with_relaxed_gradient():
    logits = tf.Variable(np.random.default_rng(0).normal(size=[4, 6]).astype("float32"))
    layer = GateSampler(temperature=1.0, straight_through=True, seed=0)
    with tf.GradientTape() as tape:
        gates = layer(logits, training=True)
        loss = tf.reduce_sum(gates)
    assert set(np.unique(gates.numpy())) <= {0.0, 1.0}
    gradient = tape.gradient(loss, logits).numpy()
    assert np.all(np.isfinite(gradient)) and np.any(gradient > 0)


def test_masked_positions_are_closed():
    logits = np.full([2, 4], 5.0, "float32")
    mask = np.array([[True, True, False, False], [True, False, False, False]])
    layer = GateSampler(seed=0)
    for training in (False, True):
        gates = layer(logits, mask=mask, training=training).numpy()
        assert np.all(gates[~mask] == 0)
        assert np.all(gates[mask] > 0.5)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"temperature": 0.0}, "temperature"),
        ({"temperature": -1.0}, "temperature"),
        ({"inference_mode": "argmax"}, "inference_mode"),
    ],
)
def test_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        GateSampler(**arguments)


def test_keras_save_and_reload(tmp_path):
    inputs = keras.Input((6,))
    gates = GateSampler(temperature=1.5, seed=9, name="gates")(inputs)
    model = keras.Model(inputs, gates)
    path = str(tmp_path / "sampler.keras")
    model.save(path)
    reloaded = keras.models.load_model(path)
    x = np.random.default_rng(1).normal(size=[3, 6]).astype("float32")
    np.testing.assert_array_equal(model.predict(x, verbose=0), reloaded.predict(x, verbose=0))
    assert reloaded.get_layer("gates").get_config()["temperature"] == 1.5
