"""`python -m ganet_tf seq2seq`: its flags and handler.

`ganet_tf.cli` adds the flags with `add_seq2seq_arguments` and runs
`seq2seq_command` under the reliability policy.
"""

from ganet_tf.command_flags import add_flag


def add_seq2seq_arguments(parser):
    """The flags of `seq2seq`; the defaults are `Seq2SeqConfig`'s."""
    from ganet_tf.layers.hierarchical_attention import DESCENTS
    from ganet_tf.layers.hierarchical_attention import SUMMARY_INPUTS
    from ganet_tf.seq2seq.run import Seq2SeqConfig

    defaults = Seq2SeqConfig()
    add_flag(parser, "--task", defaults, help="multi30k, copy or reverse")
    attention_help = (
        "bahdanau, gated, hier-rnn, hier-cnn or hier-act; gated alone trains the recipe validation chose "
        "(gated-hc: --aux fnn --gate-input states --gate-distribution hard_concrete --target-density 0.6 "
        "--inference-mode top_k --inference-density 0.6); a flag given wins"
    )
    add_flag(parser, "--attention", defaults, help=attention_help)
    parser.add_argument("--data-dir", help="folder with multi30k/ (default: $GANET_DATA_DIR)")
    levels_help = "hierarchy levels L (default: hier-cnn 3, hier-rnn 2, hier-act 3, the report's configurations)"
    add_flag(parser, "--levels", defaults, int, help=levels_help)
    block_help = "hierarchy block size k of hier-cnn and hier-rnn (default: 3 and 6, the report's configurations)"
    add_flag(parser, "--block-size", defaults, int, help=block_help)
    summary_help = (
        "what the hier-rnn and hier-cnn summarisers read: the encoder states or their attention keys "
        "(default: keys for hier-rnn, states for hier-cnn)"
    )
    add_flag(parser, "--summary-inputs", defaults, choices=SUMMARY_INPUTS, help=summary_help)
    descent_help = "how training handles the hierarchy's argmax descent"
    add_flag(parser, "--descent", defaults, choices=DESCENTS, help=descent_help)
    add_flag(parser, "--epochs", defaults, int)
    patience_help = "stop after this many epochs without a lower validation loss and keep the best epoch (default: all)"
    add_flag(parser, "--patience", defaults, int, help=patience_help)
    add_flag(parser, "--seed", defaults, int)
    parser.add_argument("--out", help="folder for model.keras, vocabularies.json and metrics.json")
    parser.add_argument("--export", help="also write a SavedModel here: raw source strings -> greedy translations")
    parser.add_argument("--limit", type=int, help="use only the first N pairs of each split")
    add_flag(parser, "--min-length", defaults, int, help="copy and reverse: the shortest source, in symbols")
    add_flag(parser, "--max-length", defaults, int, help="copy and reverse: the longest source, in symbols")
    parser.add_argument("--backup-dir", help="resumable training: a killed run started again continues")
    parser.add_argument(
        "--restart", action="store_true", help="delete the backup in --backup-dir and start over (after changing flags)"
    )
    _add_tokenizer_arguments(parser, defaults)
    add_flag(parser, "--batch-size", defaults, int)
    buckets_help = "training batches of pairs of similar length, from N length buckets (0: random batches)"
    add_flag(parser, "--buckets", defaults, int, help=buckets_help)
    add_flag(parser, "--hidden", defaults, int, help="encoder units each way")
    add_flag(parser, "--embedding-dim", defaults, int)
    parser.add_argument("--input-feeding", action="store_true")
    add_flag(parser, "--dropout", defaults, float)
    add_flag(parser, "--lr", defaults, float)
    add_flag(parser, "--beam-size", defaults, int, help="1: greedy decoding")
    parser.add_argument(
        "--init-from",
        help="the --out folder of a finished seq2seq run of the same task and sizes: start from its weights "
        "(e.g. gated attention fine-tuned from a Bahdanau run); layers it lacks start fresh",
    )
    _add_seq2seq_gate_arguments(parser, defaults)
    add_flag(parser, "--verbose", defaults, int, choices=(0, 1, 2))


def _add_tokenizer_arguments(parser, defaults):
    """How `seq2seq` turns sentences into ids."""
    from ganet_tf.seq2seq.run_vocabularies import TOKENIZERS

    tokenizer_help = (
        "how sentences become ids: SentencePiece subwords with byte fallback (unigram or bpe; nothing is "
        "unknown) or words (word; rare words become [UNK]); default: bpe on multi30k, word on copy and reverse"
    )
    add_flag(parser, "--tokenizer", defaults, choices=TOKENIZERS, help=tokenizer_help)
    size_help = "ids of the joint subword vocabulary of both sides, learned on the training split (default 8000)"
    add_flag(parser, "--vocabulary-size", defaults, int, help=size_help)


def _add_seq2seq_gate_arguments(parser, defaults):
    """The options of the gated and ACT attentions of `seq2seq`."""
    from ganet_tf.layers.auxiliary_network import ENCODERS
    from ganet_tf.seq2seq.encoder_decoder import GATE_INPUTS
    from ganet_tf.seq2seq.encoder_decoder import GATE_UNITS

    add_flag(parser, "--aux", defaults, choices=ENCODERS, help="the gates' auxiliary network (gated)")
    add_flag(parser, "--aux-hidden", defaults, int, help="its width (gated)")
    gate_input_help = "what the auxiliary network reads (gated): the source embeddings or the encoder states"
    add_flag(parser, "--gate-input", defaults, choices=GATE_INPUTS, help=gate_input_help)
    gate_unit_help = (
        "what one gate covers (gated, subword tokenizers): a source token, or a word, whose pieces open and close "
        "together (top_k then opens a share of the words)"
    )
    add_flag(parser, "--gate-unit", defaults, choices=GATE_UNITS, help=gate_unit_help)
    add_flag(parser, "--gate-penalty", defaults, float, help="weight of the gates' L1 penalty (gated)")
    add_flag(
        parser, "--gate-bias", defaults, type=float, help="initial gate logit (gated): > 0 starts with most gates open"
    )
    add_flag(parser, "--gate-distribution", defaults, help="training gates (gated): relaxed_bernoulli or hard_concrete")
    parser.add_argument("--straight-through", action="store_true", help="hard gates forward (gated)")
    inference_mode_help = (
        "gates outside training (gated): threshold, sample or top_k (default: top_k with a target density, "
        "threshold with --target-density 0)"
    )
    add_flag(parser, "--inference-mode", defaults, help=inference_mode_help)
    inference_density_help = "share of source states top_k opens (default: --target-density)"
    parser.add_argument("--inference-density", type=float, help=inference_density_help)
    target_density_help = "density the gate penalty's multiplier steers to (gated); 0: GA-Net's fixed penalty"
    add_flag(parser, "--target-density", defaults, float, help=target_density_help)
    add_flag(parser, "--halting-penalty", defaults, float, help="weight of the ACT halting penalty (hier-act)")
    target_block_size_help = (
        "mean block size the halting multiplier steers the ACT blocks to (hier-act); 0: the halting penalty alone"
    )
    add_flag(parser, "--target-block-size", defaults, float, help=target_block_size_help)
    add_flag(parser, "--max-block-size", defaults, int, help="most children an ACT block holds (hier-act)")


def seq2seq_command(args):
    """`python -m ganet_tf seq2seq`: the JSON summary of `run_seq2seq`."""
    from ganet_tf.seq2seq.run import Seq2SeqConfig
    from ganet_tf.seq2seq.run import run_seq2seq

    names = set(Seq2SeqConfig.__dataclass_fields__)
    config = Seq2SeqConfig(**{k: v for k, v in vars(args).items() if k in names})
    return run_seq2seq(config, given=getattr(args, "given_flags", ()))
