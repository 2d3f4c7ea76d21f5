import keras
import numpy as np
import pytest

from ganet_tf.layers import GateSparsity

GATES = np.array(
    [
        [1.0, 0.0, 1.0, 0.0, 1.0, 1.0],  # 4 open of 6
        [0.9, 0.2, 0.7, 1.0, 1.0, 1.0],  # 2 open of 3 real (padding open)
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],  # empty row
    ],
    "float32",
)
MASK = np.array([[1] * 6, [1, 1, 1, 0, 0, 0], [0] * 6], bool)


def test_density_is_open_gates_over_real_tokens_by_hand():
    layer = GateSparsity(penalty=0.0)
    layer(GATES, mask=MASK)
    # Rows with real tokens: 4/6 and 2/3; the empty row does not count.
    assert layer.density.result().numpy() == pytest.approx((4 / 6 + 2 / 3) / 2)


def test_penalty_is_lambda_times_l1_over_real_length():
    layer = GateSparsity(penalty=0.5)
    layer(GATES, mask=MASK, training=True)
    (loss,) = layer.losses
    expected = 0.5 * np.mean([4 / 6, (0.9 + 0.2 + 0.7) / 3, 0.0])
    assert float(loss) == pytest.approx(expected, rel=1e-6)
    layer(GATES, mask=MASK, training=False)
    assert layer.losses == []


def test_model_loss_adds_the_penalty_and_logs_density():
    gates = keras.Input((6,))
    out = keras.layers.Dense(1, kernel_initializer="zeros")(GateSparsity(penalty=2.0)(gates))
    model = keras.Model(gates, out)
    model.compile("sgd", "mse")
    logs = model.evaluate(GATES[:2], np.zeros([2, 1]), return_dict=True, verbose=0)
    assert logs["loss"] == pytest.approx(0.0)
    assert logs["density"] == pytest.approx(0.75)
    history = model.fit(GATES[:2], np.zeros([2, 1]), epochs=1, verbose=0)
    assert history.history["loss"][0] == pytest.approx(2.0 * np.mean([4 / 6, 0.8]), rel=1e-5)


def test_config_and_shape():
    layer = GateSparsity(penalty=3e-4, name="sparsity")
    config = layer.get_config()
    assert config["penalty"] == 3e-4
    assert GateSparsity.from_config(config).get_config() == config
    assert layer.compute_output_shape((2, 5)) == (2, 5)
    np.testing.assert_array_equal(layer(GATES).numpy(), GATES)


@pytest.mark.parametrize("penalty", [-1.0, "1e-3"])
def test_bad_penalty(penalty):
    with pytest.raises(ValueError, match="penalty"):
        GateSparsity(penalty=penalty)


def test_keras_save_and_reload(tmp_path):
    gates = keras.Input((6,))
    model = keras.Model(gates, GateSparsity(penalty=1e-3, name="sparsity")(gates))
    path = str(tmp_path / "sparsity.keras")
    model.save(path)
    reloaded = keras.models.load_model(path)
    assert reloaded.get_layer("sparsity").penalty == 1e-3
    np.testing.assert_array_equal(reloaded.predict(GATES, verbose=0), GATES)
