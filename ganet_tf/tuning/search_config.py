"""`SearchConfig`: everything that decides one search, checked (the `tune` flags)."""

import dataclasses
import inspect
import json
import os

from ganet_tf.data import DATASETS
from ganet_tf.errors import GANetInputError
from ganet_tf.policy import check_number
from ganet_tf.policy.renamed_keys import RENAMED_KEYS
from ganet_tf.training.config import TrainConfig
from ganet_tf.tuning.search_space import MODEL_PARAMETERS
from ganet_tf.tuning.search_space import SearchSpace

TUNERS = ("random", "bayesian", "hyperband")
# Objective flag -> (logged metric, direction).
OBJECTIVES = {
    "val_accuracy": ("val_accuracy", "max"),
    "val_loss": ("val_loss", "min"),
    "tradeoff": ("val_tradeoff", "max"),
}
# Seeds NumPy takes (KerasTuner gets the seed + 1).
MAX_SEED = 2**32 - 2

# Written into the project folder: resuming needs the same settings.
SETTINGS_FILE = "search_settings.json"
# Settings that may change between runs of one project.
RESUMABLE_CHANGES = (
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


def has_gates(model):
    return "tau" in MODEL_PARAMETERS[model]


def is_transformer(model):
    return "num_layers" in MODEL_PARAMETERS[model]


def _hand_set_value(model, name):
    """`ganet_tf train --model model`'s value of the hyperparameter `name`:
    its flag's default (the gate options' hyperparameters keep their old
    names, `RENAMED_KEYS`), else the builder's (`train` has no
    `--num-layers`)."""
    from ganet_tf.models import MODEL_BUILDERS

    field = RENAMED_KEYS.get(name, name)
    if hasattr(_HAND_SET, field):
        return getattr(_HAND_SET, field)
    return inspect.signature(MODEL_BUILDERS[model]).parameters[name].default


@dataclasses.dataclass
class SearchConfig:
    """Everything that decides one search (the `tune` flags).

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
        if self.objective == "tradeoff" and not has_gates(self.model):
            raise GANetInputError(
                f"--objective tradeoff weighs the gate density, and {self.model} "
                "has no gates: use val_accuracy or val_loss."
            )
        if is_transformer(self.model):
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
        settings = {key: value for key, value in dataclasses.asdict(self).items() if key not in RESUMABLE_CHANGES}
        # Options of another objective or tuner do not matter.
        if self.objective != "tradeoff":
            settings.pop("density_weight")
        if self.tuner != "bayesian":
            settings.pop("initial_points")
        if self.tuner != "hyperband":
            settings.pop("hyperband_factor")
        settings["search_space"] = self.search_space().get_config()
        return json.loads(json.dumps(settings))
