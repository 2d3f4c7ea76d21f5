"""`python -m ganet_tf COMMAND ...`: thin shells over the library."""

import argparse
import json
import os
import re
import sys

from ganet_tf import backends
from ganet_tf.command_flags import BUCKETS_HELP
from ganet_tf.command_flags import DATA_DIR_HELP
from ganet_tf.command_flags import LIMIT_HELP
from ganet_tf.command_flags import add_flag
from ganet_tf.command_flags import add_glove_arguments
from ganet_tf.errors import GANetInputError
from ganet_tf.extras import require_extra

# `build_ganet`'s COMPLEMENTS, spelled here so that `--help` needs no
# TensorFlow import (tests/training/test_gate_options.py keeps the two equal).
COMPLEMENT_CHOICES = ("states", "inputs", "inputs_vs_empty", "adversarial")


def _add_train_arguments(parser):
    from ganet_tf.training import TrainConfig

    defaults = TrainConfig()
    _add_data_arguments(parser.add_argument_group("data"), defaults)
    model = parser.add_argument_group("model")
    _add_model_arguments(model, defaults)
    _add_gate_arguments(model, defaults)
    _add_encoder_arguments(model, defaults)
    fit = parser.add_argument_group("training")
    _add_fit_arguments(fit, defaults)
    _add_output_arguments(fit)
    _add_device_arguments(fit, defaults)


def _add_data_arguments(data, defaults, buckets=True, tokenizer=True):
    """The `data` group of `train` (and of `prepare`, without `--buckets`):
    dataset or user files, and their shaping."""
    from ganet_tf.data import DATASETS
    from ganet_tf.data.datasets import FORMATS

    add_flag(data, "--dataset", defaults, choices=sorted(DATASETS))
    data.add_argument("--data-dir", help=DATA_DIR_HELP)
    data.add_argument(
        "--train-file", help="your own training file (CSV/TSV with text,label header, or 'LABEL text' lines)"
    )
    data.add_argument("--test-file", help="your own test file, same format")
    data.add_argument("--format", choices=FORMATS, help="format of --train-file (default: from its extension)")
    encoding_help = "text encoding of --train-file and --test-file (e.g. latin-1; a UTF-8 BOM is dropped)"
    add_flag(data, "--encoding", defaults, help=encoding_help)
    add_flag(data, "--text-column", defaults, help="CSV/TSV header name of the texts")
    add_flag(data, "--label-column", defaults, help="CSV/TSV header name of the labels")
    data.add_argument(
        "--sequence-length", type=int, help="padded length (default: the --length-percentile of training lengths)"
    )
    add_flag(data, "--length-percentile", defaults, float)
    if tokenizer:
        from ganet_tf.data.vectorizer import TOKENIZERS

        tokenizer_help = "tokens: standardised words with GloVe embeddings, or every UTF-8 byte (embeddings learned)"
        add_flag(data, "--tokenizer", defaults, choices=TOKENIZERS, help=tokenizer_help)
    data.add_argument("--limit", type=int, help=LIMIT_HELP)
    if buckets:
        add_flag(data, "--buckets", defaults, int, help=BUCKETS_HELP)


def _add_model_arguments(model, defaults):
    """The model family and its auxiliary network (start of the `model` group)."""
    from ganet_tf.layers.auxiliary_network import ENCODERS
    from ganet_tf.models import MODEL_BUILDERS

    add_flag(model, "--model", defaults, choices=sorted(MODEL_BUILDERS))
    add_flag(model, "--aux", defaults, choices=ENCODERS, help="auxiliary network encoder")
    add_flag(model, "--aux-hidden", defaults, int)


def _add_gate_arguments(model, defaults):
    """The gates' training and inference options (middle of the `model` group)."""
    from ganet_tf.layers.gate_sampler import DISTRIBUTIONS
    from ganet_tf.layers.gate_sampler import INFERENCE_MODES
    from ganet_tf.layers.gated_attention_pooling import FALLBACKS

    add_flag(model, "--tau", defaults, float, help="Gumbel-softmax temperature")
    final_tau_help = "anneal the temperature geometrically from --tau to this value (needs --anneal-epochs)"
    add_flag(model, "--final-tau", defaults, float, help=final_tau_help)
    add_flag(model, "--anneal-epochs", defaults, int, help="epochs over which --tau falls to --final-tau")
    add_flag(model, "--lam", defaults, float, help="weight of the gate L1 penalty")
    gate_bias_help = (
        "initial gate logit: > 0 starts with most gates open (2.0: p=0.88); "
        "default logit(rho) with --target-density, else 0"
    )
    add_flag(model, "--gate-bias", defaults, float, help=gate_bias_help)
    model.add_argument("--straight-through", action="store_true", help="hard gates forward, relaxed gradient")
    sparse_training_help = (
        "ganet_transformer: blocks train on the round(rho T) tokens of highest gate only "
        "(default: on when a density rho is given, as by default)"
    )
    model.add_argument(
        "--sparse-training", action=argparse.BooleanOptionalAction, default=None, help=sparse_training_help
    )
    complement_help = "ganet: weight of a loss that asks the classifier to find no label in the closed gates' tokens"
    add_flag(model, "--complement-weight", defaults, float, help=complement_help)
    complement_kind_help = (
        "ganet: what that loss reads: the attention over the closed tokens' BiLSTM states, or the closed "
        "tokens' embeddings re-encoded by the encoder, attention and classifier held fixed "
        "(inputs_vs_empty: measured against the prediction on the emptied text, not the uniform; "
        "adversarial: read by a complement predictor trained alongside)"
    )
    add_flag(model, "--complement", defaults, choices=COMPLEMENT_CHOICES, help=complement_kind_help)
    complement_target_help = (
        "ganet: bound in nats on the re-encoded complement's loss; its weight is then a multiplier "
        "started at --complement-weight (default: none, the weight fixed)"
    )
    add_flag(model, "--complement-target", defaults, float, help=complement_target_help)
    target_density_help = (
        "steer the gate density to rho in (0, 1) with a bounded Lagrange multiplier "
        "(then --lam is its start value); 0: the paper's fixed --lam (default 0.3)"
    )
    add_flag(model, "--target-density", defaults, float, help=target_density_help)
    gate_distribution_help = "training gates: the paper's relaxed Bernoulli, or hard concrete (exact 0 and 1)"
    add_flag(model, "--gate-distribution", defaults, choices=DISTRIBUTIONS, help=gate_distribution_help)
    inference_mode_help = (
        "test gates: p > 0.5, a Bernoulli sample, the round(rho T) most probable tokens, or as many as each "
        "text's p say (relative, nucleus) (default with a target density: nucleus for ganet, top_k for "
        "ganet_transformer; threshold with --target-density 0)"
    )
    add_flag(model, "--inference-mode", defaults, choices=INFERENCE_MODES, help=inference_mode_help)
    inference_density_help = "rho of --inference-mode top_k (default: --target-density)"
    add_flag(model, "--inference-density", defaults, float, help=inference_density_help)
    inference_ratio_help = "r of --inference-mode relative: open the tokens with p >= r * the text's largest p"
    add_flag(model, "--inference-ratio", defaults, float, help=inference_ratio_help)
    inference_mass_help = (
        "pi of --inference-mode nucleus: open the fewest most probable tokens holding pi of sum p "
        "(default: --target-density)"
    )
    add_flag(model, "--inference-mass", defaults, float, help=inference_mass_help)
    fallback_help = "attention of a text whose gates are all closed: every token, or the most probable one"
    add_flag(model, "--fallback", defaults, choices=FALLBACKS, help=fallback_help)


def _add_encoder_arguments(model, defaults):
    """The BiLSTM encoder and the GloVe embeddings (end of the `model` group)."""
    add_flag(model, "--hidden", defaults, int, help="BiLSTM units each way (Transformers: the model width)")
    add_flag(model, "--num-heads", defaults, int, help="Transformers: attention heads of width --hidden / N")
    add_flag(model, "--num-layers", defaults, int, help="Transformers: encoder blocks")
    intermediate_help = "Transformers: feed-forward width (default 4 * --hidden)"
    add_flag(model, "--intermediate-dim", defaults, int, help=intermediate_help)
    model.add_argument("--window", type=int, help="local attention half-width D (default per dataset)")
    add_flag(model, "--dropout", defaults, float)
    add_glove_arguments(model, defaults)
    model.add_argument("--freeze-embeddings", action="store_true", help="keep the GloVe vectors fixed")


def _add_fit_arguments(fit, defaults):
    """Epochs, early stopping, optimiser and seed (start of the `training` group)."""
    from ganet_tf.training.train import MONITORS

    add_flag(fit, "--epochs", defaults, int)
    add_flag(fit, "--patience", defaults, int, help="early stopping patience (epochs)")
    monitor_help = "what early stopping and the best-weights checkpoint watch"
    add_flag(fit, "--monitor", defaults, choices=sorted(MONITORS), help=monitor_help)
    add_flag(fit, "--lr", defaults, float)
    add_flag(fit, "--batch-size", defaults, int)
    accumulation_help = "update with the mean gradient of N batches (an update of N * --batch-size examples)"
    fit.add_argument("--gradient-accumulation-steps", type=int, metavar="N", help=accumulation_help)
    add_flag(fit, "--seed", defaults, int)


def _add_output_arguments(fit):
    """Where the run is written and how it resumes (middle of the `training` group)."""
    fit.add_argument("--out", help="folder for model.keras, preprocessing.json and metrics.json")
    fit.add_argument(
        "--backup-dir", help="resumable training: a killed run started again continues from its last epoch"
    )
    restart_help = "delete the backup in --backup-dir and start over (e.g. after changing flags)"
    fit.add_argument("--restart", action="store_true", help=restart_help)
    fit.add_argument("--verbose", type=int, default=1, choices=(0, 1, 2))


def _add_device_arguments(fit, defaults):
    """Distribution, devices, logs and precision (end of the `training` group)."""
    from ganet_tf.training.distribution import STRATEGIES

    strategy_help = (
        "tf.distribute strategy: mirrored (this machine's GPUs, else its logical CPUs) "
        "or multi_worker (cluster from TF_CONFIG); --batch-size is the global batch"
    )
    add_flag(fit, "--strategy", defaults, choices=STRATEGIES, help=strategy_help)
    cpu_devices_help = "split the CPU into N logical devices (e.g. 2 with --strategy mirrored, without GPU)"
    fit.add_argument("--cpu-devices", type=int, help=cpu_devices_help)
    fit.add_argument("--tensorboard", metavar="DIR", help="write TensorBoard logs (loss, accuracy, density) to DIR")
    fit.add_argument("--mixed-precision", action="store_true", help="Keras mixed_float16 policy (faster on GPUs)")
    fit.add_argument("--jit-compile", action="store_true", help="compile the train step with XLA")


def _config_from(args):
    from ganet_tf.training import TrainConfig

    names = {field for field in TrainConfig.__dataclass_fields__}
    return TrainConfig(**{k: v for k, v in vars(args).items() if k in names})


def _train(args):
    from ganet_tf.policy import check_flags_apply
    from ganet_tf.training import train_and_evaluate
    from ganet_tf.training.train import MODEL_FLAGS

    # A flag the model does not read is named in one warning line (a refusal
    # would break recorded commands that pass every model the same flags).
    check_flags_apply(getattr(args, "given_flags", ()), MODEL_FLAGS, "--model", args.model, refuse=False)

    result = train_and_evaluate(_config_from(args))
    result.pop("report")
    return result


# --- prepare: the token ids, vocabulary and embeddings of train, in one .npz --


def _add_prepare_arguments(parser):
    from ganet_tf.data.prepared_dataset import EMBEDDING_DTYPES
    from ganet_tf.training import TrainConfig

    defaults = TrainConfig()
    _add_data_arguments(parser.add_argument_group("data"), defaults, buckets=False, tokenizer=False)
    add_glove_arguments(parser, defaults)
    add_flag(parser, "--seed", defaults, int, help="the validation split's and unknown words' embeddings' seed")
    parser.add_argument("--out", required=True, help="the .npz file to write (replaces a prepared file there)")
    dtype_help = "embedding matrix precision (float16: half the size, about 3 significant digits)"
    parser.add_argument("--embedding-dtype", default="float16", choices=EMBEDDING_DTYPES, help=dtype_help)


def _prepare(args):
    from ganet_tf.data.prepared_dataset import is_prepared_file
    from ganet_tf.training.prepare import write_prepared

    if not args.out.endswith(".npz"):
        raise GANetInputError(f"--out {args.out} must name a .npz file, e.g. {args.out}.npz.")
    if os.path.isdir(args.out) or (os.path.exists(args.out) and not is_prepared_file(args.out)):
        raise GANetInputError(f"--out {args.out} exists and is not a prepared dataset: give a new file.")
    folder = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(folder):
        raise GANetInputError(f"--out {args.out}: no folder {folder}; create it first.")
    config = _config_from(argparse.Namespace(**{k: v for k, v in vars(args).items() if k != "out"}))
    config.validate()
    data = write_prepared(config, args.out, args.embedding_dtype)
    return {
        "out": args.out,
        "bytes": os.path.getsize(args.out),
        "dataset": data.splits.name,
        "sequence_length": data.sequence_length,
        "vocabulary_size": len(data.vocabulary) + 2,
        "embedding_dtype": args.embedding_dtype,
        "examples": {split: int(len(ids)) for split, ids in data.ids.items()},
    }


# --- export: a trained run -> saved_models/NAME/VERSION/ for TF Serving ------


def _add_export_arguments(parser):
    parser.add_argument(
        "--model",
        required=True,
        help="folder written by `train --out` or `seq2seq --out` (a translator), or its model.keras",
    )
    parser.add_argument("--name", required=True, help="model name in TF Serving (URLs, models.config)")
    parser.add_argument("--version", type=int, help="version number (default: the next integer)")
    parser.add_argument("--base", default="saved_models", help="folder of all exported models")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing version")
    parser.add_argument("--warmup-texts", help="UTF-8 file, one text a line, for the warmup requests")
    from ganet_tf.inference.commands import add_test_gate_arguments

    add_test_gate_arguments(parser)


def _export(args):
    from ganet_tf.export import export_saved_model
    from ganet_tf.export import export_translator
    from ganet_tf.export import load_warmup_texts
    from ganet_tf.export import served_test_gates
    from ganet_tf.inference.commands import inference_rule_of
    from ganet_tf.policy import check_number
    from ganet_tf.policy.run_folder import check_outside_runs
    from ganet_tf.policy.run_folder import is_inside
    from ganet_tf.seq2seq.run_translator import is_seq2seq_run

    check_number("--version", args.version, at_least=1, integer=True, optional=True)
    test_gates = inference_rule_of(args)
    # --base only gains NAME/VERSION and models.config (it is no folder export
    # owns), but it must not lie inside the run folder it reads.
    run_dir = (os.path.dirname(args.model) or ".") if args.model.endswith(".keras") else args.model
    if os.path.isdir(run_dir) and is_inside(args.base, run_dir):
        raise GANetInputError(
            f"--base {args.base} lies inside --model {run_dir}, which it reads: give a folder outside it, "
            "e.g. saved_models."
        )
    check_outside_runs(args.base, "--base")
    texts = load_warmup_texts(args.warmup_texts) if args.warmup_texts else None
    if is_seq2seq_run(run_dir):
        path = export_translator(run_dir, args.name, args.version, args.base, args.overwrite, texts, test_gates)
    else:
        path = export_saved_model(args.model, args.name, args.version, args.base, args.overwrite, texts, test_gates)
    result = {
        "name": args.name,
        "version": int(os.path.basename(path)),
        "path": path,
        "models_config": os.path.join(args.base, "models.config"),
    }
    if test_gates is None:
        return result
    # The rule in full: a top_k or nucleus without its parameter took the
    # run's target density.
    return {**result, "test_gates": served_test_gates(path) or test_gates}


# ---------------------------------------------------------------------------


def _add_explain_arguments(parser):
    parser.add_argument(
        "--model",
        action="append",
        required=True,
        help="folder written by `train --out`; repeat to compare models side by side",
    )
    parser.add_argument("--text", action="append", default=[], help="a text to explain; repeatable")
    parser.add_argument("--file", help="file with one text a line (UTF-8 unless --encoding)")
    parser.add_argument("--encoding", default="utf-8", help="text encoding of --file (e.g. latin-1)")
    parser.add_argument("--out", required=True, help="folder for index.html, the PNGs and explanations.json")
    from ganet_tf.inference.commands import add_test_gate_arguments

    add_test_gate_arguments(parser)


# What `explain --out` writes: the page, one PNG per text, the JSON, the marker.
_EXPLAIN_FILE = re.compile(r"^(index\.html|explanations\.json|text_[0-9]+\.png|\.ganet_tf_run)$")


def is_explain_folder(path):
    """Whether `path` is empty or a report `explain --out` wrote (replaced whole)."""
    entries = os.listdir(path)
    return all(_EXPLAIN_FILE.match(entry) for entry in entries) and (not entries or "explanations.json" in entries)


def _explain(args):
    from ganet_tf.inference.commands import inference_rule_of
    from ganet_tf.interpret import explain_texts
    from ganet_tf.interpret import write_report
    from ganet_tf.policy import OutputFolder
    from ganet_tf.policy import locked_output_folders
    from ganet_tf.policy import read_input_lines
    from ganet_tf.policy import write_run_folder
    from ganet_tf.policy.run_folder import check_writable_folder
    from ganet_tf.policy.trained_run import model_file

    test_gates = inference_rule_of(args)
    texts = list(args.text)
    if args.file:
        texts += [line.strip() for line in read_input_lines(args.file, args.encoding, "--file") if line.strip()]
    if not texts:
        raise GANetInputError("Nothing to explain: pass --text or --file.")
    check_writable_folder(args.out, "--out")
    for model_dir in args.model:
        if not os.path.isfile(model_file(model_dir)):
            raise GANetInputError(
                f"No model.keras in {model_dir}: pass a folder written by `python -m ganet_tf train --out`."
            )
    inputs = [("--model", model_dir) for model_dir in args.model] + ([("--file", args.file)] if args.file else [])
    with locked_output_folders([OutputFolder(args.out, "--out", is_explain_folder)], inputs):
        explanations = [explain_texts(model_dir, texts, test_gates) for model_dir in args.model]

        def write_files(staging):
            write_report(explanations, staging)
            with open(os.path.join(staging, "explanations.json"), "w", encoding="utf-8") as handle:
                json.dump(explanations, handle, ensure_ascii=False, indent=1)

        # Staged beside --out and swapped in whole: no half-written report.
        write_run_folder(args.out, write_files, owned=is_explain_folder)
    names = ["index.html", *(f"text_{index + 1}.png" for index in range(len(texts))), "explanations.json"]
    return {"texts": len(texts), "models": len(args.model), "files": [os.path.join(args.out, n) for n in names]}


def _add_seq2seq_arguments(parser):
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


def _seq2seq(args):
    from ganet_tf.seq2seq.run import Seq2SeqConfig
    from ganet_tf.seq2seq.run import run_seq2seq

    names = set(Seq2SeqConfig.__dataclass_fields__)
    config = Seq2SeqConfig(**{k: v for k, v in vars(args).items() if k in names})
    return run_seq2seq(config, given=getattr(args, "given_flags", ()))


# Every command: its help line and what of TensorFlow it uses. All need
# TensorFlow and Keras on its backend (`ganet_tf.backends`); elsewhere
# `main` stops each in one line.
COMMANDS = {
    "train": ("train and evaluate a model; the last stdout line is a JSON summary", "tf.data, TextVectorization"),
    "prepare": (
        "write a dataset's token ids, vocabulary and embeddings to one .npz that every backend reads with NumPy",
        "tf.data, TextVectorization",
    ),
    "explain": ("per-token gates and attention of trained models, as HTML and PNG", "TextVectorization on strings"),
    "export": (
        "export a trained run (classifier or translator) as a TF Serving SavedModel; prints a JSON summary",
        "SavedModel",
    ),
    "seq2seq": (
        "train and evaluate an attentional encoder-decoder; the last stdout line is a JSON summary",
        "tf.data, string vocabularies",
    ),
    "predict": ("classify texts with a trained run; one JSON line per text", "TextVectorization on strings"),
    "evaluate": (
        "re-measure a trained run on its dataset's test or validation split; prints a JSON summary",
        "tf.data, TextVectorization",
    ),
    "translate": ("translate sentences with a seq2seq run; one JSON line each", "string vocabularies"),
    "tune": ("KerasTuner search; the last stdout line is a JSON summary", "tf.data, TextVectorization"),
}
# The commands of an optional part and the extra each needs (`ganet_tf.extras`):
# without it they stop in one line naming it, before any work.
COMMAND_EXTRAS = {"explain": "plots", "export": "serving", "seq2seq": "seq2seq", "translate": "seq2seq"}


def build_parser(tensorflow=True):
    """The parser of `python -m ganet_tf`.

    Args:
        tensorflow: whether to build the commands' flags, which imports
            TensorFlow. False (for `main` where the commands cannot run)
            builds each command without flags and without `--help`, so
            that everything after its name is left unparsed.
    """
    parser = argparse.ArgumentParser(
        prog="python -m ganet_tf",
        description="GA-Net, the Gated Attention Network, for Keras 3.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    if not tensorflow:
        for name, (help_line, _) in COMMANDS.items():
            commands.add_parser(name, help=help_line, add_help=False)
        return parser
    train = commands.add_parser("train", help=COMMANDS["train"][0])
    _add_train_arguments(train)
    train.set_defaults(run=_train)
    prepare = commands.add_parser("prepare", help=COMMANDS["prepare"][0])
    _add_prepare_arguments(prepare)
    prepare.set_defaults(run=_prepare)
    explain = commands.add_parser("explain", help=COMMANDS["explain"][0])
    _add_explain_arguments(explain)
    explain.set_defaults(run=_explain)
    export = commands.add_parser("export", help=COMMANDS["export"][0])
    _add_export_arguments(export)
    export.set_defaults(run=_export)
    seq2seq = commands.add_parser("seq2seq", help=COMMANDS["seq2seq"][0])
    _add_seq2seq_arguments(seq2seq)
    seq2seq.set_defaults(run=_seq2seq)
    from ganet_tf.inference import commands as inference

    predict = commands.add_parser("predict", help=COMMANDS["predict"][0])
    inference.add_predict_arguments(predict)
    predict.set_defaults(run=inference.predict_command)
    from ganet_tf.inference import evaluate_run

    evaluate = commands.add_parser("evaluate", help=COMMANDS["evaluate"][0])
    evaluate_run.add_evaluate_arguments(evaluate)
    evaluate.set_defaults(run=evaluate_run.evaluate_command)
    translate = commands.add_parser("translate", help=COMMANDS["translate"][0])
    inference.add_translate_arguments(translate)
    translate.set_defaults(run=inference.translate_command)
    search = _tuning_search()
    tune = commands.add_parser("tune", help=COMMANDS["tune"][0], description=search.DESCRIPTION)
    search.add_arguments(tune)
    tune.set_defaults(run=search.run)
    return parser


def _tuning_search():
    """`ganet_tf.tuning.search`, the repository's `tuning/` as installed."""
    import importlib

    try:
        return importlib.import_module("ganet_tf.tuning.search")
    except ModuleNotFoundError as error:
        if error.name != "ganet_tf.tuning":
            raise
        # A checkout's `ganet_tf/` shadows the installed one: its own `tuning/`.
        return importlib.import_module("tuning.search")


# TensorFlow's ResourceExhaustedError (a tensor larger than the memory left).
OUT_OF_MEMORY = (
    "out of memory: the model's tensors at this batch do not fit; lower --batch-size (with "
    "--gradient-accumulation-steps N to keep the update's size) or --sequence-length."
)


def main(argv=None):
    """Runs one command; returns its exit code.

    The reliability policy of every command (`ganet_tf.policy`): bad input
    is one `ganet_tf: error:` line and exit code 2; a full disk, as any
    system error, is one line and exit code 1 (`ganet_tf.policy.
    os_error_message` names the fix); Ctrl-C and SIGTERM stop with one line
    and exit codes 130 and 143, nothing half-written. Without TensorFlow, on
    another Keras backend, or on a backend Keras cannot run (unknown, not
    installed), every command stops with one line naming the fix, exit code
    2 (`--help` still lists them).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if not backends.tensorflow_backend():
        return _main_without_tensorflow(argv)
    from ganet_tf.policy.disk_space import os_error_message
    from ganet_tf.policy.interruption import check_stop_signal
    from ganet_tf.policy.interruption import install_signal_handlers
    from ganet_tf.policy.interruption import interruption_message
    from ganet_tf.policy.interruption import restore_signal_handlers

    parser = build_parser()
    args = parser.parse_args(argv)
    previous = install_signal_handlers()
    try:
        from ganet_tf.policy.flag_values import explicit_flags

        args.given_flags = explicit_flags(build_parser(), argv)
        if args.command in COMMAND_EXTRAS:
            require_extra(COMMAND_EXTRAS[args.command], args.command)
        result = args.run(args)
    except GANetInputError as error:
        print(f"ganet_tf: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as error:
        code, line = interruption_message(error)
        print(f"ganet_tf: error: {line}", file=sys.stderr)
        return code
    except OSError as error:  # disk full, permissions: one line
        code, line = os_error_message(error)
        print(f"ganet_tf: error: {line}", file=sys.stderr)
        return code
    except Exception as error:
        # A stop signal raised inside a library call can come out as that
        # call's own error (NumPy converting a variable gives a TypeError):
        # the command still stops with the interruption's line.
        try:
            check_stop_signal()
        except KeyboardInterrupt as interruption:
            code, line = interruption_message(interruption)
            print(f"ganet_tf: error: {line}", file=sys.stderr)
            return code
        if type(error).__name__ == "ResourceExhaustedError":
            print(f"ganet_tf: error: {OUT_OF_MEMORY}", file=sys.stderr)
            return 1
        raise
    finally:
        restore_signal_handlers(previous)
    if result is not None:  # `predict` and `translate` wrote their own lines
        print(json.dumps(result), flush=True)
    return 0


def _main_without_tensorflow(argv):
    """`main` where no command can run: the command's one error line, before
    its flags are read (reading them needs TensorFlow); writes nothing."""
    args, _ = build_parser(tensorflow=False).parse_known_args(argv)
    error = backends.backend_problem() or backends.missing_tensorflow(args.command, COMMANDS[args.command][1])
    print(f"ganet_tf: error: {error}", file=sys.stderr)
    return 2
