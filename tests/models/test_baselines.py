import numpy as np
import pytest

from ganet_tf.models import MODEL_BUILDERS
from ganet_tf.models import build_explainer
from ganet_tf.models import build_model

RNG = np.random.default_rng(0)
IDS = RNG.integers(2, 40, size=[12, 10]).astype("int32")
IDS[0, 3:] = 0
LABELS = RNG.integers(0, 2, size=[12])


@pytest.mark.usefixtures("eager_functions")
@pytest.mark.parametrize("name", ["bilstm", "soft", "local"])
def test_baseline_fits_and_explains(name):
    model = build_model(name, 2, vocabulary_size=40, embedding_dim=6, hidden_dim=5)
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(IDS, LABELS, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    outputs = build_explainer(model).predict(IDS, verbose=0)
    assert outputs["probabilities"].shape == (12, 2)
    assert "gates" not in outputs
    if name != "bilstm":
        assert np.all(outputs["attention"][IDS == 0] == 0)


def test_glove_matrix_initialises_the_embedding():
    matrix = RNG.normal(size=[40, 6]).astype("float32")
    model = build_model("soft", 2, embeddings=matrix, hidden_dim=5)
    np.testing.assert_array_equal(model.get_layer("embedding").get_weights()[0], matrix)


def test_bad_builder_arguments():
    with pytest.raises(ValueError, match="model"):
        build_model("gpt", 2, vocabulary_size=10)
    with pytest.raises(ValueError, match="num_classes"):
        build_model("bilstm", 1, vocabulary_size=10)
    with pytest.raises(ValueError, match="vocabulary_size"):
        build_model("ganet", 2)
    with pytest.raises(ValueError, match="dropout"):
        build_model("soft", 2, vocabulary_size=10, dropout=1.5)
    assert sorted(MODEL_BUILDERS) == [
        "bilstm",
        "conv",
        "entmax",
        "ganet",
        "ganet_transformer",
        "linear_transformer",
        "local",
        "soft",
        "sparsemax",
        "transformer",
    ]


@pytest.mark.parametrize("name, normalizer", [("sparsemax", "sparsemax"), ("entmax", "entmax15")])
def test_sparse_attention_baselines_weigh_real_tokens_only(name, normalizer):
    model = build_model(name, 2, vocabulary_size=40, embedding_dim=6, hidden_dim=5, attention_units=4)
    attention = model.get_layer("attention")
    assert (attention.normalizer, attention.units, model.name) == (normalizer, 4, name)
    weights = build_explainer(model).predict(IDS, verbose=0)["attention"]
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-5)
    assert np.all(weights[IDS == 0] == 0)
