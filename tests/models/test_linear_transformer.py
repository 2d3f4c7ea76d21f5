import keras
import numpy as np
import pytest

from ganet_tf.models import MODEL_BUILDERS
from ganet_tf.models import build_explainer
from ganet_tf.models import build_linear_transformer

RNG = np.random.default_rng(0)
IDS = RNG.integers(2, 50, size=[16, 10]).astype("int32")
IDS[1, 4:] = 0
IDS[2, 1:] = 0
LABELS = RNG.integers(0, 3, size=[16])


def test_fit_save_reload_and_padding(tmp_path):
    model = build_linear_transformer(
        3, vocabulary_size=50, embedding_dim=6, hidden_dim=8, num_heads=2, max_length=16, attention_units=4
    )
    assert MODEL_BUILDERS["linear_transformer"] is build_linear_transformer
    model.compile("adam", "sparse_categorical_crossentropy", jit_compile=False)
    before = [keras.ops.convert_to_numpy(w) for w in model.get_layer("linear_attention_1").trainable_weights]
    history = model.fit(IDS, LABELS, epochs=2, batch_size=8, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    after = model.get_layer("linear_attention_1").trainable_weights
    assert all(not np.allclose(a, keras.ops.convert_to_numpy(b)) for a, b in zip(before, after, strict=True))
    probabilities = keras.ops.convert_to_numpy(model(IDS))
    model.save(tmp_path / "linear.keras")
    reloaded = keras.models.load_model(tmp_path / "linear.keras")
    np.testing.assert_allclose(keras.ops.convert_to_numpy(reloaded(IDS)), probabilities, atol=1e-6)
    # Padded keys are left out of both sums: the same texts padded further give the same output.
    longer = np.pad(IDS, [[0, 0], [0, 3]])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(model(longer)), probabilities, atol=1e-5)
    weights = keras.ops.convert_to_numpy(build_explainer(model)(IDS)["attention"])
    assert np.all(weights[IDS == 0] == 0)


def test_errors():
    with pytest.raises(ValueError, match="multiple of `num_heads`"):
        build_linear_transformer(2, vocabulary_size=50, hidden_dim=10, num_heads=4)
