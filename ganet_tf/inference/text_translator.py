"""A trained seq2seq run as one object on raw source sentences."""

import json
import os

import tensorflow as tf

import ganet_tf.seq2seq.encoder_decoder  # noqa: F401  (registers EncoderDecoder for loading)
from ganet_tf.errors import GANetInputError
from ganet_tf.inference.text_classifier import as_texts
from ganet_tf.seq2seq.run import VOCABULARY_FILE
from ganet_tf.seq2seq.run_vocabularies import vocabularies_from_json
from ganet_tf.seq2seq.translator import Translator
from ganet_tf.training.non_finite_guard import non_finite_weights
from ganet_tf.training.run_folder import MODEL_FILE
from ganet_tf.training.run_folder import PREPROCESSING_FILE
from ganet_tf.training.trained_run import load_model_file


class TextTranslator:
    """Raw source sentences -> translations, from a `seq2seq --out` folder.

    Holds the run's trained `EncoderDecoder` and its source and target
    vocabularies in a `ganet_tf.seq2seq.translator.Translator`, the graph
    that `python -m ganet_tf seq2seq --export` saves: the same tokenisation
    as in training, greedy decoding, detokenised text. So a
    sentence gets the same translation here, from the exported SavedModel
    and on the command line (`python -m ganet_tf translate`).

    Where it departs from keras-hub's `Seq2SeqLM`: it is not a
    `keras.Model` and has no `generate`; `predict` takes the raw sentences
    and returns the translations (greedy, whatever `--beam-size` the run
    was scored with), because decoding is one TensorFlow while loop over
    the whole batch rather than a Keras forward pass.

    Args:
        model: a trained `ganet_tf.seq2seq.encoder_decoder.EncoderDecoder`.
        source_vocabulary: the run's source `SubwordVocabulary` or
            `WordVocabulary` (`ganet_tf.seq2seq.run_vocabularies`).
        target_vocabulary: its target vocabulary.

    Example:

    >>> translator = TextTranslator.from_run("runs/m30k")  # doctest: +SKIP
    >>> translator.predict(["Ein Hund läuft."])  # doctest: +SKIP
    ['a dog runs.']
    """

    def __init__(self, model, source_vocabulary, target_vocabulary):
        config = model.get_config()
        for side, vocabulary in (("source", source_vocabulary), ("target", target_vocabulary)):
            size = config.get(f"{side}_vocabulary_size")
            if size != vocabulary.size:
                raise ValueError(
                    f"`{side}_vocabulary` must hold the model's {size} {side} ids. Received: {vocabulary.size} ids"
                )
        self.model = model
        self.source_vocabulary = source_vocabulary
        self.target_vocabulary = target_vocabulary
        self.translator = Translator(model, self.source_vocabulary, self.target_vocabulary)

    @classmethod
    def from_run(cls, path):
        """The translator of a `python -m ganet_tf seq2seq --out` folder.

        Args:
            path: the run folder, with `model.keras` and `vocabularies.json`.

        Returns:
            A `TextTranslator`. A missing, truncated, diverged or mismatched
            file raises `GANetInputError` with one line naming the file and
            the fix.
        """
        path = os.fspath(path)
        vocabulary_path = os.path.join(path, VOCABULARY_FILE)
        if not os.path.isfile(vocabulary_path):
            if os.path.isfile(os.path.join(path, PREPROCESSING_FILE)):
                raise GANetInputError(
                    f"{path} is a classification run ({PREPROCESSING_FILE}, no {VOCABULARY_FILE}): "
                    f"classify with `python -m ganet_tf predict --model {path}`."
                )
            raise GANetInputError(
                f"No {VOCABULARY_FILE} in {path}: pass a folder written by `python -m ganet_tf seq2seq --out`."
            )
        source, target = vocabularies_from_json(_read_vocabularies(vocabulary_path), vocabulary_path)
        model_path = os.path.join(path, MODEL_FILE)
        model = load_model_file(model_path)
        if not hasattr(model, "encode") or not hasattr(model, "decode_step"):
            raise GANetInputError(
                f"{model_path} is not a seq2seq model: pass a folder written by `python -m ganet_tf seq2seq --out`."
            )
        bad = non_finite_weights(model)
        if bad:
            raise GANetInputError(
                f"{model_path} has non-finite weights ({bad[0]}): its training diverged; retrain it with a lower --lr."
            )
        try:
            return cls(model, source, target)
        except ValueError as error:
            raise GANetInputError(
                f"{model_path} and {vocabulary_path} come from different runs ({error}): copy the run folder whole."
            ) from None

    def predict(self, sentences, batch_size=64):
        """Translates `sentences`.

        Args:
            sentences: a list (or array) of raw source sentences.
            batch_size: sentences decoded at once.

        Returns:
            The list of translations, one string per sentence (an empty
            sentence is decoded from one padding step, as in the exported
            SavedModel). A translation ends at the end token, or after
            1.5 times the longest source of its batch plus 10 tokens.
        """
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"`batch_size` must be a positive integer. Received: batch_size={batch_size}")
        sentences = as_texts(sentences)
        translations = []
        for start in range(0, len(sentences), batch_size):
            batch = tf.constant(sentences[start : start + batch_size], tf.string)
            output = self.translator.translate(batch)["translations"].numpy()
            translations.extend(text.decode("utf-8") for text in output)
        return translations


def _read_vocabularies(path):
    try:
        with open(path, encoding="utf-8") as handle:
            saved = json.load(handle)
    except (ValueError, UnicodeDecodeError) as error:
        message = (str(error).splitlines() or [type(error).__name__])[0][:120]
        raise GANetInputError(
            f"{path} is not a valid vocabulary file ({message}): copy it again from the run folder, or retrain."
        ) from None
    return saved


def load_translator(path):
    """`TextTranslator.from_run(path)`: the translator of a `seq2seq --out` folder.

    Example:

    >>> translator = load_translator("runs/m30k")  # doctest: +SKIP
    >>> translator.predict(["Zwei Katzen schlafen."])  # doctest: +SKIP
    """
    return TextTranslator.from_run(path)
