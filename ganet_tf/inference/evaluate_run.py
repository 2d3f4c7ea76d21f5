"""`python -m ganet_tf evaluate`: a trained run re-measured on a split of its data, without training."""

import dataclasses
import time

from ganet_tf.errors import GANetInputError

SPLITS = ("test", "validation")


def add_evaluate_arguments(parser):
    """The flags of `evaluate`."""
    from ganet_tf.policy.inference_gate_flags import add_test_gate_arguments

    parser.description = (
        "Re-measure a run written by `python -m ganet_tf train --out` on its dataset's test (or validation) split: "
        "the same data flags as its training, read from its metrics.json; prints one JSON line."
    )
    parser.add_argument("--model", required=True, metavar="RUN", help="folder written by `train --out`")
    parser.add_argument("--data-dir", metavar="DIR", help="folder of the local datasets (default: the run's own)")
    parser.add_argument("--split", choices=SPLITS, default="test", help="the split to measure (default: test)")
    parser.add_argument("--batch-size", type=int, default=32, metavar="N", help="texts run at once (default: 32)")
    add_test_gate_arguments(parser)


def _recorded(run_dir, data_dir):
    """`(TrainConfig, metrics)`: the config the run in `run_dir` trained with, `data_dir` given, and its
    `metrics.json`."""
    from ganet_tf.policy.trained_run import read_metrics
    from ganet_tf.training import TrainConfig

    metrics = read_metrics(run_dir)
    if not isinstance(metrics.get("config"), dict):
        raise GANetInputError(
            f"The metrics.json of {run_dir} records no config: evaluate a folder written by "
            "`python -m ganet_tf train --out`."
        )
    known = {field.name for field in dataclasses.fields(TrainConfig)}
    config = TrainConfig(**{key: value for key, value in metrics["config"].items() if key in known})
    return dataclasses.replace(config, data_dir=data_dir or config.data_dir), metrics


def evaluate_run(run_dir, split="test", data_dir=None, batch_size=32, test_gates=None):
    """The accuracy and attended density of the run in `run_dir` on `split` of the data it trained on.

    The data flags (dataset or files, validation fraction, seed, limit) are the run's own, so the validation
    split is the one its training held out; the texts are tokenised by its `preprocessing.json`.

    Returns:
        A JSON-ready dict: `split`, `examples`, `accuracy`, `attended_density`, `density`, `all_closed_rate`,
        `seconds` (tokenising and the model), and `recorded_accuracy`, the figure the run's `metrics.json` holds.
    """
    from ganet_tf.data.vectorizer import vectorize
    from ganet_tf.policy.flag_values import check_number
    from ganet_tf.policy.trained_run import load_run
    from ganet_tf.training.evaluate import evaluate_model
    from ganet_tf.training.prepare import load_splits

    check_number("batch_size", batch_size, at_least=1, integer=True)
    model, vectorizer, class_names = load_run(run_dir, test_gates)
    config, metrics = _recorded(run_dir, data_dir)
    splits = load_splits(config)
    if list(splits.class_names) != list(class_names):
        raise GANetInputError(
            f"{run_dir} names the classes {class_names}, its data now {splits.class_names}: "
            "give the --data-dir it trained on."
        )
    started = time.perf_counter()
    ids = vectorize(vectorizer, getattr(splits, f"{split}_texts"))
    result = evaluate_model(model, ids, getattr(splits, f"{split}_labels"), class_names, batch_size=batch_size)
    return {
        "model": run_dir,
        "split": split,
        "examples": len(ids),
        "accuracy": result["accuracy"],
        "attended_density": result["attended_density"],
        "density": result["density"],
        "all_closed_rate": result["all_closed_rate"],
        "seconds": round(time.perf_counter() - started, 2),
        "recorded_accuracy": metrics.get(f"{split}_accuracy"),
    }


def evaluate_command(args):
    """`python -m ganet_tf evaluate`: the JSON summary of `evaluate_run`."""
    from ganet_tf.policy.inference_gate_flags import inference_rule_of

    return evaluate_run(args.model, args.split, args.data_dir, args.batch_size, inference_rule_of(args))
