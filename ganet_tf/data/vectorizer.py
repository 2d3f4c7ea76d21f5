"""Text -> token ids with Keras' `TextVectorization`, and tf.data pipelines."""

import json
import os

import keras
import numpy as np
import tensorflow as tf

from ganet_tf.data.length_buckets import batch_by_length
from ganet_tf.errors import GANetInputError

# Bumped whenever `standardize_text` changes what it produces: a model's
# preprocessing.json records it, and loading refuses a mismatch.
STANDARDIZE_VERSION = 3
# The versions a run may have been written with. Version 3 turns control
# characters into spaces; version 2 kept them in tokens (a NUL could stop
# training) and is otherwise the same: its runs load, and read a text with
# a control character as version 3 does. (TREC and SST hold none; 1,573 of
# IMDB's 50,000 reviews do, nearly all C1 characters: Windows-1252 dashes,
# ellipses and quotes.)
READABLE_VERSIONS = (2, STANDARDIZE_VERSION)

# The Unicode control characters (category Cc: U+0000-U+001F, U+007F-U+009F,
# NUL included), in RE2's syntax for `tf.strings.regex_replace`.
CONTROL_CHARACTERS = r"\p{Cc}"

# The tokenizers of text classification: standardised words (GloVe's), or
# every UTF-8 byte a token (no vocabulary to learn, no embeddings file).
TOKENIZERS = ("words", "bytes")

# Byte tokens: each byte b is read as the Latin-1 character chr(b), so that
# `TextVectorization` splits bytes as characters. The NUL byte is read as
# U+0100 instead, since NumPy strips NUL from a string (it would become the
# empty padding token). Byte b has id b + 2 (0 pads, 1 would be unknown).
_NUL_STAND_IN = "\u0100"
BYTE_VOCABULARY = (_NUL_STAND_IN, *(chr(byte) for byte in range(1, 256)))

# Punctuation but the apostrophe, which contractions keep.
_PUNCTUATION = r"[!\"#$%&()*+,\-./:;<=>?@\[\\\]^_`{|}~]"


@keras.saving.register_keras_serializable(package="ganet_tf")
def standardize_text(texts):
    """Standardises `texts` the way GloVe 6B was tokenised.

    Every Unicode control character (NUL, BEL, ESC, ..., tab and line
    breaks) becomes a space, so it separates words and never joins a token;
    lower case; HTML line breaks (IMDB's `<br />`) and punctuation become
    spaces; contractions are split off as their own tokens, as in GloVe's
    vocabulary and the Penn Treebank text of SST: "don't" -> "do n't",
    "it's" -> "it 's". Apostrophes elsewhere become spaces. It runs in the
    graph, so training, `predict` and an exported SavedModel agree.
    """
    texts = tf.strings.regex_replace(texts, CONTROL_CHARACTERS, " ")
    texts = tf.strings.lower(texts)
    texts = tf.strings.regex_replace(texts, r"<br\s*/?>", " ")
    texts = tf.strings.regex_replace(texts, _PUNCTUATION, " ")
    texts = tf.strings.regex_replace(texts, r"(\w)n't\b", r"\1 n't")
    texts = tf.strings.regex_replace(texts, r"(\w)'(s|re|ve|ll|d|m)\b", r"\1 '\2")
    # Keep "n't" and "'s"-like tokens; any other apostrophe separates words.
    # (\x01 stands in for the apostrophes to keep while the others go.)
    texts = tf.strings.regex_replace(texts, r"(^|\s)'(s|re|ve|ll|d|m)\b", "\\1\x01\\2")
    texts = tf.strings.regex_replace(texts, r"n't\b", "n\x01t")
    texts = tf.strings.regex_replace(texts, "'", " ")
    return tf.strings.regex_replace(texts, "\x01", "'")


@keras.saving.register_keras_serializable(package="ganet_tf")
def bytes_as_characters(texts):
    """Reads every byte of `texts` as one character (`BYTE_VOCABULARY`).

    The bytes are decoded as Latin-1, which maps each byte to the character
    of the same number, whatever the text's encoding (invalid UTF-8
    included); the NUL byte becomes U+0100. It runs in the graph, so
    training, `predict` and an exported SavedModel agree.
    """
    texts = tf.strings.unicode_transcode(texts, input_encoding="ISO-8859-1", output_encoding="UTF-8")
    return tf.strings.regex_replace(texts, r"\x00", _NUL_STAND_IN)


def byte_vectorizer(sequence_length):
    """A `TextVectorization` layer that makes every byte a token.

    Byte b of a text has id b + 2 (0 pads); texts are cut or padded to
    `sequence_length` bytes.
    """
    return keras.layers.TextVectorization(
        standardize=bytes_as_characters,
        split="character",
        vocabulary=list(BYTE_VOCABULARY),
        output_mode="int",
        output_sequence_length=sequence_length,
        name="text_vectorization",
    )


def tokenizer_of(vectorizer):
    """`"bytes"` for a `byte_vectorizer`, else `"words"`."""
    return "bytes" if vectorizer.get_config().get("split") == "character" else "words"


def text_tokens(vectorizer, texts):
    """The tokens `vectorizer` reads in the string tensor `texts`, as a
    `tf.RaggedTensor` of strings (one row a text, before any cut): the
    standardised words, or one character per byte (`readable_token`)."""
    standardize = vectorizer.get_config()["standardize"] or (lambda strings: strings)
    if tokenizer_of(vectorizer) == "bytes":
        return tf.strings.unicode_split(standardize(texts), "UTF-8")
    return tf.strings.split(standardize(texts))


def readable_token(token, tokenizer="words"):
    """A token of `text_tokens` (UTF-8 bytes) as text a person can read: a
    word as it is; a printable ASCII byte as its character, another byte
    as `\\xNN`."""
    token = token.decode("utf-8") if isinstance(token, bytes) else token
    if tokenizer != "bytes":
        return token
    byte = 0 if token == _NUL_STAND_IN else ord(token)
    return chr(byte) if 32 <= byte < 127 else f"\\x{byte:02x}"


def vectorizer_from_vocabulary(vocabulary, sequence_length):
    """A `TextVectorization` layer with a fixed vocabulary.

    `vocabulary` lists the tokens from id 2 on (ids 0 and 1 are padding and
    out-of-vocabulary), as `get_vocabulary(include_special_tokens=False)`.
    """
    return keras.layers.TextVectorization(
        standardize=standardize_text,
        vocabulary=list(vocabulary),
        output_mode="int",
        output_sequence_length=sequence_length,
        name="text_vectorization",
    )


def build_vectorizer(
    texts,
    sequence_length=None,
    length_percentile=95.0,
    max_tokens=None,
    min_count=1,
    extra_vocabulary=(),
    tokenizer="words",
):
    """Adapts a `TextVectorization` layer on (training) `texts`.

    Args:
        texts: list of training texts. Adapt on training data only.
        sequence_length: int, the padded length. By default the
            `length_percentile` of the training lengths (in tokens).
        length_percentile: float in (0, 100], used without `sequence_length`.
        max_tokens: optional cap on the vocabulary size.
        min_count: keep tokens seen at least this often in `texts`.
        extra_vocabulary: tokens appended after the training vocabulary,
            e.g. the most frequent words of the pretrained embeddings, so
            that words unseen in training but known to GloVe keep an id
            (no test text is read for it).

    Returns:
        A `TextVectorization` layer mapping strings to `(batch,
        sequence_length)` int ids, 0 = padding, 1 = out of vocabulary.
    """
    if not texts:
        raise GANetInputError("No training texts to build a vocabulary from.")
    if sequence_length is not None and (not isinstance(sequence_length, int) or sequence_length < 1):
        raise GANetInputError(f"sequence length must be a positive integer, got {sequence_length}.")
    if not 0.0 < length_percentile <= 100.0:
        raise GANetInputError(f"length percentile must be in (0, 100], got {length_percentile}.")
    if tokenizer not in TOKENIZERS:
        raise GANetInputError(f"Unknown tokenizer {tokenizer!r}: choose one of {list(TOKENIZERS)}.")
    if tokenizer == "bytes":
        if sequence_length is None:
            lengths = tf.strings.length(tf.constant(list(texts))).numpy()
            sequence_length = max(1, int(np.ceil(np.percentile(lengths, length_percentile))))
        return byte_vectorizer(sequence_length)
    counter = keras.layers.TextVectorization(standardize=standardize_text, output_mode="int", max_tokens=max_tokens)
    counter.adapt(tf.data.Dataset.from_tensor_slices(texts).batch(1024))
    vocabulary = counter.get_vocabulary(include_special_tokens=False)
    if min_count > 1:
        tokens = tf.strings.split(standardize_text(tf.constant(texts)))
        unique, _, counts = tf.unique_with_counts(tokens.flat_values)
        counts = dict(zip(unique.numpy().tolist(), counts.numpy().tolist(), strict=True))
        vocabulary = [t for t in vocabulary if counts.get(t.encode(), 0) >= min_count]
    if not vocabulary:
        raise GANetInputError("The training texts contain no tokens.")
    known = set(vocabulary)
    vocabulary += [t for t in dict.fromkeys(extra_vocabulary) if t and t not in known]
    if sequence_length is None:
        lengths = text_lengths(texts)
        sequence_length = max(1, int(np.ceil(np.percentile(lengths, length_percentile))))
    return vectorizer_from_vocabulary(vocabulary, sequence_length)


def text_lengths(texts):
    """Number of tokens of each text after standardisation."""
    tokens = tf.strings.split(standardize_text(tf.constant(list(texts))))
    return tokens.row_lengths().numpy()


def vectorize(vectorizer, texts, batch_size=4096):
    """Token ids `(len(texts), sequence_length)` as int32 NumPy."""
    if not texts:
        length = vectorizer.get_config()["output_sequence_length"]
        return np.zeros([0, length], "int32")
    ids = [vectorizer(tf.constant(texts[i : i + batch_size])).numpy() for i in range(0, len(texts), batch_size)]
    return np.concatenate(ids).astype("int32")


def make_dataset(ids, labels, batch_size=32, shuffle=False, seed=None, buckets=None):
    """A batched `tf.data.Dataset` of `(token_ids, label)` pairs.

    Args:
        ids: int array `(n, steps)`, right-padded with 0.
        labels: int array `(n,)`.
        batch_size: examples per batch.
        shuffle: reshuffle the examples every epoch.
        seed: shuffle seed.
        buckets: optional number of length buckets. Batches then hold texts
            of similar length, padded only to the longest of their batch
            (`tf.data`'s `bucket_by_sequence_length`), so that padding does
            not dominate the cost on long, varied texts such as IMDB.
    """
    if not isinstance(batch_size, int) or batch_size < 1:
        raise GANetInputError(f"batch size must be a positive integer, got {batch_size}.")
    if not buckets:
        dataset = tf.data.Dataset.from_tensor_slices((ids, labels))
        if shuffle:
            dataset = dataset.shuffle(len(ids), seed=seed, reshuffle_each_iteration=True)
        return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)
    lengths = np.sum(ids != 0, axis=-1).astype("int32")
    dataset = tf.data.Dataset.from_tensor_slices((ids, lengths, labels))
    if shuffle:
        dataset = dataset.shuffle(len(ids), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.map(lambda tokens, length, label: (tokens[:length], label))
    return batch_by_length(dataset, lengths, batch_size, buckets, lambda tokens, label: tf.shape(tokens)[0])


def save_vectorizer(path, vectorizer, class_names):
    """Writes the vocabulary, sequence length and class names as JSON."""
    tokenizer = tokenizer_of(vectorizer)
    config = {
        "tokenizer": tokenizer,
        "vocabulary": [] if tokenizer == "bytes" else vectorizer.get_vocabulary(include_special_tokens=False),
        "sequence_length": vectorizer.get_config()["output_sequence_length"],
        "class_names": list(class_names),
        "standardize_version": STANDARDIZE_VERSION,
    }
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(config, handle, ensure_ascii=False)


def load_vectorizer(path):
    """Reads `save_vectorizer`'s JSON; returns `(vectorizer, class_names)`."""
    if not os.path.isfile(path):
        raise GANetInputError(
            f"No preprocessing file at {path}: point to a folder written by `python -m ganet_tf train --out`."
        )
    if os.path.isdir(path):
        raise GANetInputError(f"{path} is a folder, not a preprocessing.json file.")
    try:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
        if not isinstance(config, dict) or not all(
            key in config for key in ("vocabulary", "sequence_length", "class_names")
        ):
            raise ValueError("expected vocabulary, sequence_length and class_names")
    except (ValueError, UnicodeDecodeError) as error:
        message = (str(error).splitlines() or [type(error).__name__])[0][:120]
        raise GANetInputError(
            f"{path} is not a valid preprocessing file ({message}): copy it again from the run folder, or retrain."
        ) from None
    version = config.get("standardize_version", 1)
    if version not in READABLE_VERSIONS:
        raise GANetInputError(
            f"{path} was written with text standardisation v{version}, this "
            f"ganet_tf has v{STANDARDIZE_VERSION}: retrain the model with "
            "this version (or use the version that trained it)."
        )
    tokenizer = config.get("tokenizer", "words")
    if tokenizer not in TOKENIZERS:
        raise GANetInputError(
            f"{path} names the tokenizer {tokenizer!r}, which this ganet_tf does not know "
            f"({', '.join(TOKENIZERS)}): use the version that trained it, or retrain."
        )
    if tokenizer == "bytes":
        return byte_vectorizer(config["sequence_length"]), config["class_names"]
    vectorizer = vectorizer_from_vocabulary(config["vocabulary"], config["sequence_length"])
    return vectorizer, config["class_names"]
