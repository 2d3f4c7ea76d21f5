import keras
import numpy as np
import pytest

from ganet_tf.layers import AuxiliaryNetwork
from ganet_tf.models import MODEL_BUILDERS
from ganet_tf.models import build_convolution
from ganet_tf.models import build_explainer

RNG = np.random.default_rng(0)
IDS = RNG.integers(2, 50, size=[16, 12]).astype("int32")
IDS[1, 5:] = 0
IDS[2, 1:] = 0
LABELS = RNG.integers(0, 3, size=[16])


def test_fit_save_reload_and_padding(tmp_path):
    model = build_convolution(3, vocabulary_size=50, embedding_dim=6, hidden_dim=5, attention_units=4)
    assert MODEL_BUILDERS["conv"] is build_convolution
    model.compile("adam", "sparse_categorical_crossentropy", jit_compile=False)
    history = model.fit(IDS, LABELS, epochs=2, batch_size=8, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    probabilities = keras.ops.convert_to_numpy(model(IDS))
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
    model.save(tmp_path / "conv.keras")
    reloaded = keras.models.load_model(tmp_path / "conv.keras")
    np.testing.assert_allclose(keras.ops.convert_to_numpy(reloaded(IDS)), probabilities, atol=1e-6)
    # Padded positions read as zeros at every convolution: more padding changes nothing.
    longer = np.pad(IDS, [[0, 0], [0, 20]])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(model(longer)), probabilities, atol=1e-5)
    weights = keras.ops.convert_to_numpy(build_explainer(model)(IDS)["attention"])
    assert np.all(weights[IDS == 0] == 0)


def test_its_convolutions_are_those_of_the_conv_auxiliary_network():
    model = build_convolution(2, vocabulary_size=50, embedding_dim=6, hidden_dim=5, dilation_rates=(1, 3), dropout=0.0)
    auxiliary = AuxiliaryNetwork(encoder="conv", hidden_dim=5, dilation_rates=(1, 3), return_logits=True)
    embedded = keras.ops.convert_to_numpy(model.get_layer("embedding")(IDS))
    mask = IDS != 0
    auxiliary(embedded, mask=mask)
    for index, convolution in enumerate(auxiliary.encoder_layer):
        convolution.set_weights(model.get_layer(f"convolution_{index + 1}").get_weights())
    states = keras.Model(model.input, model.get_layer("convolution_2").output)(IDS)
    logits = auxiliary.gate_unit(states)[..., 0]  # the gate unit on the model's states: the auxiliary's logits
    expected = keras.ops.convert_to_numpy(auxiliary(embedded, mask=mask))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(logits)[mask], expected[mask], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "kwargs, message",
    [({"hidden_dim": 0}, "`hidden_dim` must be a positive integer"), ({"dilation_rates": ()}, "`dilation_rates`")],
)
def test_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_convolution(2, vocabulary_size=50, **kwargs)
