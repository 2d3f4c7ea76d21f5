import subprocess
import sys
import textwrap

import keras
import numpy as np

from ganet_tf.seq2seq.decoding import greedy_decode
from ganet_tf.seq2seq.encoder_decoder import EncoderDecoder
from ganet_tf.seq2seq.translator import save_translator
from ganet_tf.seq2seq.vocabulary import detokenize
from ganet_tf.seq2seq.vocabulary import encode
from ganet_tf.seq2seq.vocabulary import ids_to_tokens
from ganet_tf.seq2seq.vocabulary import vectorizer_from_vocabulary

SOURCE_VOCABULARY = ["ein", "hund", "läuft", ".", "zwei", "katzen"]
TARGET_VOCABULARY = ["[start]", "[end]", "a", "dog", "runs", ".", ",", "two", "cats"]
SENTENCES = ["Ein Hund läuft.", "Zwei Katzen, zwei Hunde", ""]


def test_saved_model_reloads_in_plain_tensorflow_and_translates(tmp_path):
    # Fixed initial weights, whatever ran before: the check below needs an
    # untrained model that does not end every sentence at once.
    keras.utils.set_random_seed(3)
    model = EncoderDecoder(
        len(SOURCE_VOCABULARY) + 2, len(TARGET_VOCABULARY) + 2, embedding_dim=4, hidden=4, attention="gated", seed=3
    )
    model.build()
    path = save_translator(model, SOURCE_VOCABULARY, TARGET_VOCABULARY, str(tmp_path / "sm"))

    # What the Keras model decodes, turned into text in Python.
    vectorizer = vectorizer_from_vocabulary(SOURCE_VOCABULARY)
    rows = encode(vectorizer, SENTENCES)
    width = max(len(row) for row in rows)
    batch = np.zeros([len(rows), width], "int32")
    for i, row in enumerate(rows):
        batch[i, : len(row)] = row
    ids = greedy_decode(model, batch, width + width // 2 + 10).numpy()
    vocabulary = ["", "[UNK]"] + TARGET_VOCABULARY
    expected = [detokenize(ids_to_tokens(row, vocabulary)) for row in ids]

    # A fresh interpreter with TensorFlow only: no ganet_tf, no Keras model.
    script = textwrap.dedent(f"""
        import sys
        import tensorflow as tf
        assert "ganet_tf" not in sys.modules
        serve = tf.saved_model.load({path!r}).signatures["serving_default"]
        out = serve(sentences=tf.constant({SENTENCES!r}))["translations"]
        print("\\n".join(t.decode() for t in out.numpy()))
        """)
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr[-2000:]
    translations = completed.stdout.split("\n")[:3]
    assert translations == expected
    assert any(t.strip() for t in translations)


def test_export_folder_is_checked_and_replaced_all_or_nothing(tmp_path):
    import os

    import pytest

    from ganet_tf.errors import GANetInputError
    from ganet_tf.seq2seq.translator import is_translator_folder
    from ganet_tf.training.run_folder import check_output_folder

    model = EncoderDecoder(len(SOURCE_VOCABULARY) + 2, len(TARGET_VOCABULARY) + 2, embedding_dim=4, hidden=4)
    model.build()
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
