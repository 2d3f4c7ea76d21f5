"""`Seq2SeqConfig`, the flags of `seq2seq`: their checks and the defaults that follow from others.

Imports nothing of Keras or TensorFlow, so that `seq2seq`'s parser reads
its defaults and tokenizers here (`ganet_tf.seq2seq.commands`); what the
checks need of the layers, models and encoder-decoder is imported inside
them.
"""

import dataclasses

from ganet_tf.errors import GANetInputError
from ganet_tf.policy.flag_values import check_choice
from ganet_tf.policy.flag_values import check_finite_fields
from ganet_tf.policy.flag_values import check_flags_apply
from ganet_tf.policy.flag_values import check_number
from ganet_tf.seq2seq.datasets import TASKS

# The tokenizers of `--tokenizer`: words, or SentencePiece subwords
# (`ganet_tf.seq2seq.subword_vocabulary`) with byte fallback.
WORD = "word"
SUBWORD_TOKENIZERS = ("unigram", "bpe")
TOKENIZERS = (WORD, *SUBWORD_TOKENIZERS)


@dataclasses.dataclass
class Seq2SeqConfig:
    """Everything that decides one `seq2seq` run (its flags).

    A field left None takes a default that follows from other fields
    (`resolve_defaults`): the hierarchy's `levels` and `block_size`
    (`HIERARCHY_DEFAULTS`) and `summary_inputs` (`SUMMARY_INPUT_DEFAULTS`,
    else `"states"`); the `tokenizer` and `vocabulary_size` (subwords of
    `SUBWORD_DEFAULT` on Multi30k, words on the synthetic tasks, whose
    symbols are words); the test gates' `inference_mode` and
    `inference_density` (`top_k` at the target density with one,
    `threshold` without).

    `target_block_size` is the mean block size that `hier-act`'s multiplier
    steers to (0: the halting penalty alone) and `max_block_size` a bound
    on a block's size. The gate options (`--attention gated` only) default
    to `--attention gated`'s recipe: an FNN auxiliary network reads the
    encoder states, hard concrete training gates, a multiplier steers them
    to density 0.6, and the test gates are the round(0.6 T) most probable
    states; `target_density=0` is GA-Net's fixed penalty, with threshold
    test gates. docs/seq2seq.md says how each default was chosen.
    """

    task: str = "copy"
    attention: str = "bahdanau"
    data_dir: str = None
    levels: int = None
    block_size: int = None
    descent: str = "straight_through"
    halting_penalty: float = 1e-3
    target_block_size: float = 2.5
    max_block_size: int = None
    summary_inputs: str = None
    epochs: int = 10
    patience: int = None
    seed: int = 0
    out: str = None
    export: str = None
    limit: int = None
    backup_dir: str = None
    restart: bool = False
    batch_size: int = 128
    buckets: int = 0
    hidden: int = 256
    embedding_dim: int = 256
    attention_units: int = None
    input_feeding: bool = False
    dropout: float = 0.3
    lr: float = 1e-3
    clipnorm: float = 1.0
    min_count: int = 2
    tokenizer: str = None
    vocabulary_size: int = None
    beam_size: int = 1
    auxiliary: str = "fnn"
    auxiliary_hidden_dim: int = 20
    gate_input: str = "states"
    gate_unit: str = "token"
    temperature: float = 0.5
    penalty: float = 1e-3
    initial_gate_logit: float = 2.0
    gate_distribution: str = "hard_concrete"
    straight_through: bool = False
    inference_mode: str = None
    inference_density: float = None
    target_density: float = 0.6
    min_length: int = 10
    max_length: int = 100
    init_from: str = None
    verbose: int = 1


# Each hierarchy's levels L and block size k when `--levels` and
# `--block-size` are not given (`hier-act`'s blocks follow
# `--target-block-size`). Other attentions read neither.
HIERARCHY_DEFAULTS = {"hier-cnn": (3, 3), "hier-rnn": (2, 6), "hier-act": (3, 3)}
FALLBACK_HIERARCHY = (2, 3)
# The summariser inputs when `--summary-inputs` is not given, and the ones
# runs trained before the flag existed used (their backups lack it).
SUMMARY_INPUT_DEFAULTS = {"hier-rnn": "keys"}
SUMMARY_INPUTS_BEFORE_THE_FLAG = "states"

# The options of the gates, which `--attention gated` alone reads.
GATE_OPTIONS = (
    "auxiliary",
    "auxiliary_hidden_dim",
    "gate_input",
    "gate_unit",
    "penalty",
    "initial_gate_logit",
    "gate_distribution",
    "straight_through",
    "inference_mode",
    "inference_density",
    "target_density",
)
# The flags only some attentions read -> those attentions (`--attention`);
# a flag given for another one is refused, not silently dropped.
GATED = ("gated",)
HIERARCHIES = ("hier-rnn", "hier-cnn", "hier-act")
ATTENTION_FLAGS = {
    "levels": HIERARCHIES,
    "block_size": ("hier-rnn", "hier-cnn"),
    "summary_inputs": ("hier-rnn", "hier-cnn"),
    "descent": HIERARCHIES,
    "halting_penalty": ("hier-act",),
    "target_block_size": ("hier-act",),
    "max_block_size": ("hier-act",),
    **dict.fromkeys(GATE_OPTIONS, GATED),
}

# The flags only the synthetic tasks read -> those tasks (`--task`).
TASK_FLAGS = dict.fromkeys(("min_length", "max_length"), ("copy", "reverse"))

# Multi30k's tokenizer and subword vocabulary size when `--tokenizer` and
# `--vocabulary-size` are not given.
SUBWORD_DEFAULT = ("bpe", 8000)
# The flags only some tokenizers read -> those tokenizers (`--tokenizer`).
TOKENIZER_FLAGS = {"vocabulary_size": SUBWORD_TOKENIZERS, "gate_unit": SUBWORD_TOKENIZERS, "min_count": (WORD,)}
# What a backup written before a flag existed ran with.
PREDATES = {"summary_inputs": SUMMARY_INPUTS_BEFORE_THE_FLAG, "tokenizer": WORD, "gate_unit": "token"}


# The test gates of `GateSampler` that `seq2seq` has flags for (`relative` and
# `nucleus` take parameters it does not pass).
SEQ2SEQ_INFERENCE_MODES = ("threshold", "sample", "top_k")


def _check_numbers(config):
    """Every number of `config` finite and in range (`ganet_tf.policy`)."""
    for name in ("epochs", "batch_size", "hidden", "embedding_dim", "beam_size", "auxiliary_hidden_dim", "min_length"):
        check_number(name, getattr(config, name), at_least=1, integer=True)
    for name in ("patience", "limit", "attention_units"):
        check_number(name, getattr(config, name), at_least=1, integer=True, optional=True)
    for name in ("levels", "block_size"):
        check_number(name, getattr(config, name), at_least=2, integer=True, optional=True)
    check_number("max_block_size", config.max_block_size, at_least=2, integer=True, optional=True)
    # Byte fallback takes 256 ids, the specials 4.
    check_number("vocabulary_size", config.vocabulary_size, at_least=300, integer=True, optional=True)
    check_number("min_count", config.min_count, at_least=1, integer=True)
    check_number("target_block_size", config.target_block_size, at_least=0)
    if 0 < config.target_block_size <= 1:
        raise GANetInputError(
            f"--target-block-size must be 0 (no counterweight) or > 1, got {config.target_block_size}."
        )
    check_number("buckets", config.buckets, at_least=0, integer=True)
    check_number("seed", config.seed, at_least=0, at_most=2**32 - 1, integer=True)
    check_number("max_length", config.max_length, at_least=config.min_length, integer=True)
    for name in ("lr", "clipnorm", "temperature"):
        check_number(name, getattr(config, name), above=0)
    for name in ("penalty", "halting_penalty"):
        check_number(name, getattr(config, name), at_least=0)
    check_number("initial_gate_logit", config.initial_gate_logit)
    check_number("dropout", config.dropout, at_least=0, below=1)
    check_number("inference_density", config.inference_density, above=0, at_most=1, optional=True)
    check_number("target_density", config.target_density, at_least=0, below=1, optional=True)
    check_finite_fields(config)  # any other float


def check_config(config, given=()):
    """Refuses, before any work, a config `seq2seq` cannot run as asked.

    Args:
        config: the `Seq2SeqConfig`.
        given: the flags the user gave (`ganet_tf.policy.explicit_flags`);
            one that the chosen attention does not read is refused.

    The run that `--init-from` names is checked apart
    (`ganet_tf.seq2seq.initial_run.check_initial_run`).
    """
    from ganet_tf.layers.auxiliary_network import ENCODERS
    from ganet_tf.layers.gate_sampler import DISTRIBUTIONS
    from ganet_tf.layers.hierarchical_attention import DESCENTS
    from ganet_tf.seq2seq.encoder_decoder import ATTENTIONS
    from ganet_tf.seq2seq.encoder_decoder import GATE_INPUTS
    from ganet_tf.seq2seq.encoder_decoder import GATE_UNITS

    check_choice("task", config.task, TASKS)
    check_choice("attention", config.attention, ATTENTIONS)
    check_flags_apply(given, ATTENTION_FLAGS, "--attention", config.attention)
    check_flags_apply(given, TASK_FLAGS, "--task", config.task)
    _check_numbers(config)
    check_choice("descent", config.descent, DESCENTS)
    check_choice("auxiliary", config.auxiliary, ENCODERS)
    check_choice("gate_input", config.gate_input, GATE_INPUTS)
    check_choice("gate_unit", config.gate_unit, GATE_UNITS)
    check_choice("gate_distribution", config.gate_distribution, DISTRIBUTIONS)
    if config.inference_mode is not None:
        check_choice("inference_mode", config.inference_mode, SEQ2SEQ_INFERENCE_MODES)
    if config.inference_mode == "top_k" and config.inference_density is None and not config.target_density:
        raise GANetInputError(
            "--inference-mode top_k opens round(rho T) source states: give rho with --inference-density "
            "(or --target-density)."
        )
    check_choice("verbose", config.verbose, (0, 1, 2))
    if config.tokenizer is not None:
        check_choice("tokenizer", config.tokenizer, TOKENIZERS)
    check_flags_apply(given, TOKENIZER_FLAGS, "--tokenizer", default_tokenizer(config))
    if config.restart and not config.backup_dir:
        raise GANetInputError("--restart needs --backup-dir (the backup it deletes).")


def resolve_defaults(config):
    """`config` with the defaults that follow from other flags filled in.

    The one place where they are resolved, before any work: without
    `--inference-mode`, the test gates are `"top_k"` with a target density
    and `"threshold"` without one (`--target-density 0`); `"top_k"` without
    `--inference-density` opens the target density's share of the states;
    without `--levels` or `--block-size`, a hierarchy takes its own
    (`HIERARCHY_DEFAULTS`), and without `--summary-inputs` its summariser
    inputs (`SUMMARY_INPUT_DEFAULTS`, else `"states"`). An explicit flag
    always wins.

    Args:
        config: a checked `Seq2SeqConfig`.

    Returns:
        A new `Seq2SeqConfig`.
    """
    from ganet_tf.models.gate_layers import resolve_gate_defaults
    from ganet_tf.models.gate_layers import target_density_argument

    _, mode, density, _ = resolve_gate_defaults(
        config.initial_gate_logit,
        target_density_argument(config.target_density),
        config.inference_mode,
        config.inference_density,
    )
    levels, block_size = HIERARCHY_DEFAULTS.get(config.attention, FALLBACK_HIERARCHY)
    tokenizer = default_tokenizer(config)
    size = (config.vocabulary_size or SUBWORD_DEFAULT[1]) if tokenizer in SUBWORD_TOKENIZERS else None
    return dataclasses.replace(
        config,
        tokenizer=tokenizer,
        vocabulary_size=size,
        inference_mode=mode,
        inference_density=density,
        levels=levels if config.levels is None else config.levels,
        block_size=block_size if config.block_size is None else config.block_size,
        summary_inputs=config.summary_inputs or SUMMARY_INPUT_DEFAULTS.get(config.attention, "states"),
    )


def default_tokenizer(config):
    """`--tokenizer`, or without it `SUBWORD_DEFAULT`'s on Multi30k and
    `"word"` on the synthetic tasks."""
    if config.tokenizer is not None:
        return config.tokenizer
    return SUBWORD_DEFAULT[0] if config.task == "multi30k" else WORD
