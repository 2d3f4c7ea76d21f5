"""Sequence to sequence: an attentional encoder-decoder with Bahdanau, GA-Net
gated and hierarchical attention, on Multi30k and synthetic tasks."""

from ganet_tf import backends

# Imported by its own path (`from ganet_tf.seq2seq.x import y`) on another backend, it
# says so at once in one line, not in a misleading error at first use.
backends.require_tensorflow("ganet_tf.seq2seq", "tf.data, SentencePiece tokenizers, SavedModel")

from ganet_tf.seq2seq.config import Seq2SeqConfig
from ganet_tf.seq2seq.encoder_decoder import ATTENTIONS
from ganet_tf.seq2seq.encoder_decoder import EncoderDecoder
from ganet_tf.seq2seq.run import run_seq2seq

__all__ = ["ATTENTIONS", "EncoderDecoder", "Seq2SeqConfig", "run_seq2seq"]
