"""`TextClassifier`: raw strings in, the exported SavedModel's numbers out."""

import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

import ganet_tf
from ganet_tf.errors import GANetInputError
from ganet_tf.inference import TextClassifier

LONG = " ".join(["good fine film"] * 5)
TEXTS = ["good fine film 3", "bad awful film 8", "naïve café — 東京", "", LONG, "?!", "awful"]


def _served(saved_model, texts):
    """The SavedModel's outputs, loaded with plain TensorFlow."""
    serve = tf.saved_model.load(saved_model).signatures["serving_default"]
    return {key: value.numpy() for key, value in serve(text=tf.constant(texts)).items()}


@pytest.fixture(scope="module")
def classifier(classifier_run):
    return ganet_tf.load_classifier(classifier_run)


def test_predict_on_raw_strings_matches_the_saved_model(classifier, saved_model):
    served = _served(saved_model, TEXTS)
    probabilities = classifier.predict(TEXTS, verbose=0)
    assert probabilities.shape == (len(TEXTS), 2)
    np.testing.assert_allclose(probabilities, served["probabilities"], atol=1e-6)
    # The same through `__call__` on a string tensor and `predict` on a tensor in small batches.
    np.testing.assert_allclose(classifier(tf.constant(TEXTS)), served["probabilities"], atol=1e-6)
    batched = classifier.predict(tf.constant(TEXTS), batch_size=2, verbose=0)
    np.testing.assert_allclose(batched, served["probabilities"], atol=1e-6)
    # A trained run is not the untrained tie of two classes.
    assert not np.allclose(probabilities[0], probabilities[1])


def test_classify_gives_labels_probabilities_and_the_attended_tokens(classifier, saved_model):
    served = _served(saved_model, TEXTS)
    results = classifier.classify(TEXTS, batch_size=3)
    assert [item["text"] for item in results] == TEXTS
    for row, item in enumerate(results):
        if not TEXTS[row].strip():
            assert item == {"text": "", "label": None, "probabilities": None, "attended": None}
            continue
        assert item["label"] == served["label"][row].decode()
        assert list(item["probabilities"]) == classifier.class_names == ["neg", "pos"]
        np.testing.assert_allclose(list(item["probabilities"].values()), served["probabilities"][row], atol=1e-6)
        attention = served["attention"][row]
        weights = [weight for _, weight in item["attended"]]
        np.testing.assert_allclose(weights, attention[attention > 0], atol=1e-6)
    tokens = {text: [token for token, _ in item["attended"] or []] for text, item in zip(TEXTS, results, strict=True)}
    # Standardised words of the text (the unknown ones keep their spelling), cut at the sequence length 6.
    assert set(tokens["good fine film 3"]) <= {"good", "fine", "film", "3"} and tokens["good fine film 3"]
    assert set(tokens[LONG]) <= {"good", "fine", "film"}
    assert len(tokens[LONG]) <= 6
    assert tokens["?!"] == []  # no token: classified as one unknown word, nothing to attend to
    assert set(tokens["naïve café — 東京"]) <= {"naïve", "café", "—", "東京"}


def test_the_keras_file_path_and_a_save_round_trip_give_the_same_model(classifier, classifier_run, tmp_path):
    expected = classifier.predict(TEXTS, verbose=0)
    from_file = TextClassifier.from_run(os.path.join(classifier_run, "model.keras"))
    np.testing.assert_allclose(from_file.predict(TEXTS, verbose=0), expected, atol=1e-6)
    path = str(tmp_path / "classifier.keras")
    classifier.save(path)
    reloaded = keras.models.load_model(path)
    assert isinstance(reloaded, TextClassifier) and reloaded.class_names == classifier.class_names
    np.testing.assert_allclose(reloaded.predict(TEXTS, verbose=0), expected, atol=1e-6)


def test_bad_runs_are_one_input_error_naming_the_file(classifier_run, translator_run, tmp_path):
    with pytest.raises(GANetInputError, match="No model.keras in"):
        TextClassifier.from_run(str(tmp_path / "missing"))
    broken = tmp_path / "broken"
    shutil.copytree(classifier_run, broken)
    with open(broken / "model.keras", "r+b") as handle:
        handle.truncate(1000)
    with pytest.raises(GANetInputError, match=r"model.keras is not a complete .keras file"):
        TextClassifier.from_run(str(broken))
    shutil.copy(os.path.join(classifier_run, "model.keras"), broken / "model.keras")
    (broken / "preprocessing.json").write_text('{"vocabulary": [', encoding="utf-8")
    with pytest.raises(GANetInputError, match="preprocessing.json is not a valid preprocessing file"):
        TextClassifier.from_run(str(broken))
    with pytest.raises(GANetInputError, match="is a seq2seq run.*ganet_tf translate"):
        TextClassifier.from_run(translator_run)


def test_arguments_are_checked(classifier):
    with pytest.raises(ValueError, match="must name the backbone's 2 classes"):
        TextClassifier(classifier.backbone, classifier.preprocessor, ["only one"])
    with pytest.raises(ValueError, match="Received: batch_size=0"):
        classifier.classify(["x"], batch_size=0)
    with pytest.raises(ValueError, match="Expected texts"):
        classifier.classify([1, 2])


@pytest.mark.parametrize("builder", ["soft", "bilstm"])
def test_attended_tokens_of_other_model_families(classifier, builder):
    from ganet_tf.models import build_model

    vocabulary_size = len(classifier.preprocessor.get_vocabulary())
    backbone = build_model(
        builder, 2, vocabulary_size=vocabulary_size, embedding_dim=4, hidden_dim=3, num_layers=1, sequence_length=6
    )
    other = TextClassifier(backbone=backbone, preprocessor=classifier.preprocessor, class_names=["neg", "pos"])
    (item,) = other.classify(["good fine zebra film"])
    probabilities = other.predict(["good fine zebra film"], verbose=0)[0]
    np.testing.assert_allclose(list(item["probabilities"].values()), probabilities)
    if builder == "bilstm":
        assert item["attended"] is None  # no attention to report
    else:  # soft attention weighs every token, the unknown "zebra" too
        assert [token for token, _ in item["attended"]] == ["good", "fine", "zebra", "film"]
        assert sum(weight for _, weight in item["attended"]) == pytest.approx(1.0, abs=1e-5)
