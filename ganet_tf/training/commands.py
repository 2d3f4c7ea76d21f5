"""`python -m ganet_tf train` and `prepare`: their flags and handlers.

`ganet_tf.cli` adds each command's flags with `add_X_arguments(parser)` and
runs it with `X_command(args)` under the reliability policy (`main`). The
defaults are `TrainConfig`'s; the flags `train` shares with `tune`, and the
choices that modules importing Keras define, are `ganet_tf.command_flags`'.
Adding the flags imports neither Keras nor TensorFlow (`--help` answers at
once); what needs them is imported inside the handlers.
"""

import argparse
import os

from ganet_tf.command_flags import BUCKETS_HELP
from ganet_tf.command_flags import CHOICES
from ganet_tf.command_flags import DATA_DIR_HELP
from ganet_tf.command_flags import LIMIT_HELP
from ganet_tf.command_flags import add_flag
from ganet_tf.command_flags import add_glove_arguments
from ganet_tf.errors import GANetInputError
from ganet_tf.training.config import LR_SCHEDULES
from ganet_tf.training.config import MONITORS
from ganet_tf.training.config import TrainConfig

# `build_ganet`'s COMPLEMENTS, spelled here so that `--help` needs no
# TensorFlow import (tests/training/test_gate_options.py keeps the two equal).
COMPLEMENT_CHOICES = ("states", "inputs", "inputs_vs_empty", "adversarial")


def add_train_arguments(parser):
    """The flags of `train`: its `data`, `model` and `training` groups."""
    defaults = TrainConfig()
    _add_data_arguments(parser.add_argument_group("data"), defaults)
    model = parser.add_argument_group("model")
    _add_model_arguments(model, defaults)
    _add_gate_arguments(model, defaults)
    _add_complement_arguments(model, defaults)
    _add_density_arguments(model, defaults)
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
        tokenizer_help = "tokens: standardised words with GloVe embeddings, or every UTF-8 byte (embeddings learned)"
        tokenizers = CHOICES["ganet_tf.data.vectorizer.TOKENIZERS"]
        add_flag(data, "--tokenizer", defaults, choices=tokenizers, help=tokenizer_help)
    data.add_argument("--limit", type=int, help=LIMIT_HELP)
    if buckets:
        add_flag(data, "--buckets", defaults, int, help=BUCKETS_HELP)


def _add_model_arguments(model, defaults):
    """The model family and its auxiliary network (start of the `model` group)."""
    models = CHOICES["ganet_tf.models.MODEL_BUILDERS"]
    encoders = CHOICES["ganet_tf.layers.auxiliary_network.ENCODERS"]
    rules = CHOICES["ganet_tf.layers.uninformed_gates.RULES"]
    add_flag(model, "--model", defaults, choices=sorted(models))
    auxiliary_help = "auxiliary network encoder, or random / strided tokens (controls without weights)"
    add_flag(model, "--auxiliary", defaults, choices=(*encoders, *rules), deprecated=("--aux",), help=auxiliary_help)
    auxiliary_hidden_help = "width of the auxiliary network"
    add_flag(model, "--auxiliary-hidden-dim", defaults, int, deprecated=("--aux-hidden",), help=auxiliary_hidden_help)


def _add_gate_arguments(model, defaults):
    """The gates' training options (middle of the `model` group)."""
    add_flag(model, "--temperature", defaults, float, deprecated=("--tau",), help="Gumbel-softmax temperature")
    final_help = "anneal the temperature geometrically from --temperature to this value (needs --anneal-epochs)"
    add_flag(model, "--final-temperature", defaults, float, deprecated=("--final-tau",), help=final_help)
    anneal_help = "epochs over which --temperature falls to --final-temperature"
    add_flag(model, "--anneal-epochs", defaults, int, help=anneal_help)
    add_flag(model, "--penalty", defaults, float, deprecated=("--lam",), help="weight lambda of the gate L1 penalty")
    initial_logit_help = (
        "initial gate logit: > 0 starts with most gates open (2.0: p=0.88); "
        "default logit(rho) with --target-density, else 0"
    )
    add_flag(model, "--initial-gate-logit", defaults, float, deprecated=("--gate-bias",), help=initial_logit_help)
    model.add_argument("--straight-through", action="store_true", help="hard gates forward, relaxed gradient")
    sparse_training_help = (
        "ganet_transformer: blocks train on the round(rho T) tokens of highest gate only "
        "(default: on when a density rho is given, as by default)"
    )
    model.add_argument(
        "--sparse-training", action=argparse.BooleanOptionalAction, default=None, help=sparse_training_help
    )
    stems = [stem for stem in CHOICES["ganet_tf.models.ganet_transformer.STEMS"] if stem is not None]
    stem_help = (
        "ganet_transformer: conv runs the conv gate network's convolutions over every token; the gates read their "
        "states and the encoder the embeddings joined with them (default: none)"
    )
    add_flag(model, "--stem", defaults, choices=stems, help=stem_help)
    pooling_help = (
        "ganet_transformer: the pooling attends the open tokens (gated, GA-Net) or every real token (all: the closed "
        "ones as they entered the blocks; needs sparse training)"
    )
    add_flag(
        model,
        "--pooling",
        defaults,
        choices=list(CHOICES["ganet_tf.models.ganet_transformer.POOLINGS"]),
        help=pooling_help,
    )
    position_help = (
        "ganet_transformer: learned position embeddings added to the encoder input (--no-position-embedding: none; "
        "the attention is then order-blind, and a --stem gives each token its neighbours)"
    )
    add_flag(model, "--position-embedding", defaults, action=argparse.BooleanOptionalAction, help=position_help)


def _add_complement_arguments(model, defaults):
    """GA-Net's complement loss (middle of the `model` group)."""
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


def _add_density_arguments(model, defaults):
    """The gate density in training and the test gates (middle of the `model` group)."""
    distributions = CHOICES["ganet_tf.layers.gate_sampler.DISTRIBUTIONS"]
    inference_modes = CHOICES["ganet_tf.layers.gate_sampler.INFERENCE_MODES"]
    fallbacks = CHOICES["ganet_tf.layers.gated_attention_pooling.FALLBACKS"]
    target_density_help = (
        "steer the gate density to rho in (0, 1) with a bounded Lagrange multiplier "
        "(then --penalty is its start value); 0: the paper's fixed --penalty (default 0.3)"
    )
    add_flag(model, "--target-density", defaults, float, help=target_density_help)
    gate_distribution_help = "training gates: the paper's relaxed Bernoulli, or hard concrete (exact 0 and 1)"
    add_flag(model, "--gate-distribution", defaults, choices=distributions, help=gate_distribution_help)
    inference_mode_help = (
        "test gates: p > 0.5, a Bernoulli sample, the round(rho T) most probable tokens, or as many as each "
        "text's p say (relative, nucleus) (default with a target density: nucleus for ganet, top_k for "
        "ganet_transformer; threshold with --target-density 0)"
    )
    add_flag(model, "--inference-mode", defaults, choices=inference_modes, help=inference_mode_help)
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
    add_flag(model, "--fallback", defaults, choices=fallbacks, help=fallback_help)


def _add_encoder_arguments(model, defaults):
    """The BiLSTM encoder and the GloVe embeddings (end of the `model` group)."""
    add_flag(model, "--hidden", defaults, int, help="BiLSTM units each way (Transformers: the model width)")
    add_flag(model, "--num-heads", defaults, int, help="Transformers: attention heads of width --hidden / N")
    add_flag(model, "--num-layers", defaults, int, help="Transformers: encoder blocks")
    intermediate_help = "Transformers: feed-forward width (default 4 * --hidden)"
    add_flag(model, "--intermediate-dim", defaults, int, help=intermediate_help)
    model.add_argument("--window", type=int, help="local attention half-width D (default per dataset)")
    sliding_help = (
        "transformer: local attention, each token attending the tokens less than W positions away "
        "(a mask on the dense scores: no faster than dense)"
    )
    model.add_argument("--sliding-window", type=int, metavar="W", help=sliding_help)
    add_flag(model, "--dropout", defaults, float)
    add_glove_arguments(model, defaults)
    model.add_argument("--freeze-embeddings", action="store_true", help="keep the GloVe vectors fixed")


def _add_fit_arguments(fit, defaults):
    """Epochs, early stopping, optimiser and seed (start of the `training` group)."""
    add_flag(fit, "--epochs", defaults, int)
    add_flag(fit, "--patience", defaults, int, help="early stopping patience (epochs)")
    monitor_help = "what early stopping and the best-weights checkpoint watch"
    add_flag(fit, "--monitor", defaults, choices=sorted(MONITORS), help=monitor_help)
    add_flag(fit, "--lr", defaults, float)
    schedule_help = "cosine: --lr decayed to 0 along a cosine over every epoch's updates (default: constant)"
    add_flag(fit, "--lr-schedule", defaults, choices=LR_SCHEDULES[1:], help=schedule_help)
    add_flag(fit, "--batch-size", defaults, int)
    validation_batch_help = "examples a validation batch holds during training (a dense model on long texts: fewer)"
    add_flag(fit, "--validation-batch-size", defaults, int, help=validation_batch_help)
    accumulation_help = "update with the mean gradient of N batches (an update of N * --batch-size examples)"
    fit.add_argument("--gradient-accumulation-steps", type=int, metavar="N", help=accumulation_help)
    steps_help = "validate, back up and count --patience every N training batches (default: once per pass)"
    fit.add_argument("--steps-per-epoch", type=int, metavar="N", help=steps_help)
    budget_help = (
        "stop training once its epochs (every attempt's, validation included) have taken SECONDS; "
        "the best epoch is kept"
    )
    fit.add_argument("--time-budget", type=float, metavar="SECONDS", help=budget_help)
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
    strategy_help = (
        "tf.distribute strategy: mirrored (this machine's GPUs, else its logical CPUs) "
        "or multi_worker (cluster from TF_CONFIG); --batch-size is the global batch"
    )
    strategies = CHOICES["ganet_tf.training.distribution.STRATEGIES"]
    add_flag(fit, "--strategy", defaults, choices=strategies, help=strategy_help)
    cpu_devices_help = "split the CPU into N logical devices (e.g. 2 with --strategy mirrored, without GPU)"
    fit.add_argument("--cpu-devices", type=int, help=cpu_devices_help)
    fit.add_argument("--tensorboard", metavar="DIR", help="write TensorBoard logs (loss, accuracy, density) to DIR")
    fit.add_argument("--mixed-precision", action="store_true", help="Keras mixed_float16 policy (faster on GPUs)")
    fit.add_argument("--jit-compile", action="store_true", help="compile the train step with XLA")


def config_from(args):
    """The `TrainConfig` of parsed `train` flags (those of `add_train_arguments`)."""
    names = {field for field in TrainConfig.__dataclass_fields__}
    return TrainConfig(**{k: v for k, v in vars(args).items() if k in names})


def train_command(args):
    """`python -m ganet_tf train`: the JSON summary of `train_and_evaluate`."""
    from ganet_tf.policy import check_flags_apply
    from ganet_tf.training import train_and_evaluate
    from ganet_tf.training.train import MODEL_FLAGS

    # A flag the model does not read is named in one warning line (a refusal
    # would break recorded commands that pass every model the same flags).
    check_flags_apply(getattr(args, "given_flags", ()), MODEL_FLAGS, "--model", args.model, refuse=False)

    result = train_and_evaluate(config_from(args))
    result.pop("report")
    return result


# --- prepare: the token ids, vocabulary and embeddings of train, in one .npz --


def add_prepare_arguments(parser):
    """The flags of `prepare`."""
    from ganet_tf.data.prepared_dataset import EMBEDDING_DTYPES

    defaults = TrainConfig()
    _add_data_arguments(parser.add_argument_group("data"), defaults, buckets=False, tokenizer=False)
    add_glove_arguments(parser, defaults)
    add_flag(parser, "--seed", defaults, int, help="the validation split's and unknown words' embeddings' seed")
    parser.add_argument("--out", required=True, help="the .npz file to write (replaces a prepared file there)")
    dtype_help = "embedding matrix precision (float16: half the size, about 3 significant digits)"
    parser.add_argument("--embedding-dtype", default="float16", choices=EMBEDDING_DTYPES, help=dtype_help)


def prepare_command(args):
    """`python -m ganet_tf prepare`: writes the `.npz`; returns its JSON summary."""
    from ganet_tf.data.prepared_dataset import is_prepared_file
    from ganet_tf.training.prepare import write_prepared

    if not args.out.endswith(".npz"):
        raise GANetInputError(f"--out {args.out} must name a .npz file, e.g. {args.out}.npz.")
    if os.path.isdir(args.out) or (os.path.exists(args.out) and not is_prepared_file(args.out)):
        raise GANetInputError(f"--out {args.out} exists and is not a prepared dataset: give a new file.")
    folder = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(folder):
        raise GANetInputError(f"--out {args.out}: no folder {folder}; create it first.")
    config = config_from(argparse.Namespace(**{k: v for k, v in vars(args).items() if k != "out"}))
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
