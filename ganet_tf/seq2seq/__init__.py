"""Sequence to sequence: an attentional encoder-decoder with Bahdanau, GA-Net
gated and hierarchical attention, on Multi30k and synthetic tasks.

The names below are imported from their modules on first use
(`ganet_tf.lazy_names`): `seq2seq`'s parser imports
`ganet_tf.seq2seq.commands` before TensorFlow.
"""

from ganet_tf import backends
from ganet_tf.lazy_names import lazy_names

# Imported by its own path (`from ganet_tf.seq2seq.x import y`) on another backend, it
# says so at once in one line, not in a misleading error at first use.
backends.require_tensorflow("ganet_tf.seq2seq", "tf.data, SentencePiece tokenizers, SavedModel")

__all__ = ["ATTENTIONS", "EncoderDecoder", "Seq2SeqConfig", "run_seq2seq"]

__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "ganet_tf.seq2seq.config": ("Seq2SeqConfig",),
        "ganet_tf.seq2seq.encoder_decoder": ("ATTENTIONS", "EncoderDecoder"),
        "ganet_tf.seq2seq.run": ("run_seq2seq",),
    },
)
