"""Adaptive test gates on the synthetic selection family (issue 39).

    python experiments/adaptive_gates.py [--tasks share05 share20 share50] [--seeds 0]
        [--complement-weight MU] [--complement inputs] [--target-density RHO] [--lam LAMBDA]
        [--aux ENCODER] [--straight-through]

GA-Net is trained ONCE per task and seed with the defaults of `train`
(target density 0.3; the tasks and flags of `experiments/selection_family.py`),
then the same trained model is scored under each test-gate rule of
`GateSampler`: `top_k` at rho 0.3 (the default), `relative` (open t where
p_t >= r max_s p_s) and `nucleus` (the fewest tokens whose normalised p_t
mass reaches pi). The gate probabilities do not depend on the rule, so one
model serves every rule (`ganet_tf.models.with_gate_inference`).

The rule's parameter is chosen on a validation set of each task (texts of
the same generator, another seed, never seen in training): ONE value for the
whole family, the one with the highest smallest F1 (of keywords against
attended tokens) over the tasks, so the rule adapts rather than being tuned
per task. Test scores of the chosen parameters, through the whole model
(attended tokens: attention weight > 0, as `selection_family.py` scores
them), go to `results/adaptive_gates/selection.json` and tables.md; the
trained runs' summaries to `results/adaptive_gates/runs/`, their models to
the git-ignored `runs/adaptive_gates/`. Finished runs are not trained again.

`--complement-weight MU` trains with `train --complement-weight` (the
classifier, held fixed, must find no label in the tokens whose gates are
closed; `--complement inputs`: the closed tokens' embeddings re-encoded by
the encoder, attention and classifier held fixed), `--target-density` and
`--lam` set the sparsity side (`--straight-through`: hard training gates) (0: the
paper's fixed penalty --lam); their results go to files named after them
(e.g. `tables_cw1_td0.md`). `threshold` test gates (p_t > 0.5, no
parameter) are scored beside the others.
"""

import argparse
import json
import os
import sys

import numpy as np

from ganet_tf.cli import COMPLEMENT_CHOICES
from ganet_tf.layers.gate_sampler import MODE_PARAMETERS

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import selection_family  # noqa: I001 - beside runner, in experiments/
from runner import REPO
from runner import machine
from runner import portable
from runner import run_or_skip

RESULTS = os.path.join("results", "adaptive_gates")
RUNS = os.path.join("runs", "adaptive_gates")
# Validation texts per task, drawn with seed VALIDATION_SEED + task index.
VALIDATION_TEXTS, VALIDATION_SEED = 400, 300
# Candidate parameters of each rule, scored on validation.
GRIDS = {
    "relative": [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.97, 0.98, 0.99],
    "nucleus": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95],
}
TOP_K_DENSITY = 0.3
# The learning rate of the runs. With the family's 1e-3 (`train`'s default)
# and 8 epochs the gate probabilities hardly single out the keywords
# (validation AUC of p_t 0.64-0.68 on every task: `--lr 0.001` rescores
# those runs), so no test rule could select them; with 1e-2, the rate of
# tests/models/test_gate_selection.py, they do.
LEARNING_RATE = 0.01


# Each variant flag's tag in run and results names (`_td0.5`, `_st`), and
# the two orders it is written in: run folders put the density first,
# results files the complement (existing names depend on both orders).
VARIANT_TAGS = {
    "target_density": "td",
    "complement_weight": "cw",
    "complement": "c",
    "complement_target": "ct",
    "lam": "lam",
    "aux": "aux",
    "straight_through": "st",
}
RUN_NAME_ORDER = (
    "target_density",
    "complement_weight",
    "complement",
    "complement_target",
    "lam",
    "aux",
    "straight_through",
)
RESULTS_ORDER = (
    "complement_weight",
    "complement",
    "complement_target",
    "target_density",
    "lam",
    "aux",
    "straight_through",
)


def _text(value):
    return f"{value:g}" if isinstance(value, float) else str(value)


def _given(values, order):
    """`(key, value)` of the variant flags given in `values` (None or False:
    not given), in `order`."""
    return [(key, values[key]) for key in order if values[key] is not None and values[key] is not False]


def variant_suffix(values, order):
    """The name suffix of the variant flags given in `values`, in `order`:
    `_td0.5_cw1_cadversarial`."""
    return "".join(
        f"_{VARIANT_TAGS[key]}" + ("" if value is True else _text(value)) for key, value in _given(values, order)
    )


def _flags(values, order):
    """`train`'s flags of the variant flags given in `values`, in `order`:
    `["--target-density", "0.5", "--straight-through"]`."""
    flags = []
    for key, value in _given(values, order):
        flags += ["--" + key.replace("_", "-")] + ([] if value is True else [_text(value)])
    return flags


def train_task(task, seed, epochs, learning_rate, **variants):
    """Trains (or finds) GA-Net with the defaults of `train` but the
    learning rate (and the variant flags of `VARIANT_TAGS` given in
    `variants`, e.g. `target_density=0.05`) on `task`; returns its run
    folder."""
    unknown = set(variants) - set(VARIANT_TAGS)
    if unknown:
        raise TypeError(f"train_task() got unknown variant flags {sorted(unknown)}")
    train_file, test_file = selection_family.write_task_files(task, None, RUNS)
    name = f"{task}_ganet_seed{seed}" + ("" if learning_rate == 0.001 else f"_lr{learning_rate:g}")
    name += "" if epochs == selection_family.EPOCHS else f"_ep{epochs}"
    flags = ["--train-file", train_file, "--test-file", test_file, "--seed", str(seed), "--epochs", str(epochs)]
    flags += [*selection_family.COMMON, "--lr", f"{learning_rate:g}"]
    values = {key: variants.get(key) for key in VARIANT_TAGS}
    name += variant_suffix(values, RUN_NAME_ORDER)
    flags += _flags(values, RUN_NAME_ORDER)
    extra = {"task": task, "keyword_share": selection_family.TASKS[task]}
    run_or_skip(name, flags, os.path.join(REPO, RESULTS, "runs"), out_root=RUNS, extra=extra)
    return os.path.join(REPO, RUNS, name)


def validation_data(task):
    from ganet_tf.data.synthetic_selection import selection_task

    seed = VALIDATION_SEED + list(selection_family.TASKS).index(task)
    return selection_task(
        VALIDATION_TEXTS, selection_family.TASKS[task], seed=seed, max_length=selection_family.MAX_LENGTH
    )


def _f1(scores):
    precision, recall = scores["precision"] or 0.0, scores["recall"] or 0.0
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def _summary(scores, all_closed):
    """The overall scores of `selection_scores`, F1, all-closed rate and
    the gap of attended density to the true share."""
    overall = dict(scores["all"])
    overall.update(
        f1=_f1(overall),
        all_closed_rate=all_closed,
        density_gap=overall["attended_density"] - overall["true_share"],
    )
    return overall


def gate_rule(mode, value):
    """`(mode, {parameter: value})` of a rule of `GateSampler`."""
    if mode == "threshold":
        return mode, {}
    return mode, {MODE_PARAMETERS[mode]: value}


def gate_logits(run_dir, texts):
    """The trained run's gate logits `(texts, steps)` (its auxiliary
    network's output) and the real-token mask of `texts`."""
    import keras

    from ganet_tf.data.vectorizer import vectorize
    from ganet_tf.training.trained_run import load_run

    model, vectorizer, _ = load_run(run_dir)
    ids = vectorize(vectorizer, texts)
    logits = keras.Model(model.inputs, model.get_layer("auxiliary").output).predict(ids, verbose=0)
    return logits, ids != 0


def validation_scores(run_dir, task):
    """Selection scores of the open gates on `task`'s validation texts for
    every rule and parameter of the grids (and top_k at rho 0.3): the gate
    logits come from the trained auxiliary network once, and the real
    `GateSampler` of each rule turns them into gates."""
    from sklearn.metrics import roc_auc_score

    from ganet_tf.layers import GateSampler
    from ganet_tf.metrics import selection_scores

    texts, _, keyword_masks = validation_data(task)
    logits, real = gate_logits(run_dir, texts)
    keywords = keyword_masks[:, : logits.shape[1]]
    result = {"gate_probability_auc": float(roc_auc_score(keywords[real], logits[real]))}
    candidates = [("top_k", TOP_K_DENSITY), ("threshold", 0.5)]
    candidates += [(mode, value) for mode, grid in GRIDS.items() for value in grid]
    for mode, value in candidates:
        rule, parameters = gate_rule(mode, value)
        gates = GateSampler(inference_mode=rule, **parameters)(logits, mask=real).numpy() > 0.5
        closed = float(np.mean(~gates.any(axis=1)[real.any(axis=1)]))
        result[f"{mode}:{value}"] = _summary(selection_scores(gates, keywords, real), closed)
    return result


def choose(validation, tasks):
    """For each rule, the parameter of its grid with the highest smallest
    validation F1 over `tasks`, and that F1."""
    chosen = {}
    for mode, grid in GRIDS.items():
        worst = {value: min(validation[task][f"{mode}:{value}"]["f1"] for task in tasks) for value in grid}
        best = max(grid, key=lambda value: (worst[value], -abs(value - 0.5)))
        chosen[mode] = {"value": best, "smallest_validation_f1": worst[best]}
    return chosen


def test_scores(run_dir, task, rules):
    """Accuracy and selection scores on the test texts of the trained model
    under each rule `(name, mode, value)`, through the whole model: the
    attended tokens (attention weight > 0) and the open gates."""
    from ganet_tf.data.vectorizer import vectorize
    from ganet_tf.metrics import selection_scores
    from ganet_tf.models import build_explainer
    from ganet_tf.models import with_gate_inference
    from ganet_tf.training.trained_run import load_run

    model, vectorizer, class_names = load_run(run_dir)
    texts, labels, keyword_masks = selection_family.task_data(task, "test", None)
    ids = vectorize(vectorizer, texts)
    real = ids != 0
    keywords = keyword_masks[:, : ids.shape[1]]
    # The run's classes are the CSV labels "c0", "c1", ...
    targets = np.array([class_names.index(f"c{label}") for label in labels])
    result = {}
    for name, mode, value in rules:
        rule, parameters = gate_rule(mode, value)
        outputs = build_explainer(with_gate_inference(model, rule, **parameters)).predict(ids, verbose=0)
        gates = outputs["gates"] > 0.5
        closed = float(np.mean(~(gates & real).any(axis=1)[real.any(axis=1)]))
        result[name] = {
            "rule": {"inference_mode": rule, **parameters},
            "accuracy": float(np.mean(np.argmax(outputs["probabilities"], axis=1) == targets)),
            "attended": _summary(selection_scores(outputs["attention"] > 0, keywords, real), closed),
            "attended_by_length": selection_scores(outputs["attention"] > 0, keywords, real)["by_length"],
        }
    return result


def _cell(scores):
    return (
        f"{scores['precision']:.3f} | {scores['recall']:.3f} | {scores['attended_density']:.3f} "
        f"({scores['true_share']:.3f}) | {scores['all_closed_rate']:.3f}"
    )


def readme(report, tasks):
    lines = [
        "# Adaptive test gates on the synthetic selection family (issue 39)",
        "",
        f"Written by `{report['command']}` on {report['machine']} (shared with other jobs).",
        "",
        "GA-Net trained once per task with the defaults of `train` (target density 0.3, `top_k` test gates)"
        + _changed_flags(report)
        + ", "
        f"`{' '.join(selection_family.COMMON)} --lr {report['learning_rate']:g}`, at most {report['epochs']} epochs",
        f"({selection_family.TRAIN_TEXTS} training texts, 10 % of them for early stopping; the tasks of",
        "`experiments/selection_family.py`). The same trained model is then scored under each rule of",
        "`GateSampler` (`ganet_tf.models.with_gate_inference`). Each rule's parameter is ONE value for the",
        f"family, chosen on {VALIDATION_TEXTS} validation texts per task (another seed of the generator) as",
        "the grid value with the highest smallest F1 over the tasks; test: "
        f"{selection_family.TEST_TEXTS} test texts per task, through the whole model.",
        "",
    ]
    for seed, result in report["seeds"].items():
        chosen = ", ".join(
            f"`{mode}` {MODE_PARAMETERS[mode]} = {c['value']:g}"
            f" (smallest validation F1 {c['smallest_validation_f1']:.3f})"
            for mode, c in result["chosen"].items()
        )
        lines += [f"## Seed {seed}", "", f"Chosen on validation: {chosen}.", ""]
        aucs = ", ".join(f"{task} {result['validation'][task]['gate_probability_auc']:.3f}" for task in tasks)
        lines += [f"AUC of p_t for keywords against filler (validation): {aucs}.", ""]
        lines += [
            "Test: attended tokens (attention weight > 0) against the keywords; attended density is the mean",
            "over texts (true share in brackets); all-closed: texts whose gates are all closed.",
            "",
            "| task | rule | accuracy | precision | recall | attended density (true share) | all-closed |",
            "|---|---|---|---|---|---|---|",
        ]
        for task in tasks:
            for name, scores in result["test"][task].items():
                rule = scores["rule"]
                value = rule.get(MODE_PARAMETERS.get(rule["inference_mode"]), 0.5)
                lines.append(f"| {task} | {name} {value:g} | {scores['accuracy']:.3f} | {_cell(scores['attended'])} |")
        lines += ["", "By text length (test, attended tokens): precision / recall / density (true share).", ""]
        for task in tasks:
            buckets = list(next(iter(result["test"][task].values()))["attended_by_length"])
            lines += [f"### {task}", "", "| rule | " + " | ".join(buckets) + " |", "|---|" + "---|" * len(buckets)]
            for name, scores in result["test"][task].items():
                cells = []
                for bucket in buckets:
                    b = scores["attended_by_length"][bucket]
                    cells.append(
                        f"{_number(b['precision'])} / {_number(b['recall'])} / "
                        f"{b['attended_density']:.2f} ({b['true_share']:.2f})"
                    )
                lines.append(f"| {name} | " + " | ".join(cells) + " |")
            lines.append("")
        lines += ["Validation grid (precision / recall / density - true share, smallest F1 over tasks):", ""]
        lines += ["| rule | " + " | ".join(tasks) + " | smallest F1 |", "|---|" + "---|" * (len(tasks) + 1)]
        keys = [key for key in result["validation"][tasks[0]] if key != "gate_probability_auc"]
        for key in keys:
            cells = []
            for task in tasks:
                v = result["validation"][task][key]
                cells.append(f"{_number(v['precision'])} / {_number(v['recall'])} / {v['density_gap']:+.3f}")
            worst = min(result["validation"][task][key]["f1"] for task in tasks)
            lines.append(f"| {key} | " + " | ".join(cells) + f" | {worst:.3f} |")
        lines.append("")
    return lines


def _changed_flags(report):
    """`" but `--flag value ...`"` for the flags the runs changed, or ""."""
    flags = _flags({key: report.get(key) for key in VARIANT_TAGS}, RESULTS_ORDER)
    return f" but `{' '.join(flags)}`" if flags else ""


def _number(value):
    return "-" if value is None else f"{value:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tasks", nargs="+", choices=list(selection_family.TASKS), default=list(selection_family.TASKS)
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--epochs", type=int, default=selection_family.EPOCHS)
    parser.add_argument("--lr", type=float, default=LEARNING_RATE)
    parser.add_argument("--target-density", type=float, help="train's --target-density (default: train's, 0.3)")
    parser.add_argument("--complement-weight", type=float, help="train's --complement-weight (default: train's, 0)")
    parser.add_argument(
        "--complement",
        choices=COMPLEMENT_CHOICES,
        help="train's --complement (default: states)",
    )
    parser.add_argument(
        "--complement-target", type=float, help="train's --complement-target (default: none, the weight fixed)"
    )
    parser.add_argument("--lam", type=float, help="train's --lam (default: train's)")
    parser.add_argument("--aux", help="train's --aux (default: train's, bilstm)")
    parser.add_argument("--straight-through", action="store_true", help="train's --straight-through")
    parser.add_argument("--train-only", action="store_true")
    args = parser.parse_args()
    variants = {key: getattr(args, key) for key in VARIANT_TAGS}
    runs = {}  # every run trains before any is scored
    for seed in args.seeds:
        for task in args.tasks:
            runs[task, seed] = train_task(task, seed, args.epochs, args.lr, **variants)
    if args.train_only:
        return
    command = " ".join(["python experiments/adaptive_gates.py", *sys.argv[1:]])
    report = {"machine": machine(), "command": command, "learning_rate": args.lr, "epochs": args.epochs}
    report.update(variants)
    report["seeds"] = {}
    for seed in args.seeds:
        validation = {task: validation_scores(runs[task, seed], task) for task in args.tasks}
        chosen = choose(validation, args.tasks)
        rules = [("top_k", "top_k", TOP_K_DENSITY), ("threshold", "threshold", 0.5)]
        rules += [(m, m, c["value"]) for m, c in chosen.items()]
        test = {task: test_scores(runs[task, seed], task, rules) for task in args.tasks}
        report["seeds"][str(seed)] = {"chosen": chosen, "validation": validation, "test": test}
        print(json.dumps({"seed": seed, "chosen": chosen}), flush=True)
    suffix = "" if args.lr == LEARNING_RATE else f"_lr{args.lr:g}"
    suffix += "" if args.epochs == selection_family.EPOCHS else f"_ep{args.epochs}"
    suffix += variant_suffix(vars(args), RESULTS_ORDER)
    if args.complement_weight is not None and set(args.tasks) != set(selection_family.TASKS):
        suffix += "_" + "_".join(args.tasks)
    with open(os.path.join(REPO, RESULTS, f"selection{suffix}.json"), "w") as handle:
        json.dump(portable(report), handle, indent=1)
    with open(os.path.join(REPO, RESULTS, f"tables{suffix}.md"), "w") as handle:
        handle.write("\n".join(readme(report, args.tasks)) + "\n")


if __name__ == "__main__":
    main()
