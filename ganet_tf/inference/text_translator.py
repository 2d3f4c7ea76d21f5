"""A trained seq2seq run as one object on raw source sentences."""

import tensorflow as tf

from ganet_tf.inference.text_classifier import as_texts
from ganet_tf.seq2seq.run_translator import load_translator_parts
from ganet_tf.seq2seq.source_explanations import explain_sources
from ganet_tf.seq2seq.translator import Translator


class TextTranslator:
    """Raw source sentences -> translations, from a `seq2seq --out` folder.

    Holds the run's trained `EncoderDecoder` and its source and target
    vocabularies in a `ganet_tf.seq2seq.translator.Translator`, the graph
    that `seq2seq --export` and `export` save: the same tokenisation
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

    >>> # Not run by the tests: needs a trained run (`seq2seq --out runs/m30k`).
    >>> translator = TextTranslator.from_run("runs/m30k")  # doctest: +SKIP
    >>> translator.predict(["Ein Hund läuft."])  # doctest: +SKIP
    ['a dog runs.']
    >>> translator.explain(["Ein Hund läuft."])[0]["explain"]["open"]  # doctest: +SKIP
    ['hund', 'läuft']
    """

    def __init__(self, model, source_vocabulary, target_vocabulary):
        # Translator checks that the vocabularies fit the model (ValueError).
        self.translator = Translator(model, source_vocabulary, target_vocabulary)
        self.model = model
        self.source_vocabulary = source_vocabulary
        self.target_vocabulary = target_vocabulary

    @classmethod
    def from_run(cls, path, test_gates=None):
        """The translator of a `python -m ganet_tf seq2seq --out` folder.

        Args:
            path: the run folder, with `model.keras` and `vocabularies.json`.
            test_gates: optional test-gate rule of a gated run, from
                `ganet_tf.policy.trained_run.inference_rule` (e.g.
                `{"inference_mode": "top_k", "inference_density": 0.7}`):
                its gates then follow it instead of the run's own rule.

        Returns:
            A `TextTranslator`. A missing, truncated, diverged or mismatched
            file raises `GANetInputError` with one line naming the file and
            the fix (`ganet_tf.seq2seq.run_translator.load_translator_parts`).
        """
        return cls(*load_translator_parts(path, test_gates))

    def predict(self, sentences, batch_size=64):
        """Translates `sentences`.

        Args:
            sentences: a list (or array) of raw source sentences.
            batch_size: sentences decoded at once.

        Returns:
            The list of translations, one string per sentence (an empty
            sentence is decoded from one padding step, as in the exported
            SavedModel). A translation ends at the end token, or after
            1.5 times its own source's tokens plus 10, so it does not
            depend on `batch_size` or on the other sentences.
        """
        _check_batch_size(batch_size)
        sentences = as_texts(sentences)
        translations = []
        for start in range(0, len(sentences), batch_size):
            batch = tf.constant(sentences[start : start + batch_size], tf.string)
            output = self.translator.translate(batch)["translations"].numpy()
            translations.extend(text.decode("utf-8") for text in output)
        return translations

    def explain(self, sentences, batch_size=64):
        """Translates `sentences` and says what the model attended to in each.

        Args:
            sentences: a list (or array) of raw source sentences.
            batch_size: sentences decoded and encoded at once.

        Returns:
            One JSON-ready dict per sentence: `{"source": ..., "translation":
            ..., "explain": ...}`, the translation as `predict` gives it and
            the explanation of `ganet_tf.seq2seq.source_explanations.
            explain_sources`: for a gated run the source words its test gates
            leave open and close (`"words"`, `"open"`, `"closed"`,
            `"open_share"`; a subword run adds its `"pieces"`), for a
            hierarchical run the level-1 blocks and the nodes per level
            (`"blocks"`, `"nodes"`). A run of `--attention bahdanau`, which
            has neither, raises `ValueError`.
        """
        _check_batch_size(batch_size)
        sentences = as_texts(sentences)
        explanations = explain_sources(self.model, self.source_vocabulary, sentences, batch_size)
        translations = self.predict(sentences, batch_size)
        return [
            {"source": sentence, "translation": translation, "explain": explanation}
            for sentence, translation, explanation in zip(sentences, translations, explanations, strict=True)
        ]


def _check_batch_size(batch_size):
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"`batch_size` must be a positive integer. Received: batch_size={batch_size}")


def load_translator(path, test_gates=None):
    """`TextTranslator.from_run(path, test_gates)`: the translator of a `seq2seq --out` folder.

    Example:

    >>> # Not run by the tests: needs a trained run (`seq2seq --out runs/m30k`).
    >>> translator = load_translator("runs/m30k")  # doctest: +SKIP
    >>> translator.predict(["Zwei Katzen schlafen."])  # doctest: +SKIP
    """
    return TextTranslator.from_run(path, test_gates)
