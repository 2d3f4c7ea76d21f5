import keras
import numpy as np
import pytest
import tensorflow as tf

from ganet_tf.data.vectorizer import vectorizer_from_vocabulary
from ganet_tf.export.serving_archive import build_serving_archive
from ganet_tf.models import MODEL_BUILDERS
from ganet_tf.models import build_explainer
from ganet_tf.models import build_ganet_transformer

RNG = np.random.default_rng(0)
IDS = RNG.integers(2, 50, size=[16, 10]).astype("int32")
IDS[1, 4:] = 0
IDS[2, 1:] = 0
LABELS = RNG.integers(0, 3, size=[16])


def small(**kwargs):
    arguments = {
        "num_classes": 3,
        "vocabulary_size": 50,
        "embedding_dim": 6,
        "hidden_dim": 8,
        "num_heads": 2,
        "max_length": 16,
        "attention_units": 4,
        "auxiliary": "fnn",
        "auxiliary_hidden_dim": 4,
        "sparse_buckets": [0.5],
        "seed": 1,
    }
    arguments.update(kwargs)
    return build_ganet_transformer(**arguments)


def test_fit_token_dropping_keras_round_trip_and_serving(tmp_path):
    model = small(penalty=1e-2)
    assert MODEL_BUILDERS["ganet_transformer"] is build_ganet_transformer
    model.compile("adam", "sparse_categorical_crossentropy", jit_compile=False)
    history = model.fit(IDS, LABELS, epochs=2, batch_size=8, verbose=0)
    for key in ("loss", "density"):
        assert np.all(np.isfinite(history.history[key]))
    gates = build_explainer(model)(IDS)["gates"].numpy()
    assert set(np.unique(gates)) <= {0.0, 1.0} and 0 < gates[IDS != 0].mean() < 1
    # The same weights without token dropping: every token computed.
    dense = small(token_dropping=False)
    dense.set_weights(model.get_weights())
    np.testing.assert_allclose(model(IDS), dense(IDS), atol=1e-5)
    model.save(tmp_path / "ganet_transformer.keras")
    reloaded = keras.models.load_model(tmp_path / "ganet_transformer.keras")
    np.testing.assert_allclose(reloaded(IDS), model(IDS), atol=1e-6)
    check_serving_archive(reloaded, tmp_path)


def check_serving_archive(model, tmp_path):
    """The exported SavedModel serves texts through the top_k path."""
    words = [f"w{i}" for i in range(48)]
    vectorizer = vectorizer_from_vocabulary(words, 10)
    archive = build_serving_archive(model, vectorizer, ["a", "b", "c"])
    archive.write_out(str(tmp_path / "saved"), verbose=False)
    served = tf.saved_model.load(str(tmp_path / "saved"))
    texts = tf.constant(["w3 w5 w7 w9 w11", "w1", "w20 w21 w22 w23 w24 w25 w26 w27 w28 w29 w30"])
    outputs = served.signatures["serving_default"](text=texts)
    expected = model(vectorizer(texts))
    np.testing.assert_allclose(outputs["probabilities"], expected, atol=1e-5)
    graph = served.signatures["serving_default"].graph.as_graph_def()
    ops = {node.op for function in graph.library.function for node in function.node_def}
    assert "TopKV2" in ops


@pytest.mark.large
def test_sparse_training_fits_under_xla_and_trains_the_gate_network(tmp_path):
    model = small(sparse_training=True, target_density=0.3, penalty=0.0)
    assert model.get_layer("encoder_1").training_density == 0.3
    model.compile("adam", "sparse_categorical_crossentropy", jit_compile=True)
    gate_weights = model.get_layer("auxiliary").trainable_weights
    before = [np.array(w) for w in gate_weights]
    history = model.fit(IDS, LABELS, epochs=1, batch_size=8, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    # The pooling attends to the round(0.3 T) kept tokens of each text only.
    lengths = (IDS != 0).sum(1)
    kept = np.maximum(1, np.floor(0.3 * lengths + 0.5))
    np.testing.assert_allclose(history.history["attended_density"], [np.mean(kept / lengths)], rtol=1e-5)
    # No penalty: the gate network learns from the task loss alone.
    assert any(not np.allclose(a, np.array(w)) for a, w in zip(before, gate_weights, strict=True))
    model.save(tmp_path / "sparse_training.keras")
    reloaded = keras.models.load_model(tmp_path / "sparse_training.keras")
    assert reloaded.get_layer("encoder_2").sparse_training
    np.testing.assert_allclose(reloaded(IDS), model(IDS), atol=1e-6)
    # A sparse-trained model serves as a SavedModel like any gated one.
    check_serving_archive(reloaded, tmp_path)
    with pytest.raises(ValueError, match="target_density"):
        small(sparse_training=True, target_density=None)


def fitted_stem_model(tmp_path, **options):
    """A `conv`-stem model with `fnn` gates at density 0.4, fitted for 2
    epochs; checks that its stem trains, that it reloads from a `.keras`
    file and that more padding changes nothing. Returns it and its
    probabilities on `IDS`."""
    model = build_ganet_transformer(
        3,
        vocabulary_size=50,
        embedding_dim=6,
        hidden_dim=8,
        num_heads=2,
        max_length=16,
        attention_units=4,
        stem="conv",
        auxiliary="fnn",
        auxiliary_hidden_dim=5,
        target_density=0.4,
        sparse_training=True,
        seed=0,
        **options,
    )
    model.compile("adam", "sparse_categorical_crossentropy", jit_compile=False)
    stem_before = keras.ops.convert_to_numpy(model.get_layer("convolution_1").kernel)
    history = model.fit(IDS, LABELS, epochs=2, batch_size=8, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert not np.allclose(stem_before, keras.ops.convert_to_numpy(model.get_layer("convolution_1").kernel))
    probabilities = keras.ops.convert_to_numpy(model.predict(IDS, verbose=0))
    model.save(tmp_path / "stem.keras")
    reloaded = keras.models.load_model(tmp_path / "stem.keras")
    np.testing.assert_allclose(reloaded.predict(IDS, verbose=0), probabilities, atol=1e-6)
    np.testing.assert_allclose(model.predict(np.pad(IDS, [[0, 0], [0, 6]]), verbose=0), probabilities, atol=1e-5)
    return model, probabilities


def test_a_conv_stem_that_the_gates_and_the_encoder_share(tmp_path):
    model, _ = fitted_stem_model(tmp_path)
    # The gates read the stem's states; the encoder its join with the embeddings.
    assert model.get_layer("auxiliary").input[0].shape[-1] == 5
    assert model.get_layer("embeddings_and_stem").output.shape[-1] == 6 + 5
    # The gates read the padding mask though the stem's convolutions drop it:
    # each row opens round(0.4 T) of its T real tokens, no padding.
    gates = keras.ops.convert_to_numpy(keras.Model(model.input, model.get_layer("gate_sparsity").output)(IDS))
    real = IDS != 0
    assert not np.any(gates[~real])
    np.testing.assert_array_equal((gates > 0.5).sum(1), np.maximum(1, np.round(0.4 * real.sum(1))))
    with pytest.raises(ValueError, match="`stem` must be one of"):
        build_ganet_transformer(2, vocabulary_size=50, hidden_dim=8, num_heads=2, stem="lstm")


def test_pooling_all_reads_every_real_token_and_needs_sparse_training(tmp_path):
    # Without positions too (`conv-stem-all-nopos-rho0.2`): each token reads
    # its neighbours through the stem; the model fits and reloads.
    model, _ = fitted_stem_model(tmp_path, pooling="all", position_embedding=False)
    assert "position_embedding" not in [layer.name for layer in model.layers]
    explained = build_explainer(model)(IDS)
    weights = keras.ops.convert_to_numpy(explained["attention"])
    gates = keras.ops.convert_to_numpy(explained["gates"])
    real = IDS != 0
    # Every real token has pooling weight, the closed ones too; padding none.
    assert np.all(weights[real] > 0) and np.any(gates[real] < 0.5)
    assert not np.any(weights[~real])
    with pytest.raises(ValueError, match="`pooling` must be one of"):
        build_ganet_transformer(2, vocabulary_size=50, hidden_dim=8, num_heads=2, pooling="mean")
    with pytest.raises(ValueError, match="sparse_training=True"):
        build_ganet_transformer(2, vocabulary_size=50, hidden_dim=8, num_heads=2, pooling="all", target_density=0.4)


def test_without_position_embeddings_the_blocks_are_order_blind():
    # fnn gates read each token alone, so without positions nothing in the
    # model reads the order: reversing each row's real tokens changes nothing.
    reversed_ids = IDS.copy()
    for row, length in enumerate((IDS != 0).sum(1)):
        reversed_ids[row, :length] = IDS[row, :length][::-1]
    options = {"target_density": 0.4, "sparse_training": True, "seed": 0}
    unordered = small(position_embedding=False, **options)
    assert "position_embedding" not in [layer.name for layer in unordered.layers]
    probabilities = keras.ops.convert_to_numpy(unordered.predict(IDS, verbose=0))
    np.testing.assert_allclose(unordered.predict(reversed_ids, verbose=0), probabilities, atol=1e-5)
    ordered = small(**options)
    assert not np.allclose(ordered.predict(reversed_ids, verbose=0), ordered.predict(IDS, verbose=0), atol=1e-5)
