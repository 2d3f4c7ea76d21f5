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
from ganet_tf.models import build_model
from ganet_tf.models.gate_layers import GATE_DEFAULTS
from ganet_tf.models.gate_layers import GATED_MODELS
from ganet_tf.models.gate_layers import gate_rule
from ganet_tf.models.gate_layers import target_density_argument
from ganet_tf.policy.backup import has_finished_epochs
from ganet_tf.policy.backup import is_backup_folder
from ganet_tf.policy.backup import prepare_backup_dir
from ganet_tf.policy.non_finite_guard import check_finite_weights
from ganet_tf.policy.output_folder import OutputFolder
from ganet_tf.policy.output_folder import locked_output_folders
from ganet_tf.policy.run_folder import METRICS_FILE
from ganet_tf.policy.run_folder import MODEL_FILE
from ganet_tf.policy.run_folder import PREPROCESSING_FILE
from ganet_tf.policy.run_folder import write_run_folder
from ganet_tf.training.config import MONITORS
from ganet_tf.training.config import TrainConfig  # noqa: F401 - re-exported
from ganet_tf.training.config import sparse_training_on
from ganet_tf.training.distribution import is_chief
from ganet_tf.training.distribution import local_copy
from ganet_tf.training.distribution import make_strategy
from ganet_tf.training.distribution import prepare_model
from ganet_tf.training.distribution import training_datasets
from ganet_tf.training.evaluate import evaluate_model
from ganet_tf.training.prepare import load_splits  # noqa: F401 - re-exported
from ganet_tf.training.prepare import prepare
from ganet_tf.training.runtime_options import precision_policy
from ganet_tf.training.runtime_options import tensorboard_callbacks

# The flags only some models read (`model_arguments`) -> those models; `train`
# warns about one given for another model (`ganet_tf.policy.check_flags_apply`).
TRANSFORMER_MODELS = ("transformer", "ganet_transformer", "linear_transformer")
MODEL_FLAGS = {
    **dict.fromkeys(
        (
            "auxiliary",
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
    "auxiliary_hidden_dim": (*GATED_MODELS, "conv"),
    "window": ("local",),
    "sliding_window": ("transformer",),
    **dict.fromkeys(("num_heads", "num_layers", "intermediate_dim"), TRANSFORMER_MODELS),
    "sparse_training": ("ganet_transformer",),
    "stem": ("ganet_transformer",),
    "pooling": ("ganet_transformer",),
    "position_embedding": ("ganet_transformer",),
    "complement_weight": ("ganet",),
    "complement": ("ganet",),
    "complement_target": ("ganet",),
}


def epoch_batches(config, train_examples):
    """The batches of one training epoch: `config.steps_per_epoch`, else the
    training examples over the batch size (bucketing by length adds at most
    one part-filled batch a bucket)."""
    return config.steps_per_epoch or math.ceil(train_examples / config.batch_size)


def anneal_steps(config, train_examples):
    """The training steps of `config.anneal_epochs` epochs of `train_examples`."""
    return config.anneal_epochs * epoch_batches(config, train_examples)


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
    if config.model in TRANSFORMER_MODELS:
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
    if config.model == "transformer" and config.sliding_window:
        arguments["sliding_window"] = config.sliding_window
    if config.model == "conv":
        # The convolutions of the "conv" auxiliary network, as wide.
        arguments["hidden_dim"] = config.auxiliary_hidden_dim
    if config.model == "ganet_transformer" and sparse_training_on(config):
        arguments["sparse_training"] = True
    if config.model == "ganet_transformer" and config.stem:
        arguments["stem"] = config.stem
    if config.model == "ganet_transformer" and config.pooling != "gated":
        arguments["pooling"] = config.pooling
    if config.model == "ganet_transformer" and not config.position_embedding:
        arguments["position_embedding"] = False
    if config.model == "ganet" and config.complement_weight:
        arguments["complement_weight"] = config.complement_weight
        if config.complement != "states":
            arguments["complement"] = config.complement
        if config.complement_target is not None:
            arguments["complement_target"] = config.complement_target
    return arguments


def learning_rate(config, train_examples):
    """`config.lr`, or with `config.lr_schedule="cosine"` Keras' `CosineDecay`
    from it to 0 over the run's updates: `config.epochs` epochs of
    `epoch_batches`, one update per `config.gradient_accumulation_steps` of
    them (the count that Adam's `iterations` keeps)."""
    if config.lr_schedule is None:
        return config.lr
    updates = max(1, config.epochs * epoch_batches(config, train_examples) // (config.gradient_accumulation_steps or 1))
    return keras.optimizers.schedules.CosineDecay(config.lr, decay_steps=updates)


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
            learning_rate(config, len(data.splits.train_texts)),
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
