import keras
import numpy as np
import pytest

from ganet_tf.layers import GateSparsity
from ganet_tf.layers import LayerMean
from ganet_tf.layers.layer_mean import saved_variables

GATES = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]], "float32")
MASK = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0]], bool)


@pytest.mark.backends
def test_a_weighted_mean_whose_sums_are_weights_of_the_layer():
    layer = keras.layers.Layer()
    layer.share = LayerMean(layer, name="share")  # an attribute: the layer tracks it
    mean = layer.share
    mean.update_state(np.array([0.5, 1.0, 0.25]), sample_weight=np.array([1.0, 0.0, 3.0]))
    mean.update_state(np.array([1.0]))
    assert float(mean.result()) == pytest.approx((0.5 + 0.75 + 1.0) / 5)
    assert [weight.path.split("/")[-1] for weight in layer.non_trainable_weights] == ["share_total", "share_count"]
    assert layer.trainable_weights == [] and mean.variables == []
    # Its sums are not metric variables, so a model's metrics variables
    # (JAX's stateless metrics state) leave them out.
    assert layer.metrics == [mean] and layer.metrics_variables == []
    mean.reset_state()
    assert float(mean.result()) == 0.0
    assert [float(weight.numpy()) for weight in layer.non_trainable_weights] == [0.0, 0.0]


@pytest.mark.backends
def test_within_a_stateless_scope_without_its_sums_the_result_is_nan():
    # A JAX compiled step's metrics update holds the metrics' variables only.
    layer = GateSparsity(penalty=0.0)
    layer(GATES, mask=MASK)
    with keras.StatelessScope():
        assert np.isnan(float(layer.density.result()))
    total, count = layer.non_trainable_weights
    with keras.StatelessScope(state_mapping=[(total, np.float32(1.5)), (count, np.float32(2.0))]):
        assert float(layer.density.result()) == pytest.approx(0.75)
    assert float(layer.density.result()) == pytest.approx((2 / 4 + 0 / 2) / 2)


@pytest.mark.backends
def test_the_sums_are_not_saved(tmp_path):
    gates = keras.Input((4,))
    sparsity = GateSparsity(target_density=0.3, name="sparsity")
    model = keras.Model(gates, keras.layers.Dense(1)(sparsity(gates)))
    model(GATES)
    assert [weight.path for weight in saved_variables(sparsity)] == ["sparsity/multiplier"]
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    loaded_sparsity = loaded.get_layer("sparsity")
    # The file holds the multiplier only; the loaded sums start at zero.
    assert float(loaded_sparsity.density.result()) == 0.0
    np.testing.assert_allclose(loaded_sparsity.multiplier.numpy(), sparsity.multiplier.numpy())
    store = {"0": np.float32(0.2), "1": np.float32(3.0)}
    with pytest.raises(ValueError, match="expected 1 saved variables, but the file holds 2"):
        loaded_sparsity.load_own_variables(store)


@pytest.mark.backends
def test_fit_and_evaluate_count_every_batch(tmp_path):
    # Batches of 1: the logged mean is over rows with a real token.
    gates = keras.Input((4,))
    mask = keras.Input((4,), dtype="bool")
    sparsity = GateSparsity(penalty=0.0, name="sparsity")
    model = keras.Model([gates, mask], keras.layers.Dense(1)(sparsity(gates, mask=mask)))
    model.compile("sgd", "mse")
    logs = model.evaluate([GATES, MASK], np.zeros((3, 1)), batch_size=1, return_dict=True, verbose=0)
    assert logs["density"] == pytest.approx((2 / 4 + 0 / 2) / 2)
    history = model.fit([GATES, MASK], np.zeros((3, 1)), batch_size=1, verbose=0, shuffle=False)
    assert history.history["density"] == [pytest.approx(0.25)]
