"""Train and evaluate one model on one dataset: the library behind `train`."""

import dataclasses
import functools
import json
import math
import os

import keras

from ganet_tf.data import dataset_source
from ganet_tf.data import save_vectorizer
from ganet_tf.data.registry import LOCAL_WINDOWS  # noqa: F401 - re-exported
from ganet_tf.data.registry import local_window
from ganet_tf.errors import GANetInputError
from ganet_tf.fitting.optimizer import compile_and_build
from ganet_tf.fitting.resumable_fit import fit_resumably
from ganet_tf.metrics.all_closed_warning import warn_all_closed
from ganet_tf.models import MODEL_BUILDERS
from ganet_tf.models import build_model
from ganet_tf.models.gate_layers import GATE_DEFAULTS
from ganet_tf.models.gate_layers import TARGET_RULES
from ganet_tf.models.gate_layers import gate_rule
from ganet_tf.models.gate_layers import target_density_argument
from ganet_tf.policy.backup import has_finished_epochs
from ganet_tf.policy.backup import is_backup_folder
from ganet_tf.policy.backup import prepare_backup_dir
from ganet_tf.policy.flag_values import check_finite_fields
from ganet_tf.policy.flag_values import check_number
from ganet_tf.policy.non_finite_guard import check_finite_weights
from ganet_tf.policy.output_folder import OutputFolder
from ganet_tf.policy.output_folder import locked_output_folders
from ganet_tf.policy.run_folder import METRICS_FILE
from ganet_tf.policy.run_folder import MODEL_FILE
from ganet_tf.policy.run_folder import PREPROCESSING_FILE
from ganet_tf.policy.run_folder import write_run_folder
from ganet_tf.training.distribution import is_chief
from ganet_tf.training.distribution import local_copy
from ganet_tf.training.distribution import make_strategy
from ganet_tf.training.distribution import prepare_model
from ganet_tf.training.distribution import training_datasets
from ganet_tf.training.distribution import validate_distribution
from ganet_tf.training.evaluate import evaluate_model
from ganet_tf.training.prepare import load_splits  # noqa: F401 - re-exported
from ganet_tf.training.prepare import prepare
from ganet_tf.training.runtime_options import precision_policy
from ganet_tf.training.runtime_options import tensorboard_callbacks

# Quantities early stopping and checkpointing may watch, and their direction.
MONITORS = {"val_loss": "min", "val_accuracy": "max"}
# The flags only some models read (`model_arguments`) -> those models; `train`
# warns about one given for another model (`ganet_tf.policy.check_flags_apply`).
GATED_MODELS = ("ganet", "ganet_transformer")
MODEL_FLAGS = {
    **dict.fromkeys(
        (
            "auxiliary",
            "auxiliary_hidden_dim",
            "temperature",
            "final_temperature",
            "anneal_epochs",
            "penalty",
            "initial_gate_logit",
            "straight_through",
            "target_density",
            "gate_distribution",
            "inference_mode",
            "inference_density",
            "inference_ratio",
            "inference_mass",
            "fallback",
        ),
        GATED_MODELS,
    ),
    "window": ("local",),
    **dict.fromkeys(("num_heads", "num_layers", "intermediate_dim"), ("transformer", "ganet_transformer")),
    "sparse_training": ("ganet_transformer",),
    "complement_weight": ("ganet",),
    "complement": ("ganet",),
    "complement_target": ("ganet",),
}


@dataclasses.dataclass
class TrainConfig:
    """Everything that decides one training run (the `train` flags)."""

    dataset: str = "trec"
    model: str = "ganet"
    data_dir: str = None
    train_file: str = None
    test_file: str = None
    format: str = None
    encoding: str = "utf-8"
    text_column: str = "text"
    label_column: str = "label"
    epochs: int = 30
    seed: int = 0
    out: str = None
    auxiliary: str = "bilstm"
    auxiliary_hidden_dim: int = 20
    temperature: float = 0.5
    # Anneal --temperature to final_temperature over the first anneal_epochs
    # epochs (None: a fixed --temperature, the paper's).
    final_temperature: float = None
    anneal_epochs: int = 0
    initial_gate_logit: float = None
    penalty: float = 1e-2
    # A multiplier steers the gate density to target_density and the test
    # gates are the fewest most probable tokens holding that share of the
    # text's gate mass (nucleus; ganet_transformer: the round(rho T) most
    # probable, top_k). 0: the paper's fixed --penalty, test gates p > 0.5.
    target_density: float = 0.3
    gate_distribution: str = "relaxed_bernoulli"
    inference_mode: str = None  # nucleus (ganet) or top_k with a target density, else threshold
    inference_density: float = None
    # The parameters of --inference-mode relative and nucleus.
    inference_ratio: float = None
    inference_mass: float = None
    fallback: str = "all"
    lr: float = 1e-3
    batch_size: int = 32
    # Validation during training, in batches of this many examples.
    validation_batch_size: int = 128
    # Average the gradients of this many batches per update (Keras'
    # optimizer option): an update of batch_size * N examples in the memory
    # of batch_size (None: every batch).
    gradient_accumulation_steps: int = None
    # Validate, back up and count the patience every N training batches (the
    # training data repeat; None: once per pass over them).
    steps_per_epoch: int = None
    # Stop once the epochs of every attempt, validation included, have taken
    # this many seconds (None: no budget; `ganet_tf.fitting.TimeBudget`).
    time_budget: float = None
    # "bytes": every UTF-8 byte a token, embeddings learned from scratch.
    tokenizer: str = "words"
    glove: str = None
    glove_vocabulary: int = 50000
    freeze_embeddings: bool = False
    sequence_length: int = None
    length_percentile: float = 95.0
    dropout: float = 0.3
    hidden: int = 100
    # The Transformer models' encoder: heads of width hidden / num_heads,
    # blocks, feed-forward width (None: 4 * hidden).
    num_heads: int = 4
    num_layers: int = 2
    intermediate_dim: int = None
    window: int = None
    straight_through: bool = False
    # ganet_transformer: blocks train on the top_k tokens only. None: on
    # whenever a density rho is given (`sparse_training_on`).
    sparse_training: bool = None
    # ganet: weight of the complement loss (0: none).
    complement_weight: float = 0.0
    # ganet: what the complement loss reads, "states" (attention over the
    # closed tokens' BiLSTM states) or "inputs" (the closed tokens'
    # embeddings re-encoded by the encoder held fixed; "inputs_vs_empty":
    # against the prediction on the emptied text; "adversarial": read by a
    # complement predictor trained alongside).
    complement: str = "states"
    # ganet: a bound in nats on the complement loss, its weight then a
    # multiplier (None: the fixed --complement-weight).
    complement_target: float = None
    patience: int = 3
    monitor: str = "val_loss"
    buckets: int = 4
    backup_dir: str = None
    restart: bool = False
    validation_fraction: float = 0.1
    limit: int = None
    verbose: int = 1
    strategy: str = "default"
    cpu_devices: int = None
    tensorboard: str = None
    mixed_precision: bool = False
    jit_compile: bool = False

    def validate(self):
        if self.model not in MODEL_BUILDERS:
            raise GANetInputError(f"Unknown model {self.model!r}: choose one of {sorted(MODEL_BUILDERS)}.")
        if self.monitor not in MONITORS:
            raise GANetInputError(f"Unknown --monitor {self.monitor!r}: choose one of {sorted(MONITORS)}.")
        check_number("buckets", self.buckets, at_least=0, integer=True, optional=True)
        check_number("glove_vocabulary", self.glove_vocabulary, at_least=0, integer=True)
        self._validate_tokens()
        for name in (
            "epochs",
            "batch_size",
            "validation_batch_size",
            "auxiliary_hidden_dim",
            "hidden",
            "patience",
            "num_heads",
            "num_layers",
        ):
            check_number(name, getattr(self, name), at_least=1, integer=True)
        check_number("seed", self.seed, at_least=0, at_most=2**32 - 1, integer=True)
        for name in ("temperature", "lr"):
            check_number(name, getattr(self, name), above=0)
        check_number("penalty", self.penalty, at_least=0)
        check_number("complement_weight", self.complement_weight, at_least=0)
        check_number("complement_target", self.complement_target, above=0, optional=True)
        self._validate_complement()
        check_number("initial_gate_logit", self.initial_gate_logit, optional=True)
        self._validate_gates()
        check_number("dropout", self.dropout, at_least=0, below=1)
        check_number("length_percentile", self.length_percentile, above=0, at_most=100)
        check_number("validation_fraction", self.validation_fraction, above=0, below=1)
        if self.test_file and not self.train_file:
            raise GANetInputError("--test-file needs --train-file.")
        check_finite_fields(self)
        for name in (
            "limit",
            "window",
            "sequence_length",
            "intermediate_dim",
            "gradient_accumulation_steps",
            "steps_per_epoch",
        ):
            check_number(name, getattr(self, name), at_least=1, integer=True, optional=True)
        check_number("time_budget", self.time_budget, above=0, optional=True)
        if self.restart and not self.backup_dir:
            raise GANetInputError("--restart needs --backup-dir (the backup it deletes).")
        validate_distribution(self)

    def _validate_tokens(self):
        from ganet_tf.data.vectorizer import TOKENIZERS

        if self.tokenizer not in TOKENIZERS:
            raise GANetInputError(f"Unknown --tokenizer {self.tokenizer!r}: choose one of {list(TOKENIZERS)}.")
        if self.tokenizer == "bytes" and (self.glove or self.freeze_embeddings):
            flag = "--glove" if self.glove else "--freeze-embeddings"
            raise GANetInputError(
                f"{flag} sets word embeddings: --tokenizer bytes learns its byte embeddings; drop {flag}."
            )

    def _validate_complement(self):
        from ganet_tf.models.ganet import COMPLEMENTS

        if self.complement not in COMPLEMENTS:
            raise GANetInputError(f"Unknown --complement {self.complement!r}: choose one of {list(COMPLEMENTS)}.")
        if self.complement != "states" and not self.complement_weight:
            raise GANetInputError(
                f"--complement {self.complement} sets what the complement loss reads: give its weight with "
                "--complement-weight MU > 0."
            )
        if self.complement_target is not None and self.complement == "states":
            raise GANetInputError(
                "--complement-target bounds the loss of a re-encoded complement: give --complement inputs, "
                "inputs_vs_empty or adversarial (and --complement-weight MU > 0, the multiplier's start)."
            )

    def _validate_gates(self):
        from ganet_tf.layers.gate_sampler import DISTRIBUTIONS
        from ganet_tf.layers.gate_sampler import INFERENCE_MODES
        from ganet_tf.layers.gated_attention_pooling import FALLBACKS

        for name, choices in (
            ("gate_distribution", DISTRIBUTIONS),
            ("inference_mode", INFERENCE_MODES),
            ("fallback", FALLBACKS),
        ):
            if name == "inference_mode" and self.inference_mode is None:
                continue  # follows --target-density
            if getattr(self, name) not in choices:
                raise GANetInputError(
                    f"Unknown --{name.replace('_', '-')} {getattr(self, name)!r}: choose one of {list(choices)}."
                )
        check_number("target_density", self.target_density, at_least=0, below=1, optional=True)
        check_number("inference_density", self.inference_density, above=0, at_most=1, optional=True)
        for name, mode in (("inference_ratio", "relative"), ("inference_mass", "nucleus")):
            check_number(name, getattr(self, name), above=0, at_most=1, optional=True)
            # nucleus holds pi = --target-density of the gate mass by default.
            defaulted = mode in TARGET_RULES and self.target_density
            if self.inference_mode == mode and getattr(self, name) is None and not defaulted:
                flag = "--" + name.replace("_", "-")
                raise GANetInputError(f"--inference-mode {mode} needs its parameter: give {flag} in (0, 1].")
        self._validate_annealing()
        if self.sparse_training and self.inference_density is None and not self.target_density:
            raise GANetInputError(
                "--sparse-training keeps round(rho T) tokens per text: "
                "give rho with --target-density (or --inference-density)."
            )
        if self.inference_mode == "top_k" and self.inference_density is None and not self.target_density:
            raise GANetInputError(
                "--inference-mode top_k opens round(rho T) tokens per text: "
                "give rho with --target-density (or --inference-density)."
            )

    def _validate_annealing(self):
        check_number("final_temperature", self.final_temperature, above=0, optional=True)
        check_number("anneal_epochs", self.anneal_epochs, at_least=0, integer=True)
        if (self.final_temperature is None) != (self.anneal_epochs == 0):
            raise GANetInputError(
                "--final-temperature and --anneal-epochs go together: give both (anneal --temperature to "
                "--final-temperature over that many epochs) or neither."
            )


def anneal_steps(config, train_examples):
    """The training steps of `config.anneal_epochs` epochs of `train_examples`."""
    return config.anneal_epochs * math.ceil(train_examples / config.batch_size)


# Attention heads of the Transformer models by default; `--hidden` is their
# width (`--num-heads` sets another number).
TRANSFORMER_HEADS = 4


def sparse_training_on(config):
    """Whether `ganet_transformer` trains on its open tokens only: the
    `--sparse-training` / `--no-sparse-training` given, else whenever a
    density rho (`--target-density` or `--inference-density`) is there.

    The default follows IMDB validation accuracy, on which sparse training
    matched relaxed-gate training in a fraction of the time
    (`docs/transformers.md`, `results/transformer_check/`).
    """
    if config.sparse_training is not None:
        return bool(config.sparse_training)
    return config.model == "ganet_transformer" and bool(config.inference_density or config.target_density)


def model_arguments(config, splits, embeddings):
    """Builder arguments of `config.model` for this data."""
    arguments = {
        "embeddings": embeddings,
        "hidden_dim": config.hidden,
        "dropout": config.dropout,
    }
    if embeddings is None:
        # Byte tokens: ids 2-257 (0 pads), embeddings as wide as the model.
        from ganet_tf.data.vectorizer import BYTE_VOCABULARY

        arguments.update(vocabulary_size=len(BYTE_VOCABULARY) + 2, embedding_dim=config.hidden)
    if config.model in ("transformer", "ganet_transformer"):
        if config.hidden % config.num_heads:
            raise GANetInputError(
                f"--hidden must be a multiple of --num-heads ({config.num_heads}) "
                f"for --model {config.model}, got {config.hidden}."
            )
        arguments.update(
            num_heads=config.num_heads, num_layers=config.num_layers, intermediate_dim=config.intermediate_dim
        )
    if config.model in GATED_MODELS:
        # The gate options are `TrainConfig` fields of the same names, but for
        # the two that `train` gives in its own units.
        arguments.update({name: getattr(config, name) for name in GATE_DEFAULTS if hasattr(config, name)})
        arguments.update(
            anneal_steps=anneal_steps(config, len(splits.train_texts)),
            target_density=target_density_argument(config.target_density),
            fallback=config.fallback,
            seed=config.seed,
        )
    if config.model == "local":
        arguments["window"] = config.window or local_window(splits.name)
    if config.model == "ganet_transformer" and sparse_training_on(config):
        arguments["sparse_training"] = True
    if config.model == "ganet" and config.complement_weight:
        arguments["complement_weight"] = config.complement_weight
        if config.complement != "states":
            arguments["complement"] = config.complement
        if config.complement_target is not None:
            arguments["complement_target"] = config.complement_target
    return arguments


def compile_model(
    model, learning_rate, jit_compile="auto", metrics=(), run_eagerly=False, gradient_accumulation_steps=None
):
    """Adam and cross-entropy; GA-Net's gate penalty joins through the layer.

    The metrics are `accuracy` and the extra `metrics` (the tuning
    objective `tradeoff`); `run_eagerly` skips graph tracing (smoke runs);
    `gradient_accumulation_steps` is Adam's.
    """
    return compile_and_build(
        model,
        keras.optimizers.Adam(learning_rate, gradient_accumulation_steps=gradient_accumulation_steps),
        keras.losses.SparseCategoricalCrossentropy(),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy"), *metrics],
        jit_compile=jit_compile,
        run_eagerly=run_eagerly,
    )


def write_outputs(out, model, vectorizer, splits, result):
    """Writes `model.keras`, `preprocessing.json` and `metrics.json` to `out`.

    All or nothing: the files are written to a folder beside `out`; an
    earlier run in `out` is renamed aside, the new folder renamed in, and
    only then the earlier one deleted (`ganet_tf.policy.run_folder`).
    """

    def write_files(staging):
        model.save(os.path.join(staging, MODEL_FILE))
        save_vectorizer(os.path.join(staging, PREPROCESSING_FILE), vectorizer, splits.class_names)
        with open(os.path.join(staging, METRICS_FILE), "w") as handle:
            json.dump(result, handle, indent=2)

    write_run_folder(out, write_files)


def train_and_evaluate(config, callbacks=()):
    """Checks and locks `config.out` and `config.backup_dir`, then trains.

    Before any training: `config` is validated, `--out` must be new, empty
    or an earlier run (`ganet_tf.policy.run_folder`), `--backup-dir` new,
    empty or a backup of the same flags (`ganet_tf.policy.backup`), and
    both are locked against a second process. See `_train_and_evaluate`.
    """
    config.validate()
    inputs = [("--train-file", config.train_file), ("--test-file", config.test_file)]
    folders = [
        OutputFolder(config.out, "--out"),
        OutputFolder(config.backup_dir, "--backup-dir", is_backup_folder, has_finished_epochs),
    ]
    with locked_output_folders(folders, [(flag, path) for flag, path in inputs if path]):
        if config.backup_dir:
            prepare_backup_dir(config)
        return _train_and_evaluate(config, callbacks)


def _train_and_evaluate(config, callbacks=()):
    """Trains `config.model` on `config`'s data, evaluates it on test.

    Early stopping watches `config.monitor` (validation loss by default)
    and restores the best weights. With `config.backup_dir` a killed run started again with the
    same config continues from its last finished epoch. With `config.out` the folder receives `model.keras`,
    `preprocessing.json` (vocabulary, sequence length, class names) and
    `metrics.json`, all or nothing.

    Returns:
        A JSON-ready dict of the run: the configuration, `test_accuracy`,
        `test_density` (None without gates), `attention_flops_soft`,
        `attention_flops_gated`, `epochs_trained`, `train_seconds`,
        `epoch_seconds`, the validation scores and the test `report`. For
        a resumed run, `epochs_trained`, `train_seconds` (the sum of the
        epoch seconds), `epoch_seconds` and the `history` count every
        attempt's epochs. `config` was validated by `train_and_evaluate`.
    """
    # Before any TensorFlow operation (a multi-worker strategy and split CPU
    # devices must come first); `ganet_tf.training.distribution`.
    strategy = make_strategy(config.strategy, config.cpu_devices)
    keras.utils.set_random_seed(config.seed)
    data = prepare(config)
    train, validation = training_datasets(strategy, config, data.ids, data.splits)
    model = _build_model(config, strategy, data)
    callbacks = [*callbacks, *tensorboard_callbacks(config.tensorboard, is_chief(strategy))]
    # Early stopping on `config.monitor`; with `config.backup_dir` a killed
    # process resumes from its last finished epoch.
    fitted = fit_resumably(
        model,
        train,
        validation,
        config.epochs,
        monitor=config.monitor,
        mode=MONITORS[config.monitor],
        patience=config.patience,
        backup_dir=config.backup_dir,
        callbacks=callbacks,
        verbose=config.verbose,
        steps_per_epoch=config.steps_per_epoch,
        time_budget=config.time_budget,
    )
    check_finite_weights(model)
    model = local_copy(model, strategy)
    result = _result(config, data, model, fitted)
    warn_all_closed(result["test_all_closed_rate"])
    if config.out and is_chief(strategy):
        write_outputs(config.out, model, data.vectorizer, data.splits, result)
    return result


def _build_model(config, strategy, data):
    """`config.model` for the `Prepared` `data`, compiled under `strategy`."""
    with strategy.scope(), precision_policy(config.mixed_precision):
        model = build_model(config.model, data.num_classes, **model_arguments(config, data.splits, data.embeddings))
        if config.freeze_embeddings:
            model.get_layer("embedding").trainable = False
        compile_model(
            model,
            config.lr,
            jit_compile=config.jit_compile or "auto",
            gradient_accumulation_steps=config.gradient_accumulation_steps,
        )
    prepare_model(model, strategy, data.ids["train"], data.splits.train_labels)
    return model


def _result(config, data, model, fitted):
    """The JSON-ready summary of a trained `model` (see `_train_and_evaluate`);
    `fitted`: its `FittedRun`."""
    splits = data.splits
    # At the training batch, which the memory held (a dense model at long lengths holds no more).
    evaluate = functools.partial(evaluate_model, class_names=splits.class_names, batch_size=config.batch_size)
    test = evaluate(model, data.ids["test"], splits.test_labels)
    validation = evaluate(model, data.ids["validation"], splits.validation_labels)
    return {
        "dataset": splits.name,
        "data_source": "files" if config.train_file else dataset_source(config.dataset, config.data_dir)[0],
        "model": config.model,
        "seed": config.seed,
        "test_accuracy": test["accuracy"],
        "test_density": test["density"],
        "attention_flops_soft": test["attention_flops_soft"],
        "attention_flops_gated": test["attention_flops_gated"],
        "test_all_closed_rate": test["all_closed_rate"],
        "test_attended_density": test["attended_density"],
        # The rule the test gates followed, defaults resolved (None: no gates).
        "test_gates": gate_rule(model),
        "validation_accuracy": validation["accuracy"],
        "validation_density": validation["density"],
        "validation_attended_density": validation["attended_density"],
        "validation_all_closed_rate": validation["all_closed_rate"],
        "epochs_trained": fitted.epochs_trained,
        "best_epoch": fitted.best_epoch,
        "train_seconds": round(fitted.train_seconds, 2),
        "epoch_seconds": [round(s, 2) for s in fitted.epoch_seconds],
        "validation_seconds": [None if s is None else round(s, 2) for s in fitted.validation_seconds],
        "history": {
            key: [round(float(v), 5) for v in values] for key, values in fitted.history.items() if key != "epoch"
        },
        "sequence_length": data.sequence_length,
        "vocabulary_size": len(data.vocabulary) + 2,
        "glove_coverage": round(data.glove_coverage, 4),
        "train_examples": len(splits.train_texts),
        "test_examples": len(splits.test_texts),
        **({"sparse_training": sparse_training_on(config)} if config.model == "ganet_transformer" else {}),
        "config": {key: value for key, value in dataclasses.asdict(config).items() if key not in ("verbose",)},
        "report": test["report"],
    }
