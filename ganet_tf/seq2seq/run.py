"""`python -m ganet_tf seq2seq`: train, evaluate and decode an encoder-decoder."""

import dataclasses
import json
import math
import os

import keras

from ganet_tf.errors import GANetInputError
from ganet_tf.extras import require_extra
from ganet_tf.fitting.optimizer import compile_and_build
from ganet_tf.fitting.resumable_fit import fit_resumably
from ganet_tf.metrics.all_closed_warning import warn_all_closed
from ganet_tf.models.gate_layers import target_density_argument
from ganet_tf.policy import OutputFolder
from ganet_tf.policy import TrainingDivergedError
from ganet_tf.policy import check_finite_weights
from ganet_tf.policy import locked_output_folders
from ganet_tf.policy import write_json
from ganet_tf.policy.backup import has_finished_epochs
from ganet_tf.policy.backup import is_backup_folder
from ganet_tf.policy.backup import prepare_backup_dir
from ganet_tf.policy.backup import unreadable_backup
from ganet_tf.policy.run_folder import METRICS_FILE
from ganet_tf.policy.run_folder import MODEL_FILE
from ganet_tf.policy.run_folder import RUN_MARKER
from ganet_tf.policy.run_folder import write_run_folder
from ganet_tf.seq2seq.config import ATTENTION_FLAGS
from ganet_tf.seq2seq.config import GATE_OPTIONS
from ganet_tf.seq2seq.config import PREDATES
from ganet_tf.seq2seq.config import check_config
from ganet_tf.seq2seq.config import resolve_defaults
from ganet_tf.seq2seq.datasets import load_task
from ganet_tf.seq2seq.encoder_decoder import EncoderDecoder
from ganet_tf.seq2seq.evaluation import decoded_scores
from ganet_tf.seq2seq.evaluation import encoded_datasets
from ganet_tf.seq2seq.evaluation import teacher_forced_scores
from ganet_tf.seq2seq.initial_run import check_initial_run
from ganet_tf.seq2seq.initial_run import finished_run_files
from ganet_tf.seq2seq.initial_run import load_initial_weights
from ganet_tf.seq2seq.run_vocabularies import VOCABULARY_FILE
from ganet_tf.seq2seq.run_vocabularies import is_vocabularies
from ganet_tf.seq2seq.run_vocabularies import learn_vocabularies
from ganet_tf.seq2seq.run_vocabularies import vocabularies_from_json
from ganet_tf.seq2seq.run_vocabularies import vocabularies_to_json
from ganet_tf.seq2seq.source_words import word_codes

EXAMPLES_FILE = "examples.json"
SEQ2SEQ_RUN_FILES = frozenset({RUN_MARKER, MODEL_FILE, VOCABULARY_FILE, METRICS_FILE, EXAMPLES_FILE})


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


def run_seq2seq(config, given=()):
    """Trains and evaluates; returns the JSON summary as a dict.

    The reliability policy of every command (`ganet_tf.policy`): before any
    work the config is checked (finite, in-range numbers; `given`, the
    flags the user gave, must apply to `--attention`; the `--init-from`
    run must be a finished run of the same data and sizes), and `--out`,
    `--export` and `--backup-dir` must be new, empty or written by this
    command, separate and apart from the inputs; they are locked against a
    second process. A diverged training writes nothing; `--out` and
    `--export` are replaced all or nothing.
    """
    from ganet_tf.seq2seq.translator import is_translator_folder

    require_extra("seq2seq", "run_seq2seq")
    check_config(config, given)
    if config.init_from:
        check_initial_run(config)
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
    ids, datasets = encoded_datasets(config, splits, source_vocabulary, target_vocabulary)
    source_size, target_size = source_vocabulary.size, target_vocabulary.size
    model = _compiled_model(config, source_size, target_size, source_vocabulary.pieces)
    if config.init_from:  # a backup, if any, replaces these weights when training starts
        load_initial_weights(model, config.init_from)
    # With --backup-dir the backup keeps the last epoch after training, so a
    # run that fails after training, while decoding or writing --out,
    # resumes with nothing left to train.
    fitted = fit_resumably(
        model,
        datasets["train"],
        datasets["val"],
        config.epochs,
        patience=config.patience,
        backup_dir=config.backup_dir,
        keep_checkpoint=True,
        verbose=config.verbose,
    )
    check_finite_weights(model)

    result = _trained_summary(config, fitted, ids, source_size, target_size)
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
    scores, hypotheses = decoded_scores(model, config, ids["test"], splits["test"], target_vocabulary)
    result.update(scores)
    if config.out:
        vocabularies = vocabularies_to_json(source_vocabulary, target_vocabulary, config.tokenizer)
        _write_run(config, model, vocabularies, result, splits["test"], hypotheses)
    if config.export:
        from ganet_tf.seq2seq.translator import save_translator

        result["export"] = save_translator(model, source_vocabulary, target_vocabulary, config.export)
    return result


def _trained_summary(config, fitted, ids, source_size, target_size):
    """The summary's fields known once training ends (scores come after)."""
    return {
        "task": config.task,
        "attention": config.attention,
        "levels": config.levels if config.attention.startswith("hier") else None,
        "block_size": config.block_size if config.attention in ATTENTION_FLAGS["block_size"] else None,
        "summary_inputs": config.summary_inputs if config.attention in ATTENTION_FLAGS["summary_inputs"] else None,
        "seed": config.seed,
        "epochs": config.epochs,
        "patience": config.patience,
        "epochs_trained": fitted.epochs_trained,
        "best_epoch": fitted.best_epoch,
        "train_examples": len(ids["train"][0]),
        "test_examples": len(ids["test"][0]),
        "tokenizer": config.tokenizer,
        "source_vocabulary": source_size,
        "target_vocabulary": target_size,
        "train_seconds": fitted.train_seconds,
        "seconds_per_epoch": fitted.train_seconds / fitted.epochs_trained if fitted.epochs_trained else None,
        "init_from": config.init_from,
    }


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
        saved = finished_run_files(config.init_from)[1]
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


# The options of a `Seq2SeqConfig` that `EncoderDecoder` takes as they are,
# by the same names (`build_model` converts the others).
MODEL_OPTIONS = (
    "embedding_dim",
    "hidden",
    "attention",
    "attention_units",
    "levels",
    "block_size",
    "descent",
    "halting_penalty",
    "max_block_size",
    "summary_inputs",
    "input_feeding",
    "dropout",
    "temperature",
    "seed",
    *(name for name in GATE_OPTIONS if name not in ("gate_unit", "target_density")),
)


def build_model(config, source_size, target_size, source_pieces=None):
    """The `EncoderDecoder` of `config`; `source_pieces`, the source
    vocabulary's pieces, are needed for `--gate-unit word`."""
    config = resolve_defaults(config)
    word_gates = config.attention == "gated" and config.gate_unit == "word"
    return EncoderDecoder(
        source_size,
        target_size,
        **{name: getattr(config, name) for name in MODEL_OPTIONS},
        target_block_size=config.target_block_size or None,
        gate_unit="word" if word_gates else "token",
        source_word_codes=word_codes(source_pieces) if word_gates else None,
        target_density=target_density_argument(config.target_density),
    )


def _compiled_model(config, source_size, target_size, source_pieces):
    """The built and compiled `EncoderDecoder`; a refused option is one input error."""
    try:
        model = build_model(config, source_size, target_size, source_pieces)
    except ValueError as error:  # a layer refused an option: one line
        raise GANetInputError(str(error)) from None
    model.build()  # BackupAndRestore restores into built models only
    optimizer = keras.optimizers.Adam(config.lr, clipnorm=config.clipnorm)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
    return compile_and_build(model, optimizer, loss)


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
