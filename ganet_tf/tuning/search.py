"""`python -m ganet_tf tune`: KerasTuner search for GA-Net and its baselines.

    python -m ganet_tf tune --dataset trec --tuner bayesian --max-trials 20

prints the search space, runs the trials (resuming the project if it
exists), prints `tuner.results_summary()`, retrains the best configuration
on train + validation, tests and saves it; the last stdout line is a JSON
object. See ganet_tf/tuning/README.md. `python -m ganet_tf.tuning.search`
is the same command (`main`); `ganet_tf.cli` registers `tune` with
`add_arguments` and `run`. Adding the flags imports neither Keras,
TensorFlow nor KerasTuner (`--help` answers at once).
"""

import argparse
import json
import re
import sys

from ganet_tf.command_flags import BUCKETS_HELP
from ganet_tf.command_flags import DATA_DIR_HELP
from ganet_tf.command_flags import LIMIT_HELP
from ganet_tf.command_flags import OneLineParser
from ganet_tf.command_flags import add_flag
from ganet_tf.command_flags import add_glove_arguments
from ganet_tf.errors import GANetInputError

PROG = "ganet_tf.tuning.search"


def _assignment(text):
    name, separator, value = text.partition("=")
    if not separator or not name.strip() or not value.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), value.strip()


def _value_list(text):
    return [value for value in text.split(",") if value.strip()]


# Options whose value may start with a minus sign (a list of numbers).
_NUMBER_LIST_OPTIONS = ("--penalty-values", "--lam-values")


def _join_negative_values(argv):
    """`--penalty-values -1,0.01` -> `--penalty-values=-1,0.01`.

    argparse takes a value such as `-1,0.01` for an option and reports
    "expected one argument"; joined, the value reaches the validation that
    says what is wrong with it (lambda must be >= 0).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    joined = []
    while argv:
        token = argv.pop(0)
        if token in _NUMBER_LIST_OPTIONS and argv and re.match(r"-[\d.]", argv[0]):
            token = f"{token}={argv.pop(0)}"
        joined.append(token)
    return joined


DESCRIPTION = (
    "KerasTuner search for GA-Net and its baselines; the last stdout "
    "line is a JSON summary of the best configuration, retrained and "
    "tested."
)


def build_parser():
    parser = OneLineParser(prog=f"python -m {PROG}", description=DESCRIPTION)
    add_arguments(parser)
    return parser


def add_arguments(parser):
    """Adds the flags of the search to `parser` (`python -m ganet_tf tune`'s)."""
    from ganet_tf.tuning.search_config import SearchConfig

    defaults = SearchConfig()
    _add_search_arguments(parser, defaults)
    _add_space_arguments(parser)
    _add_data_and_output_arguments(parser, defaults)


def _add_search_arguments(parser, defaults):
    from ganet_tf.data import DATASETS
    from ganet_tf.tuning.search_config import OBJECTIVES
    from ganet_tf.tuning.search_config import TUNERS
    from ganet_tf.tuning.search_space import MODEL_PARAMETERS

    search = parser.add_argument_group("search")
    add_flag(search, "--dataset", defaults, choices=sorted(DATASETS))
    search.add_argument("--data-dir", help=DATA_DIR_HELP)
    add_flag(search, "--model", defaults, choices=sorted(MODEL_PARAMETERS))
    add_flag(search, "--tuner", defaults, choices=TUNERS)
    max_trials_help = "trials in the project in all; a resumed search runs the missing ones"
    add_flag(search, "--max-trials", defaults, int, help=max_trials_help)
    objective_help = "tradeoff = val_accuracy - density weight * val_density (GA-Net)"
    add_flag(search, "--objective", defaults, choices=list(OBJECTIVES), help=objective_help)
    add_flag(search, "--density-weight", defaults, float, help="weight of the density in --objective tradeoff")
    add_flag(search, "--epochs", defaults, int, help="most epochs of a trial (Hyperband: its max epochs)")
    add_flag(search, "--patience", defaults, int, help="early stopping patience on the objective, in epochs")
    _add_trial_arguments(search, defaults)


def _add_trial_arguments(search, defaults):
    folds_help = "1: score on the validation split; K >= 2: K-fold cross-validation of train+validation"
    add_flag(search, "--folds", defaults, int, help=folds_help)
    add_flag(search, "--executions-per-trial", defaults, int)
    initial_points_help = (
        "random trials before Bayesian optimisation (default: KerasTuner's, 3 per tuned hyperparameter)"
    )
    search.add_argument("--initial-points", type=int, help=initial_points_help)
    hand_set_first_help = (
        "the first trial runs `ganet_tf train`'s defaults (lr 1e-3, batch 32, tau 0.5, "
        "lam 1e-2, aux bilstm 20) where the space holds them (random, bayesian)"
    )
    search.add_argument("--hand-set-first", action="store_true", help=hand_set_first_help)
    add_flag(search, "--hyperband-factor", defaults, int)
    add_flag(search, "--seed", defaults, int)
    final_seeds_help = (
        "retrain the best configuration once per seed and report the mean test accuracy "
        "(default: --seed only); changing it keeps a finished search"
    )
    search.add_argument("--final-seeds", type=int, nargs="+", help=final_seeds_help)


def _add_space_arguments(parser):
    space = parser.add_argument_group("search space (names: lr, batch_size, tau, lam, aux_hidden, aux, target_density)")
    _add_domain_flag(space, "--fix", "NAME=VALUE", "fix a hyperparameter, e.g. --fix lr=1e-3 --fix aux=bilstm")
    _add_domain_flag(
        space, "--values", "NAME=V1,V2,...", "replace the values of a hyperparameter, e.g. --values tau=0.5,1"
    )
    range_help = "a range instead, e.g. --range aux_hidden=10:50:10 (floats: log scale, no step)"
    _add_domain_flag(space, "--range", "NAME=MIN:MAX[:STEP]", range_help)
    penalty_values_help = "the values of the gate penalty lambda, as --values lam=...; e.g. 1e-4,1e-3,1e-2"
    add_flag(
        space,
        "--penalty-values",
        argparse.Namespace(penalty_values=None),
        _value_list,
        deprecated=("--lam-values",),
        metavar="V1,V2,...",
        help=penalty_values_help,
    )


def _add_domain_flag(space, flag, metavar, help_text):
    """A repeatable `NAME=...` option that sets one hyperparameter's domain."""
    space.add_argument(flag, type=_assignment, action="append", default=[], metavar=metavar, help=help_text)


def _add_data_and_output_arguments(parser, defaults):
    model = parser.add_argument_group("model and data (not tuned)")
    add_flag(model, "--hidden", defaults, int, help="BiLSTM units each way")
    add_flag(model, "--dropout", defaults, float)
    add_glove_arguments(model, defaults)
    add_flag(model, "--buckets", defaults, int, help=BUCKETS_HELP)
    model.add_argument("--limit", type=int, help=LIMIT_HELP)
    run_eagerly_help = "no tf.function tracing: quicker for smoke runs of a few batches, far slower for real ones"
    model.add_argument("--run-eagerly", action="store_true", help=run_eagerly_help)
    output = parser.add_argument_group("output")
    add_flag(output, "--directory", defaults, help="folder of the tuning projects")
    output.add_argument("--project-name", help="default: DATASET_MODEL_TUNER")
    output.add_argument("--overwrite", action="store_true", help="start the project afresh instead of resuming it")
    output.add_argument("--out", help="folder for the retrained best model (default: PROJECT/best_model)")
    verbose_help = "0 quiet; 1, 2: summaries and Keras fit verbosity"
    add_flag(output, "--verbose", defaults, int, choices=(0, 1, 2), help=verbose_help)


def config_from(args):
    """The `SearchConfig` of parsed arguments."""
    from ganet_tf.tuning.search_config import SearchConfig

    choices = {name: _value_list(values) for name, values in args.values}
    if args.penalty_values is not None:
        if "lam" in choices:
            raise GANetInputError("give --penalty-values or --values lam=..., not both.")
        choices["lam"] = args.penalty_values
    ranges = {}
    for name, text in args.range:
        bounds = text.split(":")
        if len(bounds) not in (2, 3) or not all(bounds):
            raise GANetInputError(f"--range {name}={text}: expected MIN:MAX or MIN:MAX:STEP.")
        ranges[name] = (bounds[0], bounds[1], bounds[2] if len(bounds) == 3 else None)
    names = [name for name, _ in args.fix + args.values] + list(ranges)
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise GANetInputError(
            f"{', '.join(repeated)}: give each hyperparameter one domain (a fixed value, values, or a range)."
        )
    fields = set(SearchConfig.__dataclass_fields__)
    arguments = {k: v for k, v in vars(args).items() if k in fields}
    arguments.update(fixed=dict(args.fix), choices=choices, ranges=ranges)
    return SearchConfig(**arguments)


def run(args):
    """Runs the search of the parsed `args`; returns its JSON-ready summary.

    Raises:
        GANetInputError: bad input, or a search whose trials all failed.
    """
    from ganet_tf.tuning.tune import search_and_evaluate

    result = search_and_evaluate(config_from(args))
    result.pop("report", None)
    return result


def main(argv=None):
    args = build_parser().parse_args(_join_negative_values(argv))
    try:
        result = run(args)
    except GANetInputError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
