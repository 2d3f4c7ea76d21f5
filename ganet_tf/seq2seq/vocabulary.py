"""Tokenisation for sequence to sequence, by Keras' `TextVectorization`.

Ids: 0 padding, 1 out of vocabulary; target vocabularies then hold the
start and end tokens (2 and 3), which no standardised text contains.
"""

import re

import keras
import numpy as np
import tensorflow as tf

from ganet_tf.data.length_buckets import batch_by_length
from ganet_tf.errors import GANetInputError

START, END = "[start]", "[end]"
PAD_ID, UNKNOWN_ID, START_ID, END_ID = 0, 1, 2, 3
# How the unknown id reads in detokenised text: a word vocabulary's token,
# SentencePiece's rendering of id 1.
UNKNOWN_MARKS = ("[UNK]", "\u2047")


def holds_unknown(text):
    """Whether a detokenised translation holds the unknown token."""
    return any(mark in text for mark in UNKNOWN_MARKS)


# Punctuation becomes tokens of its own; apostrophes stay inside words.
_PUNCTUATION = r"([!\"#$%&()*+,\-./:;<=>?@\[\\\]^_`{|}~])"


@keras.saving.register_keras_serializable(package="ganet_tf")
def standardize_translation(texts):
    """Lower case (Unicode), punctuation split off as separate tokens."""
    texts = tf.strings.lower(texts, encoding="utf-8")
    return tf.strings.regex_replace(texts, _PUNCTUATION, r" \1 ")


def vectorizer_from_vocabulary(vocabulary):
    """A ragged `TextVectorization` with a fixed vocabulary (from id 2 on)."""
    return keras.layers.TextVectorization(
        standardize=standardize_translation,
        vocabulary=list(vocabulary),
        output_mode="int",
        ragged=True,
    )


def build_vocabulary(texts, min_count=1, max_tokens=None, target=False):
    """The tokens of `texts` seen at least `min_count` times, most frequent
    first (`TextVectorization.adapt`), with the start and end tokens in
    front for a target side."""
    if not texts:
        raise GANetInputError("No training sentences to build a vocabulary from.")
    counter = keras.layers.TextVectorization(
        standardize=standardize_translation, output_mode="int", max_tokens=max_tokens
    )
    counter.adapt(tf.data.Dataset.from_tensor_slices(list(texts)).batch(2048))
    vocabulary = counter.get_vocabulary(include_special_tokens=False)
    if min_count > 1:
        tokens = tf.strings.split(standardize_translation(tf.constant(list(texts))))
        unique, _, counts = tf.unique_with_counts(tokens.flat_values)
        counts = dict(zip(unique.numpy().tolist(), counts.numpy().tolist(), strict=True))
        vocabulary = [t for t in vocabulary if counts.get(t.encode(), 0) >= min_count]
    if not vocabulary:
        raise GANetInputError("The training sentences contain no tokens.")
    return ([START, END] if target else []) + vocabulary


def encode(vectorizer, texts, target=False):
    """A list of int32 id arrays; targets get the start and end ids."""
    return id_rows(vectorizer(tf.constant(list(texts))).to_list(), target)


def id_rows(rows, target=False):
    """Lists of ids as int32 arrays, a target's between the start and end ids."""
    if target:
        return [np.asarray([START_ID, *row, END_ID], "int32") for row in rows]
    return [np.asarray(row, "int32") for row in rows]


def make_dataset(source_ids, target_ids, batch_size, shuffle=False, seed=None, buckets=0):
    """Batches `({"source", "target_in"}, target_out)`, padded per batch.

    `target_in` is the target without its last token (teacher forcing),
    `target_out` without its first. With `buckets`, batches hold pairs of
    similar length (the longer of source and target), from that many
    equal-count length buckets (`ganet_tf.data.length_buckets`): far less
    padding, and so less time per epoch, than random batches of sentences
    as varied as Multi30k's.
    """
    if not isinstance(batch_size, int) or batch_size < 1:
        raise GANetInputError(f"--batch-size must be a positive integer, got {batch_size}.")
    for number, row in enumerate(source_ids):
        if len(row) == 0:
            raise GANetInputError(f"Source sentence {number + 1} has no tokens: remove it or fill it in.")

    def generator():
        yield from zip(source_ids, target_ids, strict=True)

    signature = (tf.TensorSpec([None], "int32"), tf.TensorSpec([None], "int32"))
    dataset = tf.data.Dataset.from_generator(generator, output_signature=signature)
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(len(source_ids)))
    dataset = dataset.cache()
    if shuffle:
        dataset = dataset.shuffle(len(source_ids), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.map(lambda source, target: ({"source": source, "target_in": target[:-1]}, target[1:]))
    if not buckets:
        return dataset.padded_batch(batch_size).prefetch(tf.data.AUTOTUNE)
    lengths = [max(len(source), len(target) - 1) for source, target in zip(source_ids, target_ids, strict=True)]
    return batch_by_length(dataset, lengths, batch_size, buckets, _pair_length)


def _pair_length(inputs, target_out):
    return tf.maximum(tf.shape(inputs["source"])[0], tf.shape(target_out)[0])


def kept_row(ids):
    """The ids of one decoded row up to its end token, padding and start dropped."""
    kept = []
    for index in np.asarray(ids).tolist():
        if index == END_ID:
            break
        if index not in (PAD_ID, START_ID):
            kept.append(index)
    return kept


def kept_ids(ids):
    """A dense id batch with every id from the first end token on, and the
    start tokens, set to padding (0), in TensorFlow ops (`kept_row`)."""
    ended = tf.cumsum(tf.cast(tf.equal(ids, END_ID), tf.int32), axis=1) > 0
    kept = tf.logical_not(ended) & tf.not_equal(ids, START_ID)
    return tf.where(kept, ids, tf.zeros_like(ids))


def ids_to_tokens(ids, vocabulary):
    """Tokens of one decoded row, up to its end token, padding dropped."""
    return [vocabulary[index] for index in kept_row(ids)]


# How word tokens join into text (in Python, `detokenize`, and in
# TensorFlow, the word translator's graph): no space before closing
# punctuation or after opening brackets; quotes pairs are kept as produced.
DETOKENIZE_RULES = ((r" ([.,!?;:%)\]}])", r"\1"), (r"([(\[{$]) ", r"\1"), (r" ' ", "'"))


def detokenize(tokens):
    """Joins tokens into text by `DETOKENIZE_RULES`."""
    text = " ".join(tokens)
    for pattern, replacement in DETOKENIZE_RULES:
        text = re.sub(pattern, replacement, text)
    return text


class _Pieces:
    """What both vocabularies of a run share: `pieces`, every id's token."""

    pieces = ()

    @property
    def size(self):
        """The number of ids (the model's embedding rows)."""
        return len(self.pieces)

    @property
    def tokens(self):
        """The tokens from id 2 on, as the run's `vocabularies.json` lists them."""
        return self.pieces[2:]
