import json

import numpy as np
import pytest

from ganet_tf.data import build_vectorizer
from ganet_tf.data import load_vectorizer
from ganet_tf.data import make_dataset
from ganet_tf.data import save_vectorizer
from ganet_tf.data.vectorizer import readable_token
from ganet_tf.data.vectorizer import text_lengths
from ganet_tf.data.vectorizer import text_tokens
from ganet_tf.data.vectorizer import tokenizer_of
from ganet_tf.data.vectorizer import vectorize
from ganet_tf.errors import GANetInputError
from tests.lazy_import import tensorflow as tf

TEXTS = ["The cat sat.", "A dog<br />barked, loudly!", "cat cat dog", "one two three four five six"]


def test_length_percentile_vocabulary_and_padding():
    np.testing.assert_array_equal(text_lengths(TEXTS), [3, 4, 3, 6])
    vectorizer = build_vectorizer(TEXTS, length_percentile=50)
    assert vectorizer.get_config()["output_sequence_length"] == 4
    vocabulary = vectorizer.get_vocabulary()
    assert vocabulary[:2] == ["", "[UNK]"] and "br" not in vocabulary and "barked" in vocabulary
    ids = vectorize(vectorizer, ["cat dog zebra", ""])
    assert ids.shape == (2, 4)
    assert ids[0, 2] == 1 and np.all(ids[0, 3:] == 0) and np.all(ids[1] == 0)


def test_fixed_length_and_min_count():
    vectorizer = build_vectorizer(TEXTS, sequence_length=7, min_count=2)
    assert vectorizer.get_config()["output_sequence_length"] == 7
    assert vectorizer.get_vocabulary(include_special_tokens=False) == ["cat", "dog"]


def test_save_and_load_round_trip(tmp_path):
    vectorizer = build_vectorizer(TEXTS)
    path = str(tmp_path / "preprocessing.json")
    save_vectorizer(path, vectorizer, ["a", "b"])
    loaded, class_names = load_vectorizer(path)
    assert class_names == ["a", "b"]
    np.testing.assert_array_equal(vectorize(loaded, TEXTS), vectorize(vectorizer, TEXTS))


def test_dataset_batches():
    ids = np.arange(20, dtype="int32").reshape(10, 2)
    batches = list(make_dataset(ids, np.arange(10), batch_size=4, shuffle=True, seed=0))
    assert [len(x) for x, _ in batches] == [4, 4, 2]


def test_bad_input(tmp_path):
    with pytest.raises(GANetInputError, match="No training texts"):
        build_vectorizer([])
    with pytest.raises(GANetInputError, match="sequence length"):
        build_vectorizer(TEXTS, sequence_length=0)
    with pytest.raises(GANetInputError, match="no tokens"):
        build_vectorizer(["...", "!!"])
    with pytest.raises(GANetInputError, match="No preprocessing file"):
        load_vectorizer(str(tmp_path / "missing.json"))


def test_length_buckets_pad_each_batch_to_its_longest_text():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 40, size=200)
    ids = np.zeros([200, 40], "int32")
    for row, length in enumerate(lengths):
        ids[row, :length] = rng.integers(2, 50, size=length)
    seen = []
    for batch, labels in make_dataset(ids, np.arange(200), batch_size=16, shuffle=True, seed=0, buckets=4):
        batch = batch.numpy()
        real = (batch != 0).sum(axis=1)
        np.testing.assert_array_equal(real, lengths[labels.numpy()])
        assert batch.shape[1] == real.max()
        seen.extend(labels.numpy())
    assert sorted(seen) == list(range(200))


def test_length_buckets_state_their_number_of_batches():
    # Keras sizes the epoch from the cardinality: unknown, the first epoch
    # ends in a "Your input ran out of data" warning.
    rng = np.random.default_rng(1)
    ids = np.zeros([37, 20], "int32")
    for row, length in enumerate(rng.integers(0, 20, size=37)):
        ids[row, :length] = rng.integers(2, 50, size=length)
    dataset = make_dataset(ids, np.arange(37), batch_size=8, shuffle=True, seed=0, buckets=3)
    assert int(dataset.cardinality()) == 6
    for _ in range(2):  # reshuffled epochs have as many batches
        assert sum(1 for _ in dataset) == 6


def test_loading_refuses_another_standardisation(tmp_path):

    path = tmp_path / "preprocessing.json"
    save_vectorizer(str(path), build_vectorizer(TEXTS), ["a", "b"])
    config = json.loads(path.read_text())
    config["standardize_version"] = 1
    path.write_text(json.dumps(config))
    with pytest.raises(GANetInputError, match="standardisation v1"):
        load_vectorizer(str(path))
    # Version 2 differs only on control characters, which it mishandled.
    config["standardize_version"] = 2
    path.write_text(json.dumps(config))
    assert load_vectorizer(str(path))[1] == ["a", "b"]


def test_standardisation_splits_contractions_like_glove():
    from ganet_tf.data.vectorizer import standardize_text

    texts = ["I don't like it's style.<br />'Quoted' words!", "it 's a film that does n't work ,"]
    tokens = [t.decode().split() for t in standardize_text(np.asarray(texts)).numpy()]
    assert tokens[0] == ["i", "do", "n't", "like", "it", "'s", "style", "quoted", "words"]
    assert tokens[1] == ["it", "'s", "a", "film", "that", "does", "n't", "work"]


def test_extra_vocabulary_is_appended_after_training_words():
    vectorizer = build_vectorizer(TEXTS, extra_vocabulary=["zebra", "cat", "yak"])
    vocabulary = vectorizer.get_vocabulary(include_special_tokens=False)
    assert vocabulary[-2:] == ["zebra", "yak"] and vocabulary.count("cat") == 1


def test_control_characters_become_spaces():
    from ganet_tf.data.vectorizer import standardize_text

    texts = ["good\x00film", "bad\x07 film\x1b[0m", "it\x01s fine\x7f\x85\x9fnow", "tab\tand\nline"]
    tokens = [t.decode().split() for t in standardize_text(np.asarray(texts)).numpy()]
    assert tokens == [["good", "film"], ["bad", "film", "0m"], ["it", "s", "fine", "now"], ["tab", "and", "line"]]
    # A NUL at the end of a token neither joins nor hides it (NumPy strips
    # trailing NULs: "a\x00" and "a" would be one vocabulary entry twice).
    vectorizer = build_vectorizer(["a\x00 b", "hello\x00", "a b hello"], sequence_length=3)
    vocabulary = vectorizer.get_vocabulary(include_special_tokens=False)
    assert sorted(vocabulary) == ["a", "b", "hello"]
    ids = vectorize(vectorizer, ["hello\x00", "a\x00b", "a b"])
    assert ids[0].tolist() == vectorize(vectorizer, ["hello"])[0].tolist() and 1 not in ids
    assert ids[1].tolist() == ids[2].tolist()


def test_control_characters_in_train_predict_and_serving(tmp_path, capsys):
    """Training texts with NUL, BEL and ESC train; `predict` and the exported
    SavedModel read them as spaces, the same way."""
    import tensorflow as tf

    from ganet_tf import load_classifier
    from ganet_tf.cli import main
    from ganet_tf.export import export_saved_model

    words = ["good\x00fine", "bad\x07awful", "\x1bgreat", "poor \x00"]
    lines = [f"{'pos' if i % 2 else 'neg'} {words[i % 4]} film {i}" for i in range(40)]
    (tmp_path / "train.txt").write_text("\n".join(lines), encoding="utf-8")
    run = str(tmp_path / "run")
    flags = ["--model", "soft", "--epochs", "1", "--hidden", "4", "--glove-vocabulary", "0", "--verbose", "0"]
    flags += ["--batch-size", "40", "--buckets", "0"]
    capsys.readouterr()
    assert main(["train", "--train-file", str(tmp_path / "train.txt"), *flags, "--out", run]) == 0
    assert "40 text(s) hold control characters (first at line 1: U+0000)" in capsys.readouterr().err
    vectorizer, _ = load_vectorizer(f"{run}/preprocessing.json")
    assert {"good", "fine", "bad", "awful", "great", "poor"} <= set(vectorizer.get_vocabulary())

    texts = ["good\x00fine film", "good fine film", "bad\x07awful\x1b film", "bad awful  film"]
    classifier = load_classifier(run)
    probabilities = classifier.predict(texts, verbose=0)
    np.testing.assert_allclose(probabilities[0], probabilities[1], atol=1e-6)
    np.testing.assert_allclose(probabilities[2], probabilities[3], atol=1e-6)
    serve = tf.saved_model.load(export_saved_model(run, "tiny", base=str(tmp_path / "saved_models")))
    served = serve.signatures["serving_default"](text=tf.constant(texts))["probabilities"].numpy()
    np.testing.assert_allclose(served, probabilities, atol=1e-5)


def test_bytes_are_tokens_with_ids_byte_plus_two(tmp_path):
    vectorizer = build_vectorizer(["ab", "abcd"], sequence_length=6, tokenizer="bytes")
    texts = [b"a\x00\xff", "é".encode(), b"\xc3", b"", b"abcdefgh"]  # NUL, a non-ASCII byte, invalid UTF-8
    ids = vectorize(vectorizer, texts)
    np.testing.assert_array_equal(
        ids,
        [
            [97 + 2, 0 + 2, 255 + 2, 0, 0, 0],
            [0xC3 + 2, 0xA9 + 2, 0, 0, 0, 0],
            [0xC3 + 2, 0, 0, 0, 0, 0],
            [0] * 6,
            [ord(c) + 2 for c in "abcdef"],
        ],
    )
    path = str(tmp_path / "preprocessing.json")
    save_vectorizer(path, vectorizer, ["x", "y"])
    loaded, _ = load_vectorizer(path)
    assert tokenizer_of(loaded) == "bytes"
    np.testing.assert_array_equal(vectorize(loaded, texts), ids)


def test_byte_length_percentile_counts_bytes():
    vectorizer = build_vectorizer(["ab", "abcd", "é"], length_percentile=100, tokenizer="bytes")
    assert vectorizer.get_config()["output_sequence_length"] == 4


def test_byte_tokens_read_readably():
    vectorizer = build_vectorizer(["a"], sequence_length=4, tokenizer="bytes")
    tokens = text_tokens(vectorizer, tf.constant([b"a \x00\xe9"])).to_list()[0]
    assert [readable_token(token, "bytes") for token in tokens] == ["a", " ", "\\x00", "\\xe9"]
    words = build_vectorizer(TEXTS)
    assert text_tokens(words, tf.constant(["The cat's"])).to_list()[0] == [b"the", b"cat", b"'s"]


def test_unknown_tokenizer(tmp_path):
    with pytest.raises(GANetInputError, match="tokenizer"):
        build_vectorizer(TEXTS, tokenizer="characters")
    path = tmp_path / "preprocessing.json"
    saved = {"tokenizer": "pieces", "vocabulary": [], "sequence_length": 3, "class_names": ["a"]}
    path.write_text(json.dumps({**saved, "standardize_version": 3}))
    with pytest.raises(GANetInputError, match="pieces"):
        load_vectorizer(str(path))
