"""A SavedModel that maps raw source sentences to greedy translations."""

import os

import tensorflow as tf

from ganet_tf.seq2seq.decoding import greedy_decode
from ganet_tf.seq2seq.vocabulary import END_ID
from ganet_tf.seq2seq.vocabulary import START_ID
from ganet_tf.seq2seq.vocabulary import vectorizer_from_vocabulary
from ganet_tf.training.run_folder import RUN_MARKER
from ganet_tf.training.run_folder import write_run_folder

MAX_EXTRA_TOKENS = 10
# What `tf.saved_model.save` writes, beside the project's run marker.
SAVED_MODEL_FILES = frozenset({"saved_model.pb", "fingerprint.pb", "variables", "assets", RUN_MARKER})


class Translator(tf.Module):
    """Raw source strings -> detokenised greedy translations, in TF ops.

    Holds the trained `EncoderDecoder`, the source `TextVectorization` (the
    same standardisation as in training) and the target vocabulary, so
    that the exported SavedModel needs neither this package nor Keras:
    `tf.saved_model.load(path).signatures["serving_default"](
    sentences=tf.constant([...]))["translations"]`.

    Args:
        model: a trained `EncoderDecoder`.
        source_vocabulary: the source tokens from id 2 on.
        target_vocabulary: the target tokens from id 2 on (start and end
            tokens first).
    """

    def __init__(self, model, source_vocabulary, target_vocabulary, name="translator"):
        super().__init__(name=name)
        self.model = model
        self.source_vectorizer = vectorizer_from_vocabulary(source_vocabulary)
        self.target_tokens = tf.constant(["", "[UNK]"] + list(target_vocabulary))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="sentences")])
    def translate(self, sentences):
        source = self.source_vectorizer(sentences)
        source = tf.cast(source.to_tensor(shape=[None, None]), tf.int32)
        # An empty sentence still gets one (padding) step, so shapes hold.
        source = tf.pad(source, [[0, 0], [0, tf.maximum(1 - tf.shape(source)[1], 0)]])
        steps = tf.shape(source)[1]
        max_length = steps + steps // 2 + MAX_EXTRA_TOKENS
        ids = greedy_decode(self.model, source, max_length)
        # Keep tokens before the first end token.
        ended = tf.cumsum(tf.cast(tf.equal(ids, END_ID), tf.int32), axis=1) > 0
        keep = tf.logical_not(ended) & tf.not_equal(ids, 0) & tf.not_equal(ids, START_ID)
        tokens = tf.ragged.boolean_mask(tf.gather(self.target_tokens, ids), keep)
        text = tf.strings.reduce_join(tokens, axis=1, separator=" ")
        text = tf.strings.regex_replace(text, r" ([.,!?;:%)\]}])", r"\1")
        text = tf.strings.regex_replace(text, r"([(\[{$]) ", r"\1")
        text = tf.strings.regex_replace(text, r" ' ", "'")
        return {"translations": text}


def is_translator_folder(path):
    """Whether `path` is empty or a translator SavedModel this project wrote."""
    entries = set(os.listdir(path))
    return not entries or (RUN_MARKER in entries and entries <= SAVED_MODEL_FILES)


def save_translator(model, source_vocabulary, target_vocabulary, export_dir):
    """Writes the translator SavedModel to `export_dir`, all or nothing.

    It is staged beside `export_dir` and renamed in; an earlier translator
    there is replaced (`ganet_tf.training.run_folder.write_run_folder`).
    Check the folder first with `check_output_folder(export_dir, "--export",
    owned=is_translator_folder)`.
    """
    translator = Translator(model, source_vocabulary, target_vocabulary)

    def write_files(staging):
        tf.saved_model.save(translator, staging, signatures={"serving_default": translator.translate})

    write_run_folder(export_dir, write_files, owned=is_translator_folder)
    return export_dir
