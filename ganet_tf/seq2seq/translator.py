"""A SavedModel that maps raw source sentences to greedy translations."""

import os

import tensorflow as tf

from ganet_tf.policy.disk_space import tensorflow_disk_errors
from ganet_tf.policy.run_folder import RUN_MARKER
from ganet_tf.policy.run_folder import write_run_folder
from ganet_tf.seq2seq.decoding import greedy_decode
from ganet_tf.seq2seq.decoding import length_limits

# What `tf.saved_model.save` writes, beside the project's run marker.
SAVED_MODEL_FILES = frozenset({"saved_model.pb", "fingerprint.pb", "variables", "assets", RUN_MARKER})


class Translator(tf.Module):
    """Raw source strings -> detokenised greedy translations, in TF ops.

    Holds the trained `EncoderDecoder` and the run's two vocabularies (a
    `SubwordVocabulary` or `WordVocabulary` each, tokenising and
    detokenising in TensorFlow as in training), so that the exported
    SavedModel needs neither this package nor Keras:
    `tf.saved_model.load(path).signatures["serving_default"](
    sentences=tf.constant([...]))["translations"]`. A subword run's
    SavedModel uses tensorflow-text's SentencePiece op: `import
    tensorflow_text` before loading it in Python (TF Serving has the op).

    Args:
        model: a trained `EncoderDecoder`.
        source_vocabulary: the run's source vocabulary.
        target_vocabulary: the run's target vocabulary.
    """

    def __init__(self, model, source_vocabulary, target_vocabulary, name="translator"):
        super().__init__(name=name)
        check_vocabulary_sizes(model, source_vocabulary, target_vocabulary)
        self.model = model
        # Copies made now: tensorflow-text's SentencePiece models live in
        # TensorFlow's eager kernel cache, which `tf.random.set_seed` (and
        # so `keras.utils.set_random_seed`) clears; a translator made before
        # such a call would trace a function over a deleted model.
        self.source_vocabulary = source_vocabulary.copy()
        # A joint subword vocabulary stays one model (one TensorFlow resource).
        joint = target_vocabulary is source_vocabulary
        self.target_vocabulary = self.source_vocabulary if joint else target_vocabulary.copy()
        # Tracked, so that their tables and models are saved.
        self.source_layer = self.source_vocabulary.layer
        self.target_layer = self.target_vocabulary.layer

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="sentences")])
    def translate(self, sentences):
        source = self.source_vocabulary.tokenize_graph(sentences)
        source = tf.cast(source.to_tensor(shape=[None, None]), tf.int32)
        # An empty sentence still gets one (padding) step, so shapes hold.
        source = tf.pad(source, [[0, 0], [0, tf.maximum(1 - tf.shape(source)[1], 0)]])
        ids = greedy_decode(self.model, source, length_limits(source))
        return {"translations": self.target_vocabulary.detokenize_graph(ids)}


def check_vocabulary_sizes(model, source_vocabulary, target_vocabulary):
    """Raises `ValueError` unless each vocabulary holds as many ids as the
    model's embedding (source) or output layer (target)."""
    config = model.get_config()
    for side, vocabulary in (("source", source_vocabulary), ("target", target_vocabulary)):
        size = config.get(f"{side}_vocabulary_size")
        if size != vocabulary.size:
            raise ValueError(
                f"`{side}_vocabulary` must hold the model's {size} {side} ids. Received: {vocabulary.size} ids"
            )


def is_translator_folder(path):
    """Whether `path` is empty or a translator SavedModel this project wrote."""
    entries = set(os.listdir(path))
    return not entries or (RUN_MARKER in entries and entries <= SAVED_MODEL_FILES)


def save_translator(model, source_vocabulary, target_vocabulary, export_dir):
    """Writes the translator SavedModel to `export_dir`, all or nothing.

    It is staged beside `export_dir` and renamed in; an earlier translator
    there is replaced (`ganet_tf.policy.run_folder.write_run_folder`).
    Check the folder first with `check_output_folder(export_dir, "--export",
    owned=is_translator_folder)`. A full disk is an `OSError` naming
    `export_dir` (`ganet_tf.policy.tensorflow_disk_errors`).
    """
    translator = Translator(model, source_vocabulary, target_vocabulary)

    def write_files(staging):
        with tensorflow_disk_errors(export_dir):
            tf.saved_model.save(translator, staging, signatures={"serving_default": translator.translate})

    write_run_folder(export_dir, write_files, owned=is_translator_folder)
    return export_dir
