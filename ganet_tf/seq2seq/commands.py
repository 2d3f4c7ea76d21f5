"""`python -m ganet_tf seq2seq`: its flags and handler.

`ganet_tf.cli` adds the flags with `add_seq2seq_arguments` and runs
`seq2seq_command` under the reliability policy. Adding the flags imports
neither Keras nor TensorFlow: the defaults and tokenizers are
`ganet_tf.seq2seq.config`'s, the layers' choices `ganet_tf.command_flags`'.
"""

from ganet_tf.command_flags import CHOICES
from ganet_tf.command_flags import add_flag
from ganet_tf.seq2seq.config import TOKENIZERS
from ganet_tf.seq2seq.config import Seq2SeqConfig

# The help of each flag of `seq2seq`, by flag.
HELPS = {
    "--task": "multi30k, copy or reverse",
    "--attention": (
        "bahdanau, gated, hier-rnn, hier-cnn or hier-act; gated alone trains the recipe validation chose "
        "(gated-hc: --auxiliary fnn --gate-input states --gate-distribution hard_concrete --target-density 0.6 "
        "--inference-mode top_k --inference-density 0.6); a flag given wins"
    ),
    "--data-dir": "folder with multi30k/ (default: $GANET_DATA_DIR)",
    "--levels": "hierarchy levels L (default: hier-cnn 3, hier-rnn 2, hier-act 3, the report's configurations)",
    "--block-size": "hierarchy block size k of hier-cnn and hier-rnn (default: 3 and 6, the report's configurations)",
    "--summary-inputs": (
        "what the hier-rnn and hier-cnn summarisers read: the encoder states or their attention keys "
        "(default: keys for hier-rnn, states for hier-cnn)"
    ),
    "--descent": "how training handles the hierarchy's argmax descent",
    "--patience": "stop after this many epochs without a lower validation loss and keep the best epoch (default: all)",
    "--out": "folder for model.keras, vocabularies.json and metrics.json",
    "--export": "also write a SavedModel here: raw source strings -> greedy translations",
    "--limit": "use only the first N pairs of each split",
    "--min-length": "copy and reverse: the shortest source, in symbols",
    "--max-length": "copy and reverse: the longest source, in symbols",
    "--backup-dir": "resumable training: a killed run started again continues",
    "--restart": "delete the backup in --backup-dir and start over (after changing flags)",
    "--tokenizer": (
        "how sentences become ids: SentencePiece subwords with byte fallback (unigram or bpe; nothing is "
        "unknown) or words (word; rare words become [UNK]); default: bpe on multi30k, word on copy and reverse"
    ),
    "--vocabulary-size": (
        "ids of the joint subword vocabulary of both sides, learned on the training split (default 8000)"
    ),
    "--buckets": "training batches of pairs of similar length, from N length buckets (0: random batches)",
    "--hidden": "encoder units each way",
    "--beam-size": "1: greedy decoding",
    "--init-from": (
        "the --out folder of a finished seq2seq run of the same task and sizes: start from its weights "
        "(e.g. gated attention fine-tuned from a Bahdanau run); layers it lacks start fresh"
    ),
    "--auxiliary": "the gates' auxiliary network (gated)",
    "--auxiliary-hidden-dim": "its width (gated)",
    "--gate-input": "what the auxiliary network reads (gated): the source embeddings or the encoder states",
    "--gate-unit": (
        "what one gate covers (gated, subword tokenizers): a source token, or a word, whose pieces open and close "
        "together (top_k then opens a share of the words)"
    ),
    "--penalty": "weight of the gates' L1 penalty (gated)",
    "--initial-gate-logit": "initial gate logit (gated): > 0 starts with most gates open",
    "--gate-distribution": "training gates (gated): relaxed_bernoulli or hard_concrete",
    "--straight-through": "hard gates forward (gated)",
    "--inference-mode": (
        "gates outside training (gated): threshold, sample or top_k (default: top_k with a target density, "
        "threshold with --target-density 0)"
    ),
    "--inference-density": "share of source states top_k opens (default: --target-density)",
    "--target-density": "density the gate penalty's multiplier steers to (gated); 0: GA-Net's fixed penalty",
    "--halting-penalty": "weight of the ACT halting penalty (hier-act)",
    "--target-block-size": (
        "mean block size the halting multiplier steers the ACT blocks to (hier-act); 0: the halting penalty alone"
    ),
    "--max-block-size": "most children an ACT block holds (hier-act)",
}


def add_seq2seq_arguments(parser):
    """The flags of `seq2seq`; the defaults are `Seq2SeqConfig`'s, the helps `HELPS`."""
    summary_inputs = CHOICES["ganet_tf.layers.hierarchical_attention.SUMMARY_INPUTS"]
    descents = CHOICES["ganet_tf.layers.hierarchical_attention.DESCENTS"]
    defaults = Seq2SeqConfig()
    add_flag(parser, "--task", defaults, help=HELPS["--task"])
    add_flag(parser, "--attention", defaults, help=HELPS["--attention"])
    parser.add_argument("--data-dir", help=HELPS["--data-dir"])
    add_flag(parser, "--levels", defaults, int, help=HELPS["--levels"])
    add_flag(parser, "--block-size", defaults, int, help=HELPS["--block-size"])
    add_flag(parser, "--summary-inputs", defaults, choices=summary_inputs, help=HELPS["--summary-inputs"])
    add_flag(parser, "--descent", defaults, choices=descents, help=HELPS["--descent"])
    add_flag(parser, "--epochs", defaults, int)
    add_flag(parser, "--patience", defaults, int, help=HELPS["--patience"])
    add_flag(parser, "--seed", defaults, int)
    for flag in ("--out", "--export"):
        parser.add_argument(flag, help=HELPS[flag])
    parser.add_argument("--limit", type=int, help=HELPS["--limit"])
    for flag in ("--min-length", "--max-length"):
        add_flag(parser, flag, defaults, int, help=HELPS[flag])
    parser.add_argument("--backup-dir", help=HELPS["--backup-dir"])
    parser.add_argument("--restart", action="store_true", help=HELPS["--restart"])
    add_flag(parser, "--tokenizer", defaults, choices=TOKENIZERS, help=HELPS["--tokenizer"])
    add_flag(parser, "--vocabulary-size", defaults, int, help=HELPS["--vocabulary-size"])
    add_flag(parser, "--batch-size", defaults, int)
    add_flag(parser, "--buckets", defaults, int, help=HELPS["--buckets"])
    add_flag(parser, "--hidden", defaults, int, help=HELPS["--hidden"])
    add_flag(parser, "--embedding-dim", defaults, int)
    parser.add_argument("--input-feeding", action="store_true")
    for flag in ("--dropout", "--lr"):
        add_flag(parser, flag, defaults, float)
    add_flag(parser, "--beam-size", defaults, int, help=HELPS["--beam-size"])
    parser.add_argument("--init-from", help=HELPS["--init-from"])
    _add_seq2seq_gate_arguments(parser, defaults)
    add_flag(parser, "--verbose", defaults, int, choices=(0, 1, 2))


def _add_seq2seq_gate_arguments(parser, defaults):
    """The options of the gated and ACT attentions of `seq2seq`; the gate
    options' older spellings still work (`deprecated`)."""

    def gate_flag(flag, *types, **options):
        add_flag(parser, flag, defaults, *types, help=HELPS[flag], **options)

    gate_flag("--auxiliary", choices=CHOICES["ganet_tf.layers.auxiliary_network.ENCODERS"], deprecated=("--aux",))
    gate_flag("--auxiliary-hidden-dim", int, deprecated=("--aux-hidden",))
    gate_flag("--gate-input", choices=CHOICES["ganet_tf.seq2seq.encoder_decoder.GATE_INPUTS"])
    gate_flag("--gate-unit", choices=CHOICES["ganet_tf.seq2seq.encoder_decoder.GATE_UNITS"])
    gate_flag("--penalty", float, deprecated=("--gate-penalty",))
    gate_flag("--initial-gate-logit", float, deprecated=("--gate-bias",))
    gate_flag("--gate-distribution")
    parser.add_argument("--straight-through", action="store_true", help=HELPS["--straight-through"])
    gate_flag("--inference-mode")
    parser.add_argument("--inference-density", type=float, help=HELPS["--inference-density"])
    gate_flag("--target-density", float)
    gate_flag("--halting-penalty", float)
    gate_flag("--target-block-size", float)
    gate_flag("--max-block-size", int)


def seq2seq_command(args):
    """`python -m ganet_tf seq2seq`: the JSON summary of `run_seq2seq`."""
    from ganet_tf.seq2seq.run import run_seq2seq

    names = set(Seq2SeqConfig.__dataclass_fields__)
    config = Seq2SeqConfig(**{k: v for k, v in vars(args).items() if k in names})
    return run_seq2seq(config, given=getattr(args, "given_flags", ()))
