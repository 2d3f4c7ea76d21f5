import keras
import numpy as np
import pytest

from ganet_tf.layers import GateSparsity
from tests.layer_harness import run_layer_test
from tests.lazy_import import tensorflow as tf

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
    assert np.asarray(layer.density.result()) == pytest.approx((4 / 6 + 2 / 3) / 2)


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


@pytest.mark.backends
def test_layer_harness(tmp_path):
    # An identity layer: its output keeps the values of masked positions.
    arguments = {"penalty": 0.01, "target_density": 0.3, "multiplier_rate": 0.02, "max_multiplier": 0.5, "damping": 2.0}
    run_layer_test(GateSparsity, arguments, GATES, tmp_path, mask=MASK, passes_through=True)


def test_shape_and_identity():
    layer = GateSparsity(penalty=3e-4, name="sparsity")
    assert layer.compute_output_shape((2, 5)) == (2, 5)
    np.testing.assert_array_equal(np.asarray(layer(GATES)), GATES)


@pytest.mark.backends
@pytest.mark.parametrize("penalty", [-1.0, "1e-3", float("nan"), True])
def test_bad_penalty(penalty):
    with pytest.raises(ValueError, match="penalty"):
        GateSparsity(penalty=penalty)


# --- target density: a bounded Lagrange multiplier (issue 13) ---------------


def test_target_density_adds_multiplier_times_gap_and_takes_a_dual_step():
    layer = GateSparsity(penalty=0.2, target_density=0.5, multiplier_rate=0.1, damping=3.0)
    layer(GATES, mask=MASK, training=True)
    (loss,) = layer.losses
    density = np.mean([4 / 6, (0.9 + 0.2 + 0.7) / 3])  # the empty row does not count
    gap = density - 0.5
    assert float(loss) == pytest.approx(0.2 * gap + 1.5 * gap**2, rel=1e-5)
    assert float(layer.multiplier) == pytest.approx(0.2 + 0.1 * (density - 0.5), rel=1e-5)
    assert not layer.multiplier.trainable
    layer(GATES, mask=MASK, training=False)
    assert float(layer.multiplier) == pytest.approx(0.2 + 0.1 * (density - 0.5), rel=1e-5)


@pytest.mark.parametrize("gates, sign", [(np.ones([4, 6], "float32"), 1.0), (np.zeros([4, 6], "float32"), -1.0)])
def test_multiplier_stays_bounded_when_the_target_cannot_be_met(gates, sign):
    layer = GateSparsity(penalty=0.0, target_density=0.3, multiplier_rate=0.5, max_multiplier=2.0)
    for _ in range(50):
        layer(gates, training=True)
    # Two-sided: too dense pushes down (+), too sparse pushes up (-).
    assert float(layer.multiplier) == pytest.approx(sign * 2.0)


@pytest.mark.parametrize("target", [0.2, 0.6])
def test_density_converges_near_the_target_on_a_toy_problem(target):
    # Free gate logits, no other loss: only the constraint moves them.
    logits = keras.Variable(np.zeros([16, 10], "float32"))
    layer = GateSparsity(penalty=0.0, target_density=target, multiplier_rate=0.05)
    optimizer = keras.optimizers.SGD(100.0)
    for _ in range(100):
        with tf.GradientTape() as tape:
            layer(keras.ops.sigmoid(logits), training=True)
            loss = layer.losses[0]
        optimizer.apply([tape.gradient(loss, logits)], [logits])
    density = float(np.mean(keras.ops.sigmoid(logits)))
    assert abs(density - target) < 0.01
    assert abs(float(layer.multiplier)) < layer.max_multiplier


def test_without_damping_plain_dual_ascent_oscillates():
    # Why `damping` exists: the same toy problem, undamped, is still far off.
    logits = keras.Variable(np.zeros([16, 10], "float32"))
    layer = GateSparsity(penalty=0.0, target_density=0.2, multiplier_rate=0.05, damping=0.0)
    optimizer = keras.optimizers.SGD(100.0)
    for _ in range(100):
        with tf.GradientTape() as tape:
            layer(keras.ops.sigmoid(logits), training=True)
            loss = layer.losses[0]
        optimizer.apply([tape.gradient(loss, logits)], [logits])
    assert abs(float(np.mean(keras.ops.sigmoid(logits))) - 0.2) > 0.05


def test_the_multiplier_is_saved_in_the_keras_file(tmp_path):
    layer = GateSparsity(penalty=0.01, target_density=0.3, name="sparsity")
    gates = keras.Input((6,))
    model = keras.Model(gates, layer(gates))
    layer.multiplier.assign(-0.25)
    path = str(tmp_path / "target.keras")
    model.save(path)
    reloaded = keras.models.load_model(path).get_layer("sparsity")
    assert reloaded.target_density == 0.3 and float(reloaded.multiplier) == pytest.approx(-0.25)


@pytest.mark.backends
@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"target_density": 0.0}, "target_density"),
        ({"target_density": 1.0}, "target_density"),
        ({"target_density": 0.3, "multiplier_rate": 0.0}, "multiplier_rate"),
        ({"target_density": 0.3, "max_multiplier": -1.0}, "max_multiplier"),
        ({"target_density": 0.3, "damping": -1.0}, "damping"),
    ],
)
def test_bad_target_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        GateSparsity(**arguments)
