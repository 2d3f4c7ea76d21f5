import keras
import numpy as np
import pytest

from ganet_tf.models import MODEL_BUILDERS
from ganet_tf.models import build_explainer
from ganet_tf.models import build_transformer

RNG = np.random.default_rng(0)
IDS = RNG.integers(2, 50, size=[16, 10]).astype("int32")
IDS[1, 4:] = 0
IDS[2, 1:] = 0
LABELS = RNG.integers(0, 3, size=[16])


def test_fit_save_and_reload(tmp_path):
    model = build_transformer(
        3,
        vocabulary_size=50,
        embedding_dim=6,
        hidden_dim=8,
        num_heads=2,
        max_length=16,
        attention_units=4,
        dropout=0.1,
    )
    assert MODEL_BUILDERS["transformer"] is build_transformer
    model.compile("adam", "sparse_categorical_crossentropy", jit_compile=False)
    before = [w.numpy() for w in model.get_layer("encoder_1").trainable_weights]
    history = model.fit(IDS, LABELS, epochs=2, batch_size=8, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    after = model.get_layer("encoder_1").trainable_weights
    assert all(not np.allclose(a, b.numpy()) for a, b in zip(before, after, strict=True))
    probabilities = model(IDS).numpy()
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
    model.save(tmp_path / "transformer.keras")
    reloaded = keras.models.load_model(tmp_path / "transformer.keras")
    np.testing.assert_allclose(reloaded(IDS), probabilities, atol=1e-6)
    # Padding changes nothing: the same texts padded to more steps.
    longer = np.pad(IDS, [[0, 0], [0, 3]])
    np.testing.assert_allclose(model(longer), probabilities, atol=1e-5)
    weights = build_explainer(model)(IDS)["attention"].numpy()
    assert np.all(weights[IDS == 0] == 0)


def test_errors():
    with pytest.raises(ValueError, match="multiple of `num_heads`"):
        build_transformer(2, vocabulary_size=50, hidden_dim=10, num_heads=4)
    with pytest.raises(ValueError, match="num_layers"):
        build_transformer(2, vocabulary_size=50, hidden_dim=8, num_layers=0)


def test_sliding_window_reaches_every_block_and_reloads(tmp_path):
    from ganet_tf.training.config import TrainConfig
    from ganet_tf.training.train import model_arguments

    model = build_transformer(3, vocabulary_size=50, hidden_dim=8, num_heads=2, sliding_window=2)
    assert [model.get_layer(f"encoder_{i}").sliding_window for i in (1, 2)] == [2, 2]
    model.save(tmp_path / "local.keras")
    reloaded = keras.models.load_model(tmp_path / "local.keras")
    np.testing.assert_allclose(reloaded(IDS), model(IDS), atol=1e-6)
    assert (
        build_transformer(3, vocabulary_size=50, hidden_dim=8, num_heads=2).get_layer("encoder_1").sliding_window
        is None
    )
    # `train --sliding-window` reaches the builder of `--model transformer` only.
    splits = type("Splits", (), {"train_texts": ["a"], "name": "trec"})()
    config = TrainConfig(model="transformer", hidden=8, num_heads=2, sliding_window=16)
    assert model_arguments(config, splits, None)["sliding_window"] == 16
    assert "sliding_window" not in model_arguments(
        TrainConfig(model="transformer", hidden=8, num_heads=2), splits, None
    )
