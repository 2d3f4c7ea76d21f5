"""Search hyperparameters with KerasTuner, retrain the best, test it: the
library behind `python -m ganet_tf tune` (and `python -m tuning.search`)."""

import dataclasses
import inspect
import json
import os
import time

import keras
import keras_tuner
import numpy as np

from ganet_tf.data import DATASETS
from ganet_tf.data.registry import local_window
from ganet_tf.errors import GANetInputError
from ganet_tf.models import MODEL_BUILDERS
from ganet_tf.policy import check_number
from ganet_tf.policy import write_json
from ganet_tf.policy.non_finite_guard import NonFiniteGuard
from ganet_tf.policy.non_finite_guard import TrainingDivergedError
from ganet_tf.policy.renamed_keys import RENAMED_KEYS
from ganet_tf.policy.run_folder import check_output_folder
from ganet_tf.policy.run_folder import check_outside_runs
from ganet_tf.policy.stop_signal_check import StopSignalCheck
from ganet_tf.training.evaluate import evaluate_model
from ganet_tf.training.prepare import prepare
from ganet_tf.training.train import TrainConfig
from ganet_tf.training.train import write_outputs

from .baseline_hypermodel import BaselineHyperModel
from .cross_validation_tuner import CrossValidationTuner
from .cross_validation_tuner import failure_reason
from .ganet_hypermodel import GANetHyperModel
from .ganet_transformer_hypermodel import GANetTransformerHyperModel
from .search_space import MODEL_PARAMETERS
from .search_space import SearchSpace
from .transformer_hypermodel import TransformerHyperModel

TUNERS = ("random", "bayesian", "hyperband")
# Objective flag -> (logged metric, direction).
OBJECTIVES = {
    "val_accuracy": ("val_accuracy", "max"),
    "val_loss": ("val_loss", "min"),
    "tradeoff": ("val_tradeoff", "max"),
}
# KerasTuner's environment for distributed tuning (chief + workers).
TUNER_ID_ENV = "KERASTUNER_TUNER_ID"
ORACLE_IP_ENV = "KERASTUNER_ORACLE_IP"
ORACLE_PORT_ENV = "KERASTUNER_ORACLE_PORT"
# Written into the project folder: resuming needs the same settings.
SETTINGS_FILE = "search_settings.json"
# Settings that may change between runs of one project.
_RESUMABLE_CHANGES = (
    "max_trials",
    "directory",
    "project_name",
    "overwrite",
    "out",
    "verbose",
    "data_dir",
    "run_eagerly",
    "final_seeds",
)

_HAND_SET = TrainConfig()


def _has_gates(model):
    return "tau" in MODEL_PARAMETERS[model]


def _is_transformer(model):
    return "num_layers" in MODEL_PARAMETERS[model]


def _hand_set_value(model, name):
    """`ganet_tf train --model model`'s value of the hyperparameter `name`:
    its flag's default (the gate options' hyperparameters keep their old
    names, `RENAMED_KEYS`), else the builder's (`train` has no
    `--num-layers`)."""
    field = RENAMED_KEYS.get(name, name)
    if hasattr(_HAND_SET, field):
        return getattr(_HAND_SET, field)
    return inspect.signature(MODEL_BUILDERS[model]).parameters[name].default


@dataclasses.dataclass
class SearchConfig:
    """Everything that decides one search (the `tuning.search` flags).

    `fixed` maps hyperparameter names to one value, `choices` to a list of
    values and `ranges` to `(min, max, step)` (step None for floats); they
    change the paper's search space (see `SearchSpace`). `limit` and
    `hidden` shrink the data and the model, and `run_eagerly` skips graph
    tracing, for smoke runs.
    """

    dataset: str = "trec"
    data_dir: str = None
    model: str = "ganet"
    tuner: str = "bayesian"
    max_trials: int = 20
    epochs: int = _HAND_SET.epochs
    patience: int = _HAND_SET.patience
    objective: str = "val_accuracy"
    density_weight: float = 0.1
    folds: int = 1
    executions_per_trial: int = 1
    initial_points: int = None
    hand_set_first: bool = False
    hyperband_factor: int = 3
    directory: str = os.path.join("results", "tuning")
    project_name: str = None
    overwrite: bool = False
    out: str = None
    seed: int = 0
    final_seeds: tuple = None
    fixed: dict = dataclasses.field(default_factory=dict)
    choices: dict = dataclasses.field(default_factory=dict)
    ranges: dict = dataclasses.field(default_factory=dict)
    hidden: int = _HAND_SET.hidden
    dropout: float = _HAND_SET.dropout
    limit: int = None
    glove: str = None
    glove_vocabulary: int = _HAND_SET.glove_vocabulary
    buckets: int = _HAND_SET.buckets
    run_eagerly: bool = False
    verbose: int = 2

    def validate(self):
        """Raises `GANetInputError` on the first impossible setting."""
        self._validate_choices()
        self._validate_numbers()
        twice = (set(self.fixed) & set(self.choices)) | (set(self.ranges) & (set(self.fixed) | set(self.choices)))
        if twice:
            raise GANetInputError(
                f"{', '.join(sorted(twice))}: give each hyperparameter one domain (a fixed value, values, or a range)."
            )
        self.search_space()

    def _validate_choices(self):
        for flag, value, choices, shown in (
            ("dataset", self.dataset, DATASETS, sorted(DATASETS)),
            ("model", self.model, MODEL_PARAMETERS, sorted(MODEL_PARAMETERS)),
            ("tuner", self.tuner, TUNERS, ", ".join(TUNERS)),
            ("objective", self.objective, OBJECTIVES, ", ".join(OBJECTIVES)),
        ):
            if value not in choices:
                raise GANetInputError(f"Unknown {flag} {value!r}: choose one of {shown}.")
        if self.objective == "tradeoff" and not _has_gates(self.model):
            raise GANetInputError(
                f"--objective tradeoff weighs the gate density, and {self.model} "
                "has no gates: use val_accuracy or val_loss."
            )
        if _is_transformer(self.model):
            for name in ("hidden", "dropout"):
                if getattr(self, name) != getattr(_HAND_SET, name):
                    raise GANetInputError(
                        f"--{name} is a hyperparameter of --model {self.model}: "
                        f"give it with --fix {name}=..., --values {name}=... or --range {name}=..."
                    )
        if self.hand_set_first and self.tuner == "hyperband":
            raise GANetInputError(
                "--hand-set-first needs --tuner random or bayesian: Hyperband schedules its own first trials."
            )

    def _validate_numbers(self):
        for name in ("max_trials", "epochs", "patience", "folds", "executions_per_trial", "hidden"):
            check_number(name, getattr(self, name), at_least=1, integer=True)
        for name in ("initial_points", "limit"):
            check_number(name, getattr(self, name), at_least=1, integer=True, optional=True)
        for name in ("glove_vocabulary", "buckets"):
            check_number(name, getattr(self, name), at_least=0, integer=True)
        check_number("hyperband_factor", self.hyperband_factor, at_least=2, integer=True)
        check_number("density_weight", self.density_weight, at_least=0)
        check_number("dropout", self.dropout, at_least=0, below=1)
        check_number("seed", self.seed, at_least=0, at_most=MAX_SEED, integer=True)
        if self.final_seeds is not None and (
            not self.final_seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in self.final_seeds)
        ):
            raise GANetInputError(f"--final-seeds must be one or more integers, got {self.final_seeds}.")
        if self.limit is not None and self.limit < 2 * self.folds:
            raise GANetInputError(
                f"--limit {self.limit} leaves too few examples for {self.folds} folds: use at least {2 * self.folds}."
            )

    def search_space(self):
        """The `SearchSpace` of `model` with `fixed`, `choices` and `ranges`."""
        space = SearchSpace(self.model)
        for name, (low, high, step) in self.ranges.items():
            space = space.with_range(name, low, high, step)
        for name, values in self.choices.items():
            space = space.with_choices(name, values)
        for name, value in self.fixed.items():
            space = space.with_fixed(name, value)
        return space

    @property
    def project(self):
        """The project name: `project_name`, or dataset_model_tuner."""
        return self.project_name or f"{self.dataset}_{self.model}_{self.tuner}"

    @property
    def project_dir(self):
        return os.path.join(self.directory, self.project)

    def data_config(self):
        """The `TrainConfig` of the data flags, for `ganet_tf.training.prepare`:
        a search reads, tokenises and embeds its data as `ganet_tf train` does
        with the same flags (its defaults for the flags a search lacks)."""
        return TrainConfig(
            dataset=self.dataset,
            data_dir=self.data_dir,
            seed=self.seed,
            limit=self.limit,
            glove=self.glove,
            glove_vocabulary=self.glove_vocabulary,
        )

    def hand_set_values(self):
        """`ganet_tf train`'s value of each tuned hyperparameter where the
        space holds it, else the space's default: the first trial of
        `hand_set_first`."""
        space = self.search_space()
        values = space.defaults()
        for name in values:
            value = _hand_set_value(self.model, name)
            if space.holds(name, value):
                values[name] = value
        return values

    def settings(self):
        """The settings a resumed search must share, JSON-ready."""
        settings = {key: value for key, value in dataclasses.asdict(self).items() if key not in _RESUMABLE_CHANGES}
        # Options of another objective or tuner do not matter.
        if self.objective != "tradeoff":
            settings.pop("density_weight")
        if self.tuner != "bayesian":
            settings.pop("initial_points")
        if self.tuner != "hyperband":
            settings.pop("hyperband_factor")
        settings["search_space"] = self.search_space().get_config()
        return json.loads(json.dumps(settings))


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


class _FirstTrialMixin:
    """Oracle mixin: the first trial of a project runs `first_values`.

    KerasTuner's random and Bayesian oracles start from random points; this
    lets a search include a known configuration (the hand-set one) so that
    the tuned result is compared with it on the same footing.
    """

    first_values = None

    def populate_space(self, trial_id):
        if self.first_values and not self.trials:
            return {"status": keras_tuner.engine.trial.TrialStatus.RUNNING, "values": dict(self.first_values)}
        return super().populate_space(trial_id)


class _RandomSearchOracle(_FirstTrialMixin, keras_tuner.oracles.RandomSearchOracle):
    pass


class _BayesianOptimizationOracle(_FirstTrialMixin, keras_tuner.oracles.BayesianOptimizationOracle):
    pass


def make_oracle(config):
    """The KerasTuner oracle of `config.tuner` for `config.objective`.

    With `config.hand_set_first` its first trial is `config.hand_set_values()`.
    """
    name, direction = OBJECTIVES[config.objective]
    objective = keras_tuner.Objective(name, direction)
    # KerasTuner reads seed 0 as "no seed": offset it to stay reproducible.
    seed = config.seed + 1
    first = config.hand_set_values() if config.hand_set_first else None
    if config.tuner == "random":
        oracle = _RandomSearchOracle(objective=objective, max_trials=config.max_trials, seed=seed)
        oracle.first_values = first
        return oracle
    if config.tuner == "bayesian":
        try:
            oracle = _BayesianOptimizationOracle(
                objective=objective,
                max_trials=config.max_trials,
                num_initial_points=config.initial_points,
                seed=seed,
            )
            oracle.first_values = first
            return oracle
        except ImportError:
            raise GANetInputError(
                "--tuner bayesian needs scikit-learn: pip install "
                "'keras-tuner[bayesian]' (or scikit-learn), or use --tuner random."
            ) from None
    oracle = keras_tuner.oracles.HyperbandOracle(
        objective=objective,
        max_epochs=config.epochs,
        factor=config.hyperband_factor,
        seed=seed,
    )
    # Hyperband sizes itself by its epochs; --max-trials caps it too.
    oracle.max_trials = config.max_trials
    return oracle


# Seeds NumPy takes (KerasTuner gets the seed + 1).
MAX_SEED = 2**32 - 2


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
    if not _is_transformer(config.model):  # the Transformers tune theirs
        arguments.update(hidden_dim=config.hidden, dropout=config.dropout)
    if _has_gates(config.model):
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
