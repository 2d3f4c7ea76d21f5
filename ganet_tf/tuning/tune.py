"""The search workflow: search hyperparameters with KerasTuner, retrain the
best, test it; the library behind `python -m ganet_tf tune` (and `python -m
ganet_tf.tuning.search`). Its settings are `search_config.SearchConfig`, its oracles
`oracles.make_oracle`, its models the hypermodels of this package."""

import json
import os
import time

import keras
import keras_tuner
import numpy as np

from ganet_tf.data.registry import local_window
from ganet_tf.errors import GANetInputError
from ganet_tf.policy import write_json
from ganet_tf.policy.non_finite_guard import NonFiniteGuard
from ganet_tf.policy.non_finite_guard import TrainingDivergedError
from ganet_tf.policy.run_folder import check_output_folder
from ganet_tf.policy.run_folder import check_outside_runs
from ganet_tf.policy.stop_signal_check import StopSignalCheck
from ganet_tf.training.evaluate import evaluate_model
from ganet_tf.training.prepare import prepare
from ganet_tf.training.train import write_outputs
from ganet_tf.tuning.baseline_hypermodel import BaselineHyperModel
from ganet_tf.tuning.cross_validation_tuner import CrossValidationTuner
from ganet_tf.tuning.cross_validation_tuner import failure_reason
from ganet_tf.tuning.ganet_hypermodel import GANetHyperModel
from ganet_tf.tuning.ganet_transformer_hypermodel import GANetTransformerHyperModel
from ganet_tf.tuning.oracles import make_oracle
from ganet_tf.tuning.search_config import OBJECTIVES
from ganet_tf.tuning.search_config import SETTINGS_FILE
from ganet_tf.tuning.search_config import has_gates
from ganet_tf.tuning.search_config import is_transformer
from ganet_tf.tuning.transformer_hypermodel import TransformerHyperModel

# KerasTuner's environment for distributed tuning (chief + workers).
TUNER_ID_ENV = "KERASTUNER_TUNER_ID"
ORACLE_IP_ENV = "KERASTUNER_ORACLE_IP"
ORACLE_PORT_ENV = "KERASTUNER_ORACLE_PORT"


def distributed_role():
    """`"chief"`, `"worker"`, or None without KerasTuner's distributed setup."""
    if ORACLE_IP_ENV not in os.environ:
        return None
    for name in (ORACLE_PORT_ENV, TUNER_ID_ENV):
        if not os.environ.get(name):
            raise GANetInputError(
                f"{ORACLE_IP_ENV} is set but {name} is not: distributed "
                f"tuning needs {ORACLE_IP_ENV}, {ORACLE_PORT_ENV} and "
                f"{TUNER_ID_ENV} (chief or a worker name)."
            )
    return "chief" if "chief" in os.environ[TUNER_ID_ENV] else "worker"


def make_hypermodel(config, num_classes, embeddings, dataset_name, scoring=True, seed=None):
    """The HyperModel of `config.model` over `config.search_space()`.

    With `scoring` its models also compile the metric of `config.objective`
    where it is not built in (`tradeoff`); the final retraining, which has
    no validation, builds without it. `seed` (default `config.seed`)
    seeds the shuffles and the gates.
    """
    arguments = dict(
        embeddings=embeddings,
        space=config.search_space(),
        seed=config.seed if seed is None else seed,
        buckets=config.buckets,
        run_eagerly=config.run_eagerly,
    )
    if not is_transformer(config.model):  # the Transformers tune theirs
        arguments.update(hidden_dim=config.hidden, dropout=config.dropout)
    if has_gates(config.model):
        scored = scoring and config.objective == "tradeoff"
        weight = config.density_weight if scored else None
        gated = GANetHyperModel if config.model == "ganet" else GANetTransformerHyperModel
        return gated(num_classes, density_weight=weight, **arguments)
    if config.model == "transformer":
        return TransformerHyperModel(num_classes, **arguments)
    if config.model == "local":
        arguments["window"] = local_window(dataset_name)
    return BaselineHyperModel(config.model, num_classes, **arguments)


def _check_settings(config, role):
    path = os.path.join(config.project_dir, SETTINGS_FILE)
    settings = config.settings()
    fresh = config.overwrite and role != "worker"
    if not fresh and os.path.isfile(path):
        with open(path) as handle:
            saved = json.load(handle)
        changed = sorted(k for k in set(saved) | set(settings) if saved.get(k) != settings.get(k))
        if changed:
            raise GANetInputError(
                f"{config.project_dir} holds a search with other settings "
                f"({', '.join(changed)}): rerun it with the same flags, or "
                "pass --overwrite or another --project-name."
            )
    return path, settings


# What to change when trials fail: the hyperparameters that make a training diverge.
_FAILED_TRIALS_FIX = (
    "narrow the search space (e.g. lower learning rates: --values lr=... or --range lr=MIN:MAX) "
    "and search again with --overwrite or another --project-name"
)


def _failed_trials(tuner):
    return [t for t in tuner.oracle.trials.values() if t.status == keras_tuner.engine.trial.TrialStatus.FAILED]


def _failed_search(tuner, stopped=False):
    """The `GANetInputError` of a search without a completed trial, or
    stopped (`stopped`) by KerasTuner after too many failed trials in a row."""
    failed = _failed_trials(tuner)
    last = failure_reason(failed[-1]) if failed else "no trial ran"
    if stopped:
        what = (
            f"KerasTuner stopped the search of {tuner.project_dir} after "
            f"{tuner.oracle.max_consecutive_failed_trials} failed trials in a row"
        )
    else:
        what = f"no trial of {tuner.project_dir} completed ({len(failed)} failed)"
    return GANetInputError(f"{what}; the last failure: {last}. No model was saved: {_FAILED_TRIALS_FIX}.")


def search_and_evaluate(config):
    """Searches `config`'s space, retrains the best trial, tests it.

    The data are prepared as `ganet_tf train` prepares them
    (`ganet_tf.training.prepare`: vocabulary of the training texts plus the
    `config.glove_vocabulary` most frequent GloVe words, sequence length
    the 95th percentile of the training lengths). Each trial trains with
    early stopping on the objective (`config.patience`) for at most
    `config.epochs` epochs and is scored on the validation split, or by
    `config.folds`-fold cross-validation of train + validation. The project
    folder `config.directory/config.project` keeps every finished trial:
    the same command resumes a killed search, and a larger `max_trials`
    extends a finished one. The best configuration is then retrained on
    train + validation for its best epoch count, once per seed of
    `config.final_seeds` (default: `config.seed`), tested, and the first
    seed's model saved to `config.out` (default: `best_model` in the project
    folder) as `model.keras`, `preprocessing.json` and `metrics.json`.

    A trial whose loss or weights stop being finite (`NonFiniteGuard`), or
    that raises, fails: KerasTuner marks it FAILED with its reason (one
    warning line) and never takes it as the best. A search where no trial
    completed, or that KerasTuner stopped after
    `max_consecutive_failed_trials` (3) failures in a row, raises
    `GANetInputError`, as does a retraining that diverges; nothing is
    written to `out` then.

    With KerasTuner's distributed environment (`KERASTUNER_TUNER_ID`,
    `KERASTUNER_ORACLE_IP`, `KERASTUNER_ORACLE_PORT`) the chief serves the
    oracle until the workers have run every trial, then retrains and tests
    the best; a worker runs trials and returns what it ran.

    Returns:
        A JSON-ready dict: the best `hyperparameters`, `best_score` (its
        objective), `epochs` of the retraining, `trials` (completed in the
        project), `failed_trials` (failed in the project), `new_trials`
        (run by this process), `final_seeds`,
        `test_accuracy`, `test_density` (None without gates) and
        `test_attended_density` (share of real tokens with attention weight
        > 0; None for models without attention weights) averaged over
        them, `test_accuracies` (one per seed), the attention FLOPs, `out`,
        and timings. A worker returns `role`, `tuner_id` and `ran_trials`.
    """
    config.validate()
    if config.out:  # refused now rather than after the search
        check_output_folder(config.out, "--out")
    check_outside_runs(config.directory, "--directory")
    role = distributed_role()
    settings_path, settings = _check_settings(config, role)
    keras.utils.set_random_seed(config.seed)
    data = prepare(config.data_config())
    tuner = _make_tuner(config, data, role)
    os.makedirs(os.path.dirname(settings_path), exist_ok=True)
    write_json(settings_path, settings)
    search_seconds = _search(tuner, config, data, role)
    if role == "worker":
        return {
            "role": "worker",
            "tuner_id": os.environ[TUNER_ID_ENV],
            "ran_trials": tuner.ran_trials,
            "search_seconds": search_seconds,
        }
    best = _best_trial(tuner, config)
    final_seeds = list(config.final_seeds or [config.seed])
    model, tests, train_seconds = _retrain(config, data, best, final_seeds)
    out = config.out or os.path.join(config.project_dir, "best_model")
    result = _result(config, data, tuner, best, tests)
    result.update(search_seconds=search_seconds, train_seconds=round(train_seconds, 2), out=out)
    result["report"] = tests[0]["report"]
    write_outputs(out, model, data.vectorizer, data.splits, result)
    return result


def _make_tuner(config, data, role):
    """The `CrossValidationTuner` of `config`'s project over the `Prepared` `data`."""
    return CrossValidationTuner(
        make_oracle(config),
        make_hypermodel(config, data.num_classes, data.embeddings, data.splits.name),
        folds=config.folds,
        fold_seed=config.seed,
        directory=config.directory,
        project_name=config.project,
        # A worker must not wipe the project that its chief serves.
        overwrite=config.overwrite and role != "worker",
        executions_per_trial=config.executions_per_trial,
    )


def _search(tuner, config, data, role):
    """Runs the missing trials of the project; returns the seconds it took."""
    if config.verbose and role != "worker":
        tuner.search_space_summary()
    monitor, direction = OBJECTIVES[config.objective]
    started = time.perf_counter()
    try:
        tuner.search(
            data.ids["train"],
            data.splits.train_labels,
            validation_data=(data.ids["validation"], data.splits.validation_labels),
            epochs=config.epochs,
            callbacks=[
                # First: a diverged trial fails before anything saves it.
                NonFiniteGuard(),
                StopSignalCheck(),
                keras.callbacks.EarlyStopping(monitor=monitor, mode=direction, patience=config.patience),
            ],
            verbose=config.verbose,
        )
    except RuntimeError:
        # KerasTuner's oracle stops a search after `max_consecutive_failed_trials`.
        if _stopped_by_failures(tuner.oracle):
            raise _failed_search(tuner, stopped=True) from None
        raise
    return round(time.perf_counter() - started, 2)


def _stopped_by_failures(oracle):
    """Whether the last `max_consecutive_failed_trials` ended trials all failed."""
    limit = oracle.max_consecutive_failed_trials
    last = [oracle.trials[trial_id].status for trial_id in oracle.end_order[-limit:]] if limit else []
    return len(last) == limit and all(status == keras_tuner.engine.trial.TrialStatus.FAILED for status in last)


def _best_trial(tuner, config):
    """The best completed trial of the project (`GANetInputError` if none).

    A failed trial (its training diverged, or it raised) is never the best:
    KerasTuner pads its best trials with failed ones when too few completed.
    """
    if config.verbose:
        tuner.results_summary(num_trials=min(config.max_trials, 10))
    # KerasTuner pads the best trials with failed ones when none completed.
    best_trials = [t for t in tuner.oracle.get_best_trials(1) if t.status == "COMPLETED"]
    if not best_trials:
        raise _failed_search(tuner)
    return best_trials[0]


def _retrain(config, data, best, seeds):
    """Retrains `best` on train + validation for its best epoch count, once
    per seed, and tests each model; returns `(first model, tests, seconds)`."""
    pool_ids = np.concatenate([data.ids["train"], data.ids["validation"]])
    pool_labels = np.concatenate([data.splits.train_labels, data.splits.validation_labels])
    tests, kept, train_seconds = [], None, 0.0
    for seed in seeds:
        keras.backend.clear_session()
        keras.utils.set_random_seed(seed)
        final = make_hypermodel(config, data.num_classes, data.embeddings, data.splits.name, scoring=False, seed=seed)
        model = final.build(best.hyperparameters.copy())
        started = time.perf_counter()
        try:
            final.fit(
                best.hyperparameters,
                model,
                pool_ids,
                pool_labels,
                epochs=best.best_step + 1,
                # Every epoch's loss and weights checked before anything is written.
                callbacks=[NonFiniteGuard(), StopSignalCheck()],
                verbose=config.verbose,
            )
        except TrainingDivergedError as error:
            raise GANetInputError(
                f"the best trial ({best.trial_id}) diverged when retrained on train + validation "
                f"with seed {seed}: {str(error).partition(';')[0]}. No model was saved: {_FAILED_TRIALS_FIX}."
            ) from None
        train_seconds += time.perf_counter() - started
        tests.append(evaluate_model(model, data.ids["test"], data.splits.test_labels, data.class_names))
        kept = kept or model
    return kept, tests, train_seconds


def _result(config, data, tuner, best, tests):
    """The JSON-ready summary of the search and of the retrained `tests`
    (without the timings, `out` and the test `report`)."""
    space = config.search_space()
    completed = [t for t in tuner.oracle.trials.values() if t.status == "COMPLETED"]
    test = tests[0]
    return {
        "dataset": data.splits.name,
        "model": config.model,
        "tuner": config.tuner,
        "objective": OBJECTIVES[config.objective][0],
        "folds": config.folds,
        "best_trial": best.trial_id,
        "best_score": best.score,
        "hyperparameters": {name: value for name, value in best.hyperparameters.values.items() if name in space.names},
        "epochs": best.best_step + 1,
        "trials": len(completed),
        "failed_trials": len(_failed_trials(tuner)),
        "new_trials": len(tuner.ran_trials),
        "final_seeds": list(config.final_seeds or [config.seed]),
        "test_accuracy": float(np.mean([t["accuracy"] for t in tests])),
        "test_accuracies": [t["accuracy"] for t in tests],
        "test_density": (None if test["density"] is None else float(np.mean([t["density"] for t in tests]))),
        "test_attended_density": (
            None if test["attended_density"] is None else float(np.mean([t["attended_density"] for t in tests]))
        ),
        "attention_flops_soft": test["attention_flops_soft"],
        "attention_flops_gated": test["attention_flops_gated"],
        "train_examples": len(data.ids["train"]) + len(data.ids["validation"]),
        "test_examples": len(data.ids["test"]),
    }
