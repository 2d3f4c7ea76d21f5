import json
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from ganet_tf.inference.text_translator import TextTranslator
from ganet_tf.seq2seq.decoding import greedy_decode
from ganet_tf.seq2seq.decoding import length_limits
from ganet_tf.seq2seq.encoder_decoder import EncoderDecoder
from ganet_tf.seq2seq.subword_vocabulary import SubwordVocabulary
from ganet_tf.seq2seq.translator import save_translator
from ganet_tf.seq2seq.vocabulary import build_vocabulary
from ganet_tf.seq2seq.vocabulary import make_dataset
from ganet_tf.seq2seq.word_vocabulary import WordVocabulary
from tests.command_checks import run_with_file_size_limit
from tests.command_checks import snapshot

SOURCE_VOCABULARY = WordVocabulary(["ein", "hund", "läuft", ".", "zwei", "katzen"])
TARGET_VOCABULARY = WordVocabulary(["[start]", "[end]", "a", "dog", "runs", ".", ",", "two", "cats"])
SENTENCES = ["Ein Hund läuft.", "Zwei Katzen, zwei Hunde", "", "Δύο γάτες 猫"]
# Two tiny subword sides: every character the sentences hold beyond these
# is spelled in bytes.
SOURCE_TEXTS = ["Ein Hund läuft.", "Zwei Katzen schlafen.", "Ein Mann fährt Fahrrad."] * 20
TARGET_TEXTS = ["A dog runs.", "Two cats sleep.", "A man rides a bike."] * 20


WORD_SOURCE = WordVocabulary(build_vocabulary(SOURCE_TEXTS))
WORD_TARGET = WordVocabulary(build_vocabulary(TARGET_TEXTS, target=True))


def _untrained_model():
    """A tiny word-level `EncoderDecoder`, built, not trained."""
    model = EncoderDecoder(SOURCE_VOCABULARY.size, TARGET_VOCABULARY.size, embedding_dim=4, hidden=4)
    model.build()
    return model


def _subword_sides():
    joint = SubwordVocabulary.train(SOURCE_TEXTS + TARGET_TEXTS, 300)
    return joint, joint


def _trained_model(source, target):
    """A tiny gated model trained on the three pairs until it translates them."""
    keras.utils.set_random_seed(3)
    model = EncoderDecoder(source.size, target.size, embedding_dim=16, hidden=16, attention="gated", seed=3)
    model.build()  # as `seq2seq` does: the gates' metrics exist before training
    model.compile(
        keras.optimizers.Adam(0.03), keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
    )
    pairs = make_dataset(source.encode(SOURCE_TEXTS), target.encode(TARGET_TEXTS, target=True), batch_size=30)
    model.fit(pairs, epochs=40, verbose=0)
    return model


@pytest.mark.parametrize("kind", [pytest.param("word", marks=pytest.mark.large), "subword"])
def test_saved_model_reloads_in_plain_tensorflow_and_translates_as_in_process(tmp_path, kind):
    source, target = (WORD_SOURCE, WORD_TARGET) if kind == "word" else _subword_sides()
    model = _trained_model(source, target)
    path = save_translator(model, source, target, str(tmp_path / "sm"))

    # What the Keras model decodes, turned into text in Python.
    rows = source.encode(SENTENCES)
    width = max(max(len(row) for row in rows), 1)
    batch = np.zeros([len(rows), width], "int32")
    for i, row in enumerate(rows):
        batch[i, : len(row)] = row
    expected = target.decode(greedy_decode(model, batch, length_limits(batch)).numpy())
    assert TextTranslator(model, source, target).predict(SENTENCES) == expected
    assert expected[0] == ("a dog runs." if kind == "word" else "A dog runs.")

    # A fresh interpreter with TensorFlow (and tensorflow-text, whose
    # SentencePiece op a subword translator holds) only: no ganet_tf, no Keras model.
    script = textwrap.dedent(f"""
        import json, sys
        import tensorflow as tf
        import tensorflow_text
        assert "ganet_tf" not in sys.modules and "keras_hub" not in sys.modules
        serve = tf.saved_model.load({path!r}).signatures["serving_default"]
        out = serve(sentences=tf.constant({SENTENCES!r}))["translations"]
        print(json.dumps([t.decode() for t in out.numpy()]))
        """)
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr[-2000:]
    translations = json.loads(completed.stdout.strip().splitlines()[-1])
    assert translations == expected
    assert any(t.strip() for t in translations)
    if kind == "subword":
        assert not any("[UNK]" in t or "\u2047" in t for t in translations)


def test_export_folder_is_checked_and_replaced_all_or_nothing(tmp_path):
    import os

    from ganet_tf.errors import GANetInputError
    from ganet_tf.policy.run_folder import check_output_folder
    from ganet_tf.seq2seq.translator import is_translator_folder

    model = _untrained_model()
    export = tmp_path / "sm"
    save_translator(model, SOURCE_VOCABULARY, TARGET_VOCABULARY, str(export))
    first = (export / "saved_model.pb").stat().st_mtime_ns
    # An earlier translator may be replaced; nothing else is left beside it.
    check_output_folder(str(export), "--export", owned=is_translator_folder)
    save_translator(model, SOURCE_VOCABULARY, TARGET_VOCABULARY, str(export))
    assert (export / "saved_model.pb").stat().st_mtime_ns != first
    assert sorted(os.listdir(tmp_path)) == ["sm"]
    # A folder of the user's own files is refused before anything is written.
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(GANetInputError, match="--export"):
        check_output_folder(str(mine), "--export", owned=is_translator_folder)


# In a process whose files may not grow past 16,000 bytes (the graph is
# about 400 kB): what the system's error of the save becomes.
SAVE_ON_A_FULL_DISK = """
from ganet_tf.seq2seq.translator import save_translator
from tests.seq2seq.test_translator import SOURCE_VOCABULARY, TARGET_VOCABULARY, _untrained_model
try:
    save_translator(_untrained_model(), SOURCE_VOCABULARY, TARGET_VOCABULARY, sys.argv[1])
except OSError as error:
    print(error.errno, error.filename)
"""


def test_a_full_disk_is_an_os_error_naming_the_export_and_keeps_the_earlier_one(tmp_path):
    import errno

    export = str(tmp_path / "sm")
    save_translator(_untrained_model(), SOURCE_VOCABULARY, TARGET_VOCABULARY, export)
    before = snapshot(tmp_path)
    done = run_with_file_size_limit(16_000, SAVE_ON_A_FULL_DISK, export)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == f"{errno.EFBIG} {export}"
    assert snapshot(tmp_path) == before
