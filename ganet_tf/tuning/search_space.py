"""The hyperparameters that the tuning HyperModels declare, and their domains."""

import copy
import math

from ganet_tf.command_flags import CHOICES
from ganet_tf.errors import GANetInputError
from ganet_tf.training.config import TRANSFORMER_HEADS

# The auxiliary networks (`ganet_tf.layers.auxiliary_network.ENCODERS`).
ENCODERS = CHOICES["ganet_tf.layers.auxiliary_network.ENCODERS"]

# Name -> (type, lower bound, what it is). Lower bound "positive" means > 0,
# "non_negative" >= 0; categorical names have their own list of values.
_PARAMETERS = {
    "lr": (float, "positive", "Adam learning rate"),
    "batch_size": (int, "positive", "training batch size"),
    "tau": (float, "positive", "Gumbel-softmax temperature of the gates"),
    "lam": (float, "non_negative", "weight lambda of the gate L1 penalty"),
    "aux_hidden": (int, "positive", "width of the auxiliary network"),
    "aux": (str, ENCODERS, "encoder of the auxiliary network"),
    "target_density": (
        float,
        "unit_interval",
        "gate density rho a Lagrange multiplier steers to (0: the fixed lam)",
    ),
    "num_layers": (int, "positive", "Transformer encoder blocks"),
    "hidden": (int, "heads_multiple", "width of the Transformer encoder"),
    "dropout": (float, "unit_interval", "dropout rate"),
}

# The grids of the paper (Xue et al., 2020, Section 4) and the defaults of
# the hand-set training of `ganet_tf train` where they lie on these grids.
# The hand-set lambda, 1e-2, does not (ganet_tf normalises the L1 term per
# example and per real length): the default lambda is the grid's largest.
_PAPER_DOMAINS = {
    "lr": {
        "type": "choice",
        "values": [1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2],
        "default": 1e-3,
    },
    "batch_size": {"type": "choice", "values": [8, 16, 32, 64, 128], "default": 32},
    "tau": {"type": "choice", "values": [0.5, 1.0, 1.5, 2.0], "default": 0.5},
    "lam": {
        "type": "choice",
        "values": [4e-6, 5e-6, 1e-5, 4e-5, 5e-5, 1e-4, 1e-3],
        "default": 1e-3,
    },
    "aux_hidden": {
        "type": "int",
        "min_value": 20,
        "max_value": 100,
        "step": 20,
        "default": 20,
    },
    # The paper's four encoders; `conv` (for long inputs) is allowed where a search space names it.
    "aux": {"type": "choice", "values": [encoder for encoder in ENCODERS if encoder != "conv"], "default": "bilstm"},
    # Not in the paper: 0.0 is its fixed-lambda objective; the
    # default is `train`'s (a target density and top_k test gates).
    "target_density": {
        "type": "choice",
        "values": [0.0, 0.1, 0.2, 0.3, 0.5],
        "default": 0.3,
    },
}

# The Transformer models are not the paper's: their encoder's
# defaults are those of `ganet_tf train --model transformer` (`--hidden` 100,
# `--dropout` 0.3, the builders' 2 blocks), and `ganet_transformer`'s lambda
# grid holds `train`'s 1e-2, its default, so that every default is `train`'s.
_TRANSFORMER_DOMAINS = {
    "num_layers": {"type": "choice", "values": [1, 2, 4], "default": 2},
    "hidden": {"type": "choice", "values": [64, 100, 128, 256], "default": 100},
    "dropout": {"type": "choice", "values": [0.0, 0.1, 0.2, 0.3], "default": 0.3},
}
_MODEL_DOMAINS = {
    "transformer": _TRANSFORMER_DOMAINS,
    "ganet_transformer": {
        **_TRANSFORMER_DOMAINS,
        "lam": {"type": "choice", "values": [*_PAPER_DOMAINS["lam"]["values"], 1e-2], "default": 1e-2},
    },
}

_GATES = ("tau", "lam", "aux_hidden", "aux", "target_density")
# The hyperparameters of each model: optimisation for all, gates for GA-Net,
# the encoder for the Transformers.
MODEL_PARAMETERS = {
    "ganet": ("lr", "batch_size", *_GATES),
    "bilstm": ("lr", "batch_size"),
    "local": ("lr", "batch_size"),
    "soft": ("lr", "batch_size"),
    "sparsemax": ("lr", "batch_size"),
    "entmax": ("lr", "batch_size"),
    "transformer": ("lr", "batch_size", "num_layers", "hidden", "dropout"),
    "ganet_transformer": ("lr", "batch_size", "num_layers", "hidden", "dropout", *_GATES),
}


class SearchSpace:
    """The domain of each tuned hyperparameter: fixed, a list, or a range.

    A HyperModel declares every hyperparameter through `declare(hp, name)`,
    which registers the domain on a `keras_tuner.HyperParameters` and
    returns the value of the trial, or the domain's default for an empty
    `HyperParameters()`. The defaults are the paper's grids:

    | name | domain | default |
    |---|---|---|
    | `lr` | 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2 | 1e-3 |
    | `batch_size` | 8, 16, 32, 64, 128 | 32 |
    | `tau` | 0.5, 1.0, 1.5, 2.0 | 0.5 |
    | `lam` | 4e-6, 5e-6, 1e-5, 4e-5, 5e-5, 1e-4, 1e-3 | 1e-3 |
    | `aux_hidden` | 20 .. 100, step 20 | 20 |
    | `aux` | bilstm, lstm, fnn, attention | bilstm |
    | `target_density` | 0 (fixed `lam`), 0.1, 0.2, 0.3, 0.5 | 0.3 |

    GA-Net tunes all seven (`target_density` is not the paper's: with a
    value rho > 0, `lam` only starts the multiplier that steers the gate
    density to rho); the baselines `lr` and `batch_size`. The Transformer
    models (not the paper's) tune `lr`, `batch_size` and their encoder,
    with `ganet_tf train`'s defaults:

    | name | domain | default |
    |---|---|---|
    | `num_layers` | 1, 2, 4 | 2 |
    | `hidden` | 64, 100, 128, 256 (a multiple of the 4 heads) | 100 |
    | `dropout` | 0.0, 0.1, 0.2, 0.3 | 0.3 |

    `ganet_transformer` also tunes GA-Net's five gate options, with `lam`
    on the paper's grid and 1e-2, `train`'s, its default. Each can be
    fixed (`with_fixed`), given other values (`with_choices`) or a range
    (`with_range`); these return a new space. The default stays the
    documented one where the new domain holds it, else it becomes the first
    value (or the range's minimum).

    Args:
        model: the model whose hyperparameters the space holds, one of
            `MODEL_PARAMETERS` (`"ganet"`, `"bilstm"`, `"local"`, `"soft"`,
            `"sparsemax"`, `"entmax"`, `"transformer"`,
            `"ganet_transformer"`).

    Example:

    >>> import keras_tuner
    >>> space = SearchSpace("ganet").with_fixed("aux", "bilstm")
    >>> space = space.with_choices("lam", [1e-3, 1e-2])
    >>> hp = keras_tuner.HyperParameters()
    >>> space.declare(hp, "lam")
    0.001
    """

    def __init__(self, model="ganet"):
        if model not in MODEL_PARAMETERS:
            raise GANetInputError(f"Unknown model {model!r}: choose one of {sorted(MODEL_PARAMETERS)}.")
        self.model = model
        domains = {**_PAPER_DOMAINS, **_MODEL_DOMAINS.get(model, {})}
        self._domains = {name: copy.deepcopy(domains[name]) for name in MODEL_PARAMETERS[model]}

    @property
    def names(self):
        """The hyperparameter names, in declaration order."""
        return list(self._domains)

    def defaults(self):
        """The value of each hyperparameter in an empty `HyperParameters()`."""
        return {name: self._default(domain) for name, domain in self._domains.items()}

    def domain(self, name):
        """A copy of the domain of `name`, a dict with its `type`."""
        return copy.deepcopy(self._domains[self._check_name(name)])

    def cast(self, name, value):
        """`value` (a number or its text) as a valid value of `name`.

        Raises:
            GANetInputError: for a value of the wrong type or out of bounds.
        """
        kind, bound, _ = _PARAMETERS[self._check_name(name)]
        text = value.strip() if isinstance(value, str) else value
        if kind is str:
            if text not in bound:
                raise GANetInputError(f"{name} must be one of {', '.join(bound)}, got {value!r}.")
            return text
        try:
            number = float(text)
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not math.isfinite(number):
            raise GANetInputError(f"{name} must be a number, got {value!r}.")
        if kind is int:
            if not number.is_integer():
                raise GANetInputError(f"{name} must be an integer, got {value!r}.")
            number = int(number)
        if bound == "positive" and not number > 0:
            raise GANetInputError(f"{name} must be positive, got {value!r}.")
        if bound == "non_negative" and not number >= 0:
            raise GANetInputError(f"{name} must be >= 0, got {value!r}.")
        if bound == "unit_interval" and not 0 <= number < 1:
            raise GANetInputError(f"{name} must be in [0, 1), got {value!r}.")
        if bound == "heads_multiple" and not (number > 0 and number % TRANSFORMER_HEADS == 0):
            raise GANetInputError(
                f"{name} must be a positive multiple of {TRANSFORMER_HEADS} (the attention heads), got {value!r}."
            )
        return number

    def with_fixed(self, name, value):
        """A copy of the space where `name` takes only `value`."""
        return self._replaced(name, {"type": "fixed", "value": self.cast(name, value)})

    def with_choices(self, name, values):
        """A copy of the space where `name` is one of `values`."""
        values = [self.cast(name, value) for value in values]
        if not values:
            raise GANetInputError(f"{name} needs at least one value.")
        if len(set(values)) != len(values):
            raise GANetInputError(f"{name} lists a value twice: {values}.")
        default = self._default(self._domains[name])
        return self._replaced(
            name,
            {
                "type": "choice",
                "values": values,
                "default": default if default in values else values[0],
            },
        )

    def with_range(self, name, min_value, max_value, step=None):
        """A copy of the space where `name` ranges over `[min_value, max_value]`.

        Integers go by `step` (default 1); floats have no step and are
        sampled on a log scale when `min_value > 0`.
        """
        kind, bound, _ = _PARAMETERS[self._check_name(name)]
        if kind is str:
            raise GANetInputError(f"{name} is categorical: give it values, not a range.")
        low, high = self.cast(name, min_value), self.cast(name, max_value)
        if low > high:
            raise GANetInputError(f"{name}: the minimum {low} is above the maximum {high}.")
        domain = {"type": kind.__name__, "min_value": low, "max_value": high}
        default = self._default(self._domains[name])
        if kind is int:
            if step is None:  # a width steps by the heads
                step = TRANSFORMER_HEADS if bound == "heads_multiple" else 1
            step = self.cast(name, step)
            on_grid = low <= default <= high and (default - low) % step == 0
            domain.update(step=step, default=default if on_grid else low)
        else:
            if step is not None:
                raise GANetInputError(f"{name} is a float: its range takes no step, got {step!r}.")
            domain.update(
                sampling="log" if low > 0 else "linear",
                default=default if low <= default <= high else low,
            )
        return self._replaced(name, domain)

    def declare(self, hp, name):
        """Registers `name` on `hp` and returns its value for this trial."""
        domain = self._domains[self._check_name(name)]
        kind = domain["type"]
        if kind == "fixed":
            return hp.Fixed(name, domain["value"])
        if kind == "choice":
            return hp.Choice(name, domain["values"], default=domain["default"])
        if kind == "int":
            return hp.Int(
                name,
                domain["min_value"],
                domain["max_value"],
                step=domain["step"],
                default=domain["default"],
            )
        return hp.Float(
            name,
            domain["min_value"],
            domain["max_value"],
            sampling=domain["sampling"],
            default=domain["default"],
        )

    def holds(self, name, value):
        """Whether `value` lies in the domain of `name`."""
        domain = self._domains[self._check_name(name)]
        kind = domain["type"]
        if kind == "fixed":
            return value == domain["value"]
        if kind == "choice":
            return value in domain["values"]
        if isinstance(value, str) or value is None or not domain["min_value"] <= value <= domain["max_value"]:
            return False
        return kind == "float" or (value - domain["min_value"]) % domain["step"] == 0

    def get_config(self):
        """A JSON-ready description: the model and every domain."""
        return {"model": self.model, "domains": copy.deepcopy(self._domains)}

    def _check_name(self, name):
        if name not in self._domains:
            raise GANetInputError(
                f"{name!r} is not a hyperparameter of {self.model}: it has {', '.join(self._domains)}."
            )
        return name

    def _replaced(self, name, domain):
        space = copy.copy(self)
        space._domains = {**self._domains, name: domain}
        return space

    @staticmethod
    def _default(domain):
        return domain["value"] if domain["type"] == "fixed" else domain["default"]
