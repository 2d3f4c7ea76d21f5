"""Subword vocabularies for sequence to sequence: SentencePiece with bytes.

A `SubwordVocabulary` is a SentencePiece model (unigram or BPE; a run
learns one joint model for both sides), learned on the training sentences
with byte fallback: a character the training split never showed becomes
its UTF-8 bytes, so no text maps to the unknown id. Its ids keep the project's convention: 0 padding, 1
unknown (never produced), 2 start and 3 end (the target's), then the
pieces. Tokenising and detokenising run in TensorFlow through keras-hub's
`SentencePieceTokenizer` (tensorflow-text's op), the same in training,
`translate` and the exported SavedModel.
"""

import base64
import io

from ganet_tf.errors import GANetInputError
from ganet_tf.extras import import_extra
from ganet_tf.seq2seq.config import SUBWORD_TOKENIZERS
from ganet_tf.seq2seq.vocabulary import END_ID
from ganet_tf.seq2seq.vocabulary import PAD_ID
from ganet_tf.seq2seq.vocabulary import START_ID
from ganet_tf.seq2seq.vocabulary import UNKNOWN_ID
from ganet_tf.seq2seq.vocabulary import _Pieces
from ganet_tf.seq2seq.vocabulary import id_rows
from ganet_tf.seq2seq.vocabulary import kept_ids
from ganet_tf.seq2seq.vocabulary import kept_row

# SentencePiece's special pieces at the ids the word-level vocabularies use.
SPECIAL_IDS = {"pad_id": PAD_ID, "unk_id": UNKNOWN_ID, "bos_id": START_ID, "eos_id": END_ID}


def _subword_stack():
    """`(keras_hub, sentencepiece)`, or one input error naming the install."""
    # tensorflow_text: the SentencePiece op.
    keras_hub, sentencepiece, _ = import_extra(
        "seq2seq", "Subword vocabularies", "keras_hub", "sentencepiece", "tensorflow_text"
    )
    return keras_hub, sentencepiece


def _as_list(values):
    if hasattr(values, "to_list"):
        return values.to_list()
    return values.numpy().tolist() if hasattr(values, "numpy") else list(values)


class SubwordVocabulary(_Pieces):
    """A SentencePiece model with byte fallback, learned on training sentences.

    Args:
        proto: the serialized SentencePiece model (bytes), as `train` makes
            it or `from_json` reads it back.

    Example:

    >>> # 300 ids: the 256 byte pieces, the special ids and the characters, at least.
    >>> vocabulary = SubwordVocabulary.train(["Ein Mann fährt Fahrrad."] * 50, size=300)
    >>> vocabulary.decode(vocabulary.encode(["Ein Hund."], target=True))
    ['Ein Hund.']
    """

    def __init__(self, proto):
        if not isinstance(proto, bytes) or not proto:
            raise ValueError(f"`proto` must be a serialized SentencePiece model. Received: proto={type(proto)}")
        keras_hub, sentencepiece = _subword_stack()
        try:  # a damaged model is a Python error here, not a TensorFlow one later
            sentencepiece.SentencePieceProcessor(model_proto=proto)
        except RuntimeError as error:
            message = (str(error).splitlines() or ["unreadable"])[0][:80]
            raise ValueError(
                f"`proto` is not a SentencePiece model ({message}). Received: proto of {len(proto)} bytes"
            ) from None
        self.proto = proto
        self.tokenizer = keras_hub.tokenizers.SentencePieceTokenizer(proto=proto, dtype="int32")
        self.layer = self.tokenizer  # the Keras layer a SavedModel tracks
        pieces = self.tokenizer.get_vocabulary()
        special = [self.tokenizer.token_to_id(piece) for piece in pieces[:4]]
        if special != [0, 1, 2, 3] or len(pieces) <= 4:
            raise ValueError("`proto` must put padding, unknown, start and end at ids 0-3 (`SubwordVocabulary.train`).")
        self.pieces = pieces

    @classmethod
    def train(cls, texts, size=8000, model_type="unigram"):
        """Learns a SentencePiece model of at most `size` pieces on `texts`.

        Args:
            texts: the training sentences of one side (raw text).
            size: the number of ids, specials and bytes included; a corpus
                too small for it gets fewer.
            model_type: `"unigram"` or `"bpe"`.

        Returns:
            A `SubwordVocabulary`. The text is NFKC-normalised and runs of
            spaces collapse (SentencePiece's `nmt_nfkc`), which is what
            decoding gives back.
        """
        if model_type not in SUBWORD_TOKENIZERS:
            raise ValueError(f"`model_type` must be one of {SUBWORD_TOKENIZERS}. Received: model_type={model_type}")
        texts = [text for text in texts if text.strip()]
        if not texts:
            raise GANetInputError("No training sentences to learn a subword vocabulary from.")
        _, sentencepiece = _subword_stack()

        model = io.BytesIO()
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(texts),
            model_writer=model,
            vocab_size=int(size),
            model_type=model_type,
            byte_fallback=True,
            character_coverage=1.0,
            hard_vocab_limit=False,
            normalization_rule_name="nmt_nfkc",
            num_threads=1,  # the same model on every machine
            minloglevel=2,
            **SPECIAL_IDS,
        )
        return cls(model.getvalue())

    def copy(self):
        """A new `SubwordVocabulary` of the same model."""
        return SubwordVocabulary(self.proto)

    def encode(self, texts, target=False):
        """A list of int32 id arrays; targets get the start and end ids."""
        import tensorflow as tf

        # Eager keras-hub tokenizers give Python lists.
        return id_rows(_as_list(self.tokenizer(tf.constant(list(texts), tf.string))), target)

    def decode(self, rows):
        """Text of decoded id rows, each up to its end token."""
        import tensorflow as tf

        kept = [kept_row(row) for row in rows]
        if not kept:
            return []
        texts = _as_list(self.tokenizer.detokenize(tf.ragged.constant(kept, dtype=tf.int32)))
        return [text.decode("utf-8") if isinstance(text, bytes) else text for text in texts]

    def tokenize_graph(self, sentences):
        """Ragged int32 ids of a string batch, in TensorFlow ops."""
        return self.tokenizer(sentences)

    def detokenize_graph(self, ids):
        """Text of a dense id batch (ids after the first end token dropped), in TensorFlow ops."""
        return self.tokenizer.detokenize(kept_ids(ids))

    def to_json(self):
        """The model as base64 text, for `vocabularies.json`."""
        return base64.b64encode(self.proto).decode("ascii")

    @classmethod
    def from_json(cls, text):
        """The vocabulary that `to_json` wrote."""
        return cls(base64.b64decode(text.encode("ascii"), validate=True))
