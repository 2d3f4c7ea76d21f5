"""Word-level vocabularies for sequence to sequence (`TextVectorization`)."""

import tensorflow as tf

from ganet_tf.seq2seq.vocabulary import DETOKENIZE_RULES
from ganet_tf.seq2seq.vocabulary import _Pieces
from ganet_tf.seq2seq.vocabulary import detokenize
from ganet_tf.seq2seq.vocabulary import encode
from ganet_tf.seq2seq.vocabulary import ids_to_tokens
from ganet_tf.seq2seq.vocabulary import kept_ids
from ganet_tf.seq2seq.vocabulary import vectorizer_from_vocabulary

UNKNOWN = "[UNK]"


class WordVocabulary(_Pieces):
    """One side's words (`--tokenizer word`): lower-cased, punctuation split off.

    A word the training split did not hold often enough maps to id 1 and
    decodes as `[UNK]`. The interface is `SubwordVocabulary`'s, so that
    training, `translate` and the SavedModel treat both alike.

    Args:
        tokens: the tokens from id 2 on (`build_vocabulary`); a target
            side starts with the start and end tokens.
    """

    def __init__(self, tokens):
        self.pieces = ["", UNKNOWN, *tokens]
        self.vectorizer = vectorizer_from_vocabulary(tokens)
        self.layer = self.vectorizer  # the Keras layer a SavedModel tracks

    def copy(self):
        """A new `WordVocabulary` of the same tokens."""
        return WordVocabulary(self.tokens)

    def encode(self, texts, target=False):
        """A list of int32 id arrays; targets get the start and end ids."""
        return encode(self.vectorizer, texts, target)

    def decode(self, rows):
        """Text of decoded id rows, each up to its end token (`detokenize`)."""
        return [detokenize(ids_to_tokens(row, self.pieces)) for row in rows]

    def tokenize_graph(self, sentences):
        """Ragged int ids of a string batch, in TensorFlow ops."""
        return tf.cast(self.vectorizer(sentences), tf.int32)

    def detokenize_graph(self, ids):
        """Text of a dense id batch (ids after the first end token dropped), in TensorFlow ops."""
        ids = kept_ids(ids)
        tokens = tf.ragged.boolean_mask(tf.gather(tf.constant(self.pieces), ids), tf.not_equal(ids, 0))
        text = tf.strings.reduce_join(tokens, axis=1, separator=" ")
        for pattern, replacement in DETOKENIZE_RULES:
            text = tf.strings.regex_replace(text, pattern, replacement)
        return text
