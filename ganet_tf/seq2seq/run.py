"""`python -m ganet_tf seq2seq`: train, evaluate and decode an encoder-decoder."""

import dataclasses
import json
import math
import os
import time

import keras
import numpy as np
import tensorflow as tf

from ganet_tf.errors import GANetInputError
from ganet_tf.extras import require_extra
from ganet_tf.models.gate_layers import resolve_gate_defaults
from ganet_tf.models.gate_layers import target_density_argument
from ganet_tf.policy import NonFiniteGuard
from ganet_tf.policy import OutputFolder
from ganet_tf.policy import StopSignalCheck
from ganet_tf.policy import TrainingDivergedError
from ganet_tf.policy import check_choice
from ganet_tf.policy import check_finite_fields
from ganet_tf.policy import check_finite_weights
from ganet_tf.policy import check_flags_apply
from ganet_tf.policy import check_number
from ganet_tf.policy import check_stop_signal
from ganet_tf.policy import load_model_file
from ganet_tf.policy import locked_output_folders
from ganet_tf.policy import read_run_json
from ganet_tf.policy import write_json
from ganet_tf.policy.backup import EPOCH_SECONDS_FILE
from ganet_tf.policy.backup import AtomicBackupAndRestore
from ganet_tf.policy.backup import has_finished_epochs
from ganet_tf.policy.backup import is_backup_folder
from ganet_tf.policy.backup import prepare_backup_dir
from ganet_tf.policy.backup import unreadable_backup
from ganet_tf.policy.non_finite_guard import non_finite_weights
from ganet_tf.policy.run_folder import METRICS_FILE
from ganet_tf.policy.run_folder import MODEL_FILE
from ganet_tf.policy.run_folder import RUN_MARKER
from ganet_tf.policy.run_folder import write_run_folder
from ganet_tf.seq2seq.datasets import TASKS
from ganet_tf.seq2seq.datasets import load_task
from ganet_tf.seq2seq.decoding import MAX_EXTRA_TOKENS
from ganet_tf.seq2seq.decoding import length_limits
from ganet_tf.seq2seq.decoding import make_decoder
from ganet_tf.seq2seq.encoder_decoder import ATTENTIONS
from ganet_tf.seq2seq.encoder_decoder import EncoderDecoder
from ganet_tf.seq2seq.run_vocabularies import TOKENIZERS
from ganet_tf.seq2seq.run_vocabularies import WORD
from ganet_tf.seq2seq.run_vocabularies import is_vocabularies
from ganet_tf.seq2seq.run_vocabularies import learn_vocabularies
from ganet_tf.seq2seq.run_vocabularies import vocabularies_from_json
from ganet_tf.seq2seq.run_vocabularies import vocabularies_to_json
from ganet_tf.seq2seq.scores import corpus_bleu
from ganet_tf.seq2seq.scores import exact_match
from ganet_tf.seq2seq.scores import symbol_error_rate
from ganet_tf.seq2seq.source_words import word_codes
from ganet_tf.seq2seq.subword_vocabulary import SUBWORD_TOKENIZERS
from ganet_tf.seq2seq.vocabulary import UNKNOWN_ID
from ganet_tf.seq2seq.vocabulary import ids_to_tokens
from ganet_tf.seq2seq.vocabulary import kept_row
from ganet_tf.seq2seq.vocabulary import make_dataset
from ganet_tf.training.best_epoch_stopping import backup_history
from ganet_tf.training.best_epoch_stopping import best_epoch
from ganet_tf.training.best_epoch_stopping import load_best_weights
from ganet_tf.training.best_epoch_stopping import stopping_callbacks
from ganet_tf.training.epoch_timer import EpochTimer
from ganet_tf.training.optimizer import build_optimizer
from ganet_tf.training.train import warn_all_closed

VOCABULARY_FILE = "vocabularies.json"
EXAMPLES_FILE = "examples.json"
SEQ2SEQ_RUN_FILES = frozenset({RUN_MARKER, MODEL_FILE, VOCABULARY_FILE, METRICS_FILE, EXAMPLES_FILE})


@dataclasses.dataclass
class Seq2SeqConfig:
    task: str = "copy"
    attention: str = "bahdanau"
    data_dir: str = None
    # None: the hierarchy's own (`HIERARCHY_DEFAULTS`), filled in by
    # `resolve_defaults`.
    levels: int = None
    block_size: int = None
    descent: str = "straight_through"
    halting_penalty: float = 1e-3
    # hier-act's counterweight: the mean block size its multiplier steers
    # to (2.5: validation loss chose it over 3 on Multi30k, docs/seq2seq.md;
    # 0: the halting penalty alone, which collapsed every level to one node
    # per sentence), and a bound on a block's size.
    target_block_size: float = 2.5
    max_block_size: int = None
    # What the hier-rnn and hier-cnn summarisers read: the states (the
    # report's form) or the attention keys. None: `"keys"` for hier-rnn
    # (within 1.15x Bahdanau's decoding time at Multi30k sizes, where the
    # states summariser is not; docs/seq2seq.md), `"states"` otherwise.
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
    # How sentences become ids: SentencePiece subwords with byte fallback
    # (`"unigram"`, `"bpe"`; nothing is unknown; one joint model for both
    # sides) or words (`"word"`, the runs before subwords). None:
    # `SUBWORD_DEFAULT` on Multi30k, words on the synthetic tasks (whose
    # symbols are words). `vocabulary_size`: the joint subword
    # vocabulary's ids (None: `SUBWORD_DEFAULT`'s).
    tokenizer: str = None
    vocabulary_size: int = None
    beam_size: int = 1
    # The gate options (`--attention gated` only) default to the recipe that
    # validation BLEU chose on Multi30k subwords (`gated-td0.6-hc`,
    # results/seq2seq_recipes): an FNN auxiliary network reads the encoder
    # states, hard concrete training gates, the multiplier steers them to
    # density 0.6, and the test gates are the round(0.6 T) most probable
    # states. `--target-density 0` is GA-Net's fixed penalty, with threshold
    # test gates. `resolve_defaults` fills in the values that follow from
    # others.
    aux: str = "fnn"
    aux_hidden: int = 20
    gate_input: str = "states"
    gate_unit: str = "token"
    temperature: float = 0.5
    gate_penalty: float = 1e-3
    gate_bias: float = 2.0
    gate_distribution: str = "hard_concrete"
    straight_through: bool = False
    inference_mode: str = None  # top_k with a target density, else threshold
    inference_density: float = None  # top_k: the target density
    target_density: float = 0.6
    min_length: int = 10
    max_length: int = 100
    init_from: str = None
    verbose: int = 1


# Each hierarchy's levels L and block size k when `--levels` and
# `--block-size` are not given: the configurations of the report that the
# Multi30k table trains (`hier-cnn` k 3, L 3; `hier-rnn` k 6, L 2; `hier-act`
# L 3, its blocks set by `--target-block-size`). Other attentions read neither.
HIERARCHY_DEFAULTS = {"hier-cnn": (3, 3), "hier-rnn": (2, 6), "hier-act": (3, 3)}
FALLBACK_HIERARCHY = (2, 3)
# The summariser inputs when `--summary-inputs` is not given, and the ones
# runs trained before the flag existed used (their backups lack it).
SUMMARY_INPUT_DEFAULTS = {"hier-rnn": "keys"}
SUMMARY_INPUTS_BEFORE_THE_FLAG = "states"

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
    **dict.fromkeys(
        (
            "aux",
            "aux_hidden",
            "gate_input",
            "gate_unit",
            "gate_penalty",
            "gate_bias",
            "gate_distribution",
            "straight_through",
            "inference_mode",
            "inference_density",
            "target_density",
        ),
        GATED,
    ),
}

# The flags only the synthetic tasks read -> those tasks (`--task`).
TASK_FLAGS = dict.fromkeys(("min_length", "max_length"), ("copy", "reverse"))

# Multi30k's tokenizer and subword vocabulary size when `--tokenizer` and
# `--vocabulary-size` are not given: of unigram and BPE at 8,000 and 16,000
# joint ids, the one with the highest seed-0 validation BLEU
# (`python -m experiments run seq2seq_subwords`, docs/seq2seq.md).
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
    for name in ("epochs", "batch_size", "hidden", "embedding_dim", "beam_size", "aux_hidden", "min_length"):
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
    for name in ("gate_penalty", "halting_penalty"):
        check_number(name, getattr(config, name), at_least=0)
    check_number("gate_bias", config.gate_bias)
    check_number("dropout", config.dropout, at_least=0, below=1)
    check_number("inference_density", config.inference_density, above=0, at_most=1, optional=True)
    check_number("target_density", config.target_density, at_least=0, below=1, optional=True)
    check_finite_fields(config)  # any other float


def _check(config, given=()):
    """Refuses, before any work, a config `seq2seq` cannot run as asked.

    Args:
        config: the `Seq2SeqConfig`.
        given: the flags the user gave (`ganet_tf.policy.explicit_flags`);
            one that the chosen attention does not read is refused.
    """
    from ganet_tf.layers.auxiliary_network import ENCODERS
    from ganet_tf.layers.gate_sampler import DISTRIBUTIONS
    from ganet_tf.layers.hierarchical_attention import DESCENTS
    from ganet_tf.seq2seq.encoder_decoder import GATE_INPUTS
    from ganet_tf.seq2seq.encoder_decoder import GATE_UNITS

    check_choice("task", config.task, TASKS)
    check_choice("attention", config.attention, ATTENTIONS)
    check_flags_apply(given, ATTENTION_FLAGS, "--attention", config.attention)
    check_flags_apply(given, TASK_FLAGS, "--task", config.task)
    _check_numbers(config)
    check_choice("descent", config.descent, DESCENTS)
    check_choice("aux", config.aux, ENCODERS)
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
    if config.init_from:
        _check_initial_run(config)


# What a run started from another (`--init-from`) must share with it: the
# data, hence the vocabularies, and the shapes of the shared weights.
INIT_SHARED = (
    "task",
    "limit",
    "min_count",
    "min_length",
    "max_length",
    "hidden",
    "embedding_dim",
    "attention_units",
    "input_feeding",
    "tokenizer",
    "vocabulary_size",
)


INIT_FIX = "pass the --out folder of a finished seq2seq run (copy it again, or train it again)"


def _initial_run_files(path, flag="--init-from "):
    """`(metrics, vocabularies)` of the finished run `path` (`--init-from`);
    a folder that is no finished run, or one with a damaged file, is one
    input error naming the file."""
    files = [os.path.join(path, name) for name in (MODEL_FILE, VOCABULARY_FILE, METRICS_FILE)]
    if not all(os.path.isfile(name) for name in files):
        raise GANetInputError(
            f"{flag}{path} is not a finished seq2seq run (it needs {MODEL_FILE}, {VOCABULARY_FILE} "
            f"and {METRICS_FILE}): pass the --out folder of an earlier seq2seq run."
        )
    what = "a finished seq2seq run"
    metrics = read_run_json(files[2], what, INIT_FIX)
    vocabularies = read_run_json(files[1], what, INIT_FIX)
    if not isinstance(metrics, dict) or not isinstance(metrics.get("config"), dict):
        raise GANetInputError(f"{files[2]} is damaged (no config): {INIT_FIX}.")
    if not is_vocabularies(vocabularies):
        raise GANetInputError(f"{files[1]} is damaged (no source and target token lists): {INIT_FIX}.")
    return metrics, vocabularies


def _check_initial_run(config):
    """Checks the finished run `--init-from` names against `config`: a
    folder that is no finished run, one with a damaged file, or one
    trained on other data or with other shapes, is one input error (its
    model is loaded and checked before training, `_initial_model`)."""
    path = config.init_from
    config = resolve_defaults(config)
    metrics, _ = _initial_run_files(path)
    initial = {**dataclasses.asdict(Seq2SeqConfig()), **PREDATES, **metrics["config"]}
    changes = [
        f"--{name.replace('_', '-')} {initial.get(name)} there, {getattr(config, name)} here"
        for name in INIT_SHARED
        if initial.get(name) != getattr(config, name)
    ]
    if changes:
        raise GANetInputError(
            f"--init-from {path} was trained with other data or shapes: {'; '.join(changes)}. "
            "Pass the same flags as that run."
        )


def _initial_model(path):
    """The model of the `--init-from` run, loaded and checked (one line if damaged)."""
    model_path = os.path.join(path, MODEL_FILE)
    model = load_model_file(model_path)
    bad = non_finite_weights(model)
    if bad:
        raise GANetInputError(f"{model_path} has non-finite weights ({bad[0]}): its training diverged; {INIT_FIX}.")
    return model


def _load_initial_weights(model, path):
    """Copies every weighted sublayer of the run in `path` into the same-named
    sublayer of `model` (the embeddings, encoder, bridges, decoder, attention
    scores and output layer); the layers only `model` has, such as the gates'
    auxiliary network, keep their fresh weights."""
    initial = _initial_model(path)
    names = {layer.name: layer for layer in model.layers}
    for layer in initial.layers:
        if not layer.weights:
            continue
        target = names.get(layer.name)
        shapes = [tuple(w.shape) for w in layer.weights]
        if target is None or [tuple(w.shape) for w in target.weights] != shapes:
            raise GANetInputError(
                f"--init-from {path}: its layer {layer.name!r} has no counterpart of the same shapes in this "
                "model; start from a run of the same task and sizes."
            )
        target.set_weights(layer.get_weights())


def _vocabularies(config, splits):
    """Source and target vocabularies: read back from the backup folder on a
    resumed run, or from the `--init-from` run, so the ids do not change
    under the restored or copied weights; else learned on the training
    split (`ganet_tf.seq2seq.run_vocabularies`)."""
    path = os.path.join(config.backup_dir, VOCABULARY_FILE) if config.backup_dir else None
    saved = None
    if path and os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as handle:
                saved = json.load(handle)
            if not is_vocabularies(saved):
                raise ValueError("no source and target token lists")
        except (OSError, ValueError) as error:
            raise unreadable_backup(path, error) from error
    elif config.init_from:
        saved = _initial_run_files(config.init_from)[1]
        if path:
            write_json(path, saved)
    if saved is not None:
        return vocabularies_from_json(saved, path or os.path.join(config.init_from, VOCABULARY_FILE))
    min_count = config.min_count if config.task == "multi30k" else 1
    sources, targets = splits["train"]
    vocabularies = learn_vocabularies(sources, targets, config.tokenizer, config.vocabulary_size, min_count)
    if path:
        write_json(path, vocabularies_to_json(*vocabularies, config.tokenizer))
    return vocabularies


def build_model(config, source_size, target_size, source_pieces=None):
    """The `EncoderDecoder` of `config`; `source_pieces`, the source
    vocabulary's pieces, are needed for `--gate-unit word`."""
    config = resolve_defaults(config)
    word_gates = config.attention == "gated" and config.gate_unit == "word"
    return EncoderDecoder(
        source_size,
        target_size,
        embedding_dim=config.embedding_dim,
        hidden=config.hidden,
        attention=config.attention,
        attention_units=config.attention_units,
        levels=config.levels,
        block_size=config.block_size,
        descent=config.descent,
        halting_penalty=config.halting_penalty,
        target_block_size=config.target_block_size or None,
        max_block_size=config.max_block_size,
        summary_inputs=config.summary_inputs,
        input_feeding=config.input_feeding,
        dropout=config.dropout,
        aux=config.aux,
        aux_hidden=config.aux_hidden,
        gate_input=config.gate_input,
        gate_unit="word" if word_gates else "token",
        source_word_codes=word_codes(source_pieces) if word_gates else None,
        temperature=config.temperature,
        gate_penalty=config.gate_penalty,
        gate_bias=config.gate_bias,
        gate_distribution=config.gate_distribution,
        straight_through=config.straight_through,
        inference_mode=config.inference_mode,
        inference_density=config.inference_density,
        target_density=target_density_argument(config.target_density),
        seed=config.seed,
    )


def teacher_forced_scores(model, dataset):
    """Test cross-entropy per token (no regularisers), attended source
    states per decoded token, attended density, attention FLOPs and (gated)
    the share of sentences whose gates are all closed (the fallback rows)."""
    total_loss = total_tokens = total_nodes = total_density = total_flops = 0.0
    closed_rows = sentences = 0
    gated = model.attention == "gated"
    for inputs, target_out in dataset:
        logits = model(inputs, training=False)
        token_mask = tf.cast(tf.not_equal(target_out, 0), tf.float32)
        loss = tf.keras.losses.sparse_categorical_crossentropy(target_out, logits, from_logits=True)
        total_loss += float(tf.reduce_sum(loss * token_mask))
        nodes = model.attended_nodes(inputs["source"], inputs["target_in"])
        lengths = tf.reduce_sum(tf.cast(tf.not_equal(inputs["source"], 0), tf.float32), -1)
        density = nodes / tf.maximum(lengths[:, None], 1.0)
        total_tokens += float(tf.reduce_sum(token_mask))
        total_nodes += float(tf.reduce_sum(nodes * token_mask))
        total_density += float(tf.reduce_sum(density * token_mask))
        total_flops += float(tf.reduce_sum(model.attention_flops(nodes) * token_mask))
        if gated:
            _, _, gates = model.encode(inputs["source"], training=False)
            real = tf.cast(tf.not_equal(inputs["source"], 0), gates.dtype)
            open_gates = tf.reduce_sum(gates * real, -1)
            closed_rows += int(tf.reduce_sum(tf.cast((open_gates == 0) & (lengths > 0), tf.int32)))
        sentences += int(tf.reduce_sum(tf.cast(lengths > 0, tf.int32)))
    tokens = max(total_tokens, 1.0)
    return {
        "test_loss": total_loss / tokens,
        "test_perplexity": math.exp(total_loss / tokens),
        "attended_nodes_per_token": total_nodes / tokens,
        "test_attended_density": total_density / tokens,
        "test_all_closed_rate": closed_rows / max(sentences, 1) if gated else None,
        "attention_flops_per_token": total_flops / tokens,
    }


def load_run(run_dir, data_dir=None, split="test", with_pairs=False):
    """A finished run folder's `(config, model, ids, dataset)` of one split
    (`"test"` or `"val"`) as the run read it, encoded with the run's
    vocabularies; `with_pairs` adds the split's text pairs and the
    vocabularies. `data_dir` overrides the one the run was given. A
    missing or damaged file of the run is one input error naming it."""
    metrics, vocabularies = _initial_run_files(run_dir, flag="")
    saved = {key: value for key, value in metrics["config"].items() if key in Seq2SeqConfig.__dataclass_fields__}
    config = Seq2SeqConfig(**{**saved, "data_dir": data_dir or saved.get("data_dir")})
    splits = load_task(config.task, config.data_dir, config.limit, config.seed, config.min_length, config.max_length)
    vocabularies = vocabularies_from_json(vocabularies, os.path.join(run_dir, VOCABULARY_FILE))
    ids, datasets = _encoded_datasets(config, {split: splits[split]}, *vocabularies)
    model = load_model_file(os.path.join(run_dir, MODEL_FILE))
    if with_pairs:
        return config, model, ids[split], datasets[split], splits[split], vocabularies
    return config, model, ids[split], datasets[split]


def decoded_split_scores(run_dir, split, data_dir=None):
    """Greedy-decodes one split of a finished run with its saved model;
    returns `{"bleu", "exact_match", "symbol_error_rate",
    "decode_seconds_per_sentence", "unknown_translations"}` (BLEU for
    Multi30k, exact match and symbol error rate for the synthetic tasks,
    the others None).
    Choosing between runs by their `"val"` scores keeps the test set out."""
    config, model, ids, _, pairs, vocabularies = load_run(run_dir, data_dir, split, with_pairs=True)
    config = dataclasses.replace(config, verbose=0)
    scores, _ = _decoded_scores(model, config, ids, pairs, vocabularies[1])
    return {
        "bleu": scores["test_bleu"],
        "exact_match": scores["test_exact_match"],
        "symbol_error_rate": scores["test_symbol_error_rate"],
        "decode_seconds_per_sentence": scores["decode_seconds_per_sentence"],
        "unknown_translations": scores["test_unknown_translations"],
    }


def rescore_run(run_dir, data_dir=None):
    """The teacher-forced test scores of a finished run folder, recomputed
    from its `model.keras` (by the code of today: its FLOPs count and
    all-closed rate)."""
    _, model, _, dataset = load_run(run_dir, data_dir)
    return teacher_forced_scores(model, dataset)


def decoder_batches(source_ids, batch_size, max_extra=MAX_EXTRA_TOKENS):
    """The decoder's inputs: `(padded source ids, max_length)` per batch of
    `batch_size` sources, in order; each source may produce up to 1.5 times
    its own tokens plus `max_extra` (`decoding.length_limits`)."""
    batches = []
    for start in range(0, len(source_ids), batch_size):
        rows = source_ids[start : start + batch_size]
        padded = np.zeros([len(rows), max(len(r) for r in rows)], "int32")
        for i, row in enumerate(rows):
            padded[i, : len(row)] = row
        padded = tf.constant(padded)
        batches.append((padded, length_limits(padded, max_extra)))
    return batches


def decode_all(model, source_ids, batch_size, beam_size=1, max_extra=MAX_EXTRA_TOKENS, verbose=1, decoder=None):
    """Decodes every source; returns `(token id rows, seconds per sentence)`.

    The first batch is decoded once before timing, so tracing is not timed.
    `decoder`: a `make_decoder(model, beam_size)` to reuse (not traced again).
    """
    decoder = decoder or make_decoder(model, beam_size)
    batches = decoder_batches(source_ids, batch_size, max_extra)
    decoder(*batches[0])
    progress = keras.utils.Progbar(len(batches), verbose=verbose, unit_name="batch")
    outputs = []
    started = time.perf_counter()
    for number, (padded, limit) in enumerate(batches, 1):
        check_stop_signal()
        outputs.extend(decoder(padded, limit).numpy())
        progress.update(number)
    seconds = time.perf_counter() - started
    return outputs, seconds / max(len(source_ids), 1)


def is_seq2seq_run_folder(path):
    """Whether `path` is an empty folder or an earlier `seq2seq --out` folder."""
    entries = set(os.listdir(path))
    return not entries or (RUN_MARKER in entries and entries <= SEQ2SEQ_RUN_FILES)


def input_paths(config):
    """What a seq2seq run reads, as `(flag, path)`: the Multi30k files and
    the `--init-from` run (no output folder may hold or lie inside them)."""
    inputs = [("--init-from", config.init_from)] if config.init_from else []
    if config.task == "multi30k":
        data_dir = config.data_dir or os.environ.get("GANET_DATA_DIR")
        if data_dir:
            inputs.append(("--data-dir", os.path.join(data_dir, "multi30k")))
    return inputs


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
    _, mode, density, _ = resolve_gate_defaults(
        config.gate_bias,
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


def run_seq2seq(config, given=()):
    """Trains and evaluates; returns the JSON summary as a dict.

    The reliability policy of every command (`ganet_tf.policy`): before any
    work the config is checked (finite, in-range numbers; `given`, the
    flags the user gave, must apply to `--attention`), and `--out`,
    `--export` and `--backup-dir` must be new, empty or written by this
    command, separate and apart from the inputs; they are locked against a
    second process. A diverged training writes nothing; `--out` and
    `--export` are replaced all or nothing.
    """
    from ganet_tf.seq2seq.translator import is_translator_folder

    require_extra("seq2seq", "run_seq2seq")
    _check(config, given)
    config = resolve_defaults(config)
    folders = [
        OutputFolder(config.out, "--out", is_seq2seq_run_folder),
        OutputFolder(config.export, "--export", is_translator_folder),
        OutputFolder(config.backup_dir, "--backup-dir", is_backup_folder, has_finished_epochs),
    ]
    with locked_output_folders(folders, input_paths(config)):
        return _run_seq2seq(config)


def _run_seq2seq(config):
    if config.backup_dir:
        # New, empty or a backup of these flags (`train`'s rule); --restart clears it.
        prepare_backup_dir(config, predates=PREDATES)
    splits = load_task(config.task, config.data_dir, config.limit, config.seed, config.min_length, config.max_length)
    source_vocabulary, target_vocabulary = _vocabularies(config, splits)
    ids, datasets = _encoded_datasets(config, splits, source_vocabulary, target_vocabulary)
    source_size, target_size = source_vocabulary.size, target_vocabulary.size
    model = _compiled_model(config, source_size, target_size, source_vocabulary.pieces)
    if config.init_from:  # a backup, if any, replaces these weights when training starts
        _load_initial_weights(model, config.init_from)
    train_seconds, epochs_run, best = _fit(model, config, datasets)
    check_finite_weights(model)

    result = {
        "task": config.task,
        "attention": config.attention,
        "levels": config.levels if config.attention.startswith("hier") else None,
        "block_size": config.block_size if config.attention in ATTENTION_FLAGS["block_size"] else None,
        "summary_inputs": config.summary_inputs if config.attention in ATTENTION_FLAGS["summary_inputs"] else None,
        "seed": config.seed,
        "epochs": config.epochs,
        "patience": config.patience,
        "epochs_trained": epochs_run,
        "best_epoch": best,
        "train_examples": len(ids["train"][0]),
        "test_examples": len(ids["test"][0]),
        "tokenizer": config.tokenizer,
        "source_vocabulary": source_size,
        "target_vocabulary": target_size,
        "train_seconds": train_seconds,
        "seconds_per_epoch": train_seconds / epochs_run if epochs_run else None,
        "init_from": config.init_from,
    }
    result.update(teacher_forced_scores(model, datasets["test"]))
    if not math.isfinite(result["test_loss"]):
        raise TrainingDivergedError(
            f"the test loss is {result['test_loss']} (the model's outputs are not finite); nothing was saved: "
            "lower --lr and train again."
        )
    warn_all_closed(
        result["test_all_closed_rate"],
        "sentences, which attend to all their states (the fallback): "
        "--inference-mode top_k --inference-density RHO opens round(RHO T) states each.",
    )
    scores, hypotheses = _decoded_scores(model, config, ids["test"], splits["test"], target_vocabulary)
    result.update(scores)
    if config.out:
        vocabularies = vocabularies_to_json(source_vocabulary, target_vocabulary, config.tokenizer)
        _write_run(config, model, vocabularies, result, splits["test"], hypotheses)
    if config.export:
        from ganet_tf.seq2seq.translator import save_translator

        result["export"] = save_translator(model, source_vocabulary, target_vocabulary, config.export)
    return result


def _encoded_datasets(config, splits, source_vocabulary, target_vocabulary):
    """Token ids `{split: (source ids, target ids)}` and the batched datasets."""
    ids = {
        split: (source_vocabulary.encode(pairs[0]), target_vocabulary.encode(pairs[1], target=True))
        for split, pairs in splits.items()
    }
    keras.utils.set_random_seed(config.seed)
    # Only training batches are shuffled and bucketed: validation and test
    # losses are averaged over the same batches whatever `--buckets` says.
    datasets = {
        split: make_dataset(*ids[split], config.batch_size)
        if split != "train"
        else make_dataset(*ids[split], config.batch_size, shuffle=True, seed=config.seed, buckets=config.buckets)
        for split in ids
    }
    return ids, datasets


def _compiled_model(config, source_size, target_size, source_pieces):
    """The built and compiled `EncoderDecoder`; a refused option is one input error."""
    try:
        model = build_model(config, source_size, target_size, source_pieces)
    except ValueError as error:  # a layer refused an option: one line
        raise GANetInputError(str(error)) from None
    model.build()  # BackupAndRestore restores into built models only
    model.compile(
        optimizer=keras.optimizers.Adam(config.lr, clipnorm=config.clipnorm),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
    )
    return build_optimizer(model)


def _fit(model, config, datasets):
    """Trains; returns `(seconds, epochs, best epoch)` of the training.

    Without `--patience` every epoch is trained and the last one's weights
    kept (best epoch None); with it, training stops after `patience` epochs
    without a lower validation loss and ends with the best epoch's weights
    (`BestEpochStopping`, `train`'s rule; the best epoch counts from 1).

    With `--backup-dir` training resumes from the last finished epoch, and
    the backup keeps the last epoch after training (Keras' default deletes
    it), so a run that fails after training, while decoding or writing
    `--out`, resumes with nothing left to train. The seconds and epochs are
    then those of every attempt (`epoch_seconds.json`), and early stopping
    continues from the attempts' `history.csv` and `best.weights.h5`.
    """
    # The guard first: a loss or weight that is NaN or infinite stops the
    # training before the backup or anything else saves it.
    callbacks, epoch_seconds, stopping, finished = [NonFiniteGuard(), StopSignalCheck()], None, [], False
    if config.backup_dir:
        backup = os.path.join(config.backup_dir, "backup")
        epoch_seconds = EpochTimer(os.path.join(config.backup_dir, EPOCH_SECONDS_FILE))
        callbacks += [AtomicBackupAndRestore(backup, delete_checkpoint=False), epoch_seconds]
    if config.patience is not None:
        args = ("val_loss", "min", config.patience, config.epochs, config.backup_dir)
        stopping, finished = stopping_callbacks(*args)
    started = time.perf_counter()
    if finished:  # an earlier attempt stopped early: its best weights, nothing to train
        load_best_weights(model, config.backup_dir)
        epoch_seconds.load()
    else:
        fitted = model.fit(
            datasets["train"],
            validation_data=datasets["val"],
            epochs=config.epochs,
            callbacks=callbacks + stopping,
            verbose=config.verbose,
            shuffle=False,  # the training dataset is a tf.data pipeline that reshuffles itself
        )
        history = fitted.history
    if config.backup_dir:  # every attempt's epochs (the finished branch trained none)
        history = backup_history(config.backup_dir) if stopping else {}
        seconds, epochs = sum(epoch_seconds.seconds.values()), len(epoch_seconds.seconds)
    else:
        seconds, epochs = time.perf_counter() - started, len(history.get("loss", []))
    # Epochs trained before `--patience` was given (a resumed run) have no
    # row in `history.csv`: the best epoch counts them too.
    best = None if not stopping else epochs - len(history["val_loss"]) + best_epoch(history["val_loss"], "min") + 1
    return seconds, epochs, best


def _decoded_scores(model, config, test_ids, test_pairs, target_vocabulary):
    """Decodes the test sources; returns `(scores, hypotheses as text)`.

    The scores are the decoding time, the beam size, the number of
    translations that hold the unknown id (`[UNK]` of a word vocabulary;
    a subword model can emit it only if it predicts id 1), and BLEU
    (Multi30k) or the exact-match rate and the symbol error rate (the
    synthetic tasks).
    """
    decoded, seconds = decode_all(model, test_ids[0], config.batch_size, config.beam_size, verbose=config.verbose)
    hypotheses = [ids_to_tokens(row, target_vocabulary.pieces) for row in decoded]
    references = [ids_to_tokens(row[1:], target_vocabulary.pieces) for row in test_ids[1]]
    texts = target_vocabulary.decode(decoded)
    scores = {
        "decode_seconds_per_sentence": seconds,
        "beam_size": config.beam_size,
        "test_unknown_translations": sum(UNKNOWN_ID in kept_row(row) for row in decoded),
        # Runs recorded before this key limited a translation's length by
        # its batch's longest source (`decoding.length_limits`).
        "decode_length_limit": "sentence",
    }
    if config.task == "multi30k":
        scores["test_bleu"] = corpus_bleu(texts, test_pairs[1])
        scores["test_exact_match"] = scores["test_symbol_error_rate"] = None
    else:
        scores["test_bleu"] = None
        scores["test_exact_match"] = exact_match(hypotheses, references)
        scores["test_symbol_error_rate"] = symbol_error_rate(hypotheses, references)
    return scores, texts


def _write_run(config, model, vocabularies, result, test_pairs, hypotheses):
    """Replaces `--out` with the model, vocabularies, metrics and 20 examples."""

    def write_files(staging):
        model.save(os.path.join(staging, MODEL_FILE))
        unindented = {"indent": None, "ensure_ascii": False}
        write_json(os.path.join(staging, VOCABULARY_FILE), vocabularies, **unindented)
        write_json(os.path.join(staging, METRICS_FILE), {**result, "config": dataclasses.asdict(config)}, **unindented)
        examples = zip(test_pairs[0][:20], test_pairs[1][:20], hypotheses[:20], strict=True)
        write_json(
            os.path.join(staging, EXAMPLES_FILE),
            [{"source": s, "reference": r, "hypothesis": h} for s, r, h in examples],
            **unindented,
        )

    write_run_folder(config.out, write_files, owned=is_seq2seq_run_folder)
