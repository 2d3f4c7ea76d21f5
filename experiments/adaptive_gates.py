"""Adaptive test gates on the synthetic selection family (issue 39): GA-Net trained once per task and seed, scored
under `top_k` 0.3, `threshold`, and `relative` and `nucleus` at the grid value of highest smallest validation F1 over
the tasks. Writes `results/adaptive_gates/runs/`, `selection{SUFFIX}.json` and `tables{SUFFIX}.md` (SUFFIX: the flags
changed). `python -m experiments run adaptive_gates -- [--tasks T ...] [--seeds S ...] [--epochs N] [--lr LR] [FLAG]`,
FLAG one of `VARIANTS`' `train` flags (`--complement-weight 1 --complement adversarial`, `--straight-through`, ...).
"""

import argparse
import csv
import json
import os
import sys

import keras
import numpy as np
from sklearn.metrics import roc_auc_score

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run as a script
from experiments.runner import REPO
from experiments.runner import machine
from experiments.runner import run_or_skip
from experiments.runner import write_json
from experiments.tables import grid
from experiments.tables import number
from experiments.tables import write_text
from ganet_tf.cli import COMPLEMENT_CHOICES
from ganet_tf.data.synthetic_selection import selection_task
from ganet_tf.data.vectorizer import vectorize
from ganet_tf.layers import GateSampler
from ganet_tf.layers.gate_sampler import MODE_PARAMETERS
from ganet_tf.metrics import selection_scores
from ganet_tf.models import build_explainer
from ganet_tf.models import with_gate_inference
from ganet_tf.training.trained_run import load_run

RESULTS = os.path.join("results", "adaptive_gates")
RUNS = os.path.join("runs", "adaptive_gates")
TASKS = {"share05": 0.05, "share20": 0.2, "share50": 0.5}  # the mean share of keywords
COMMON = ["--hidden", "32", "--patience", "3", "--sequence-length", "400"]
EPOCHS = 8
TEXTS = {"train": 1000, "test": 400, "validation": 400}
DATA_SEEDS = {"train": 100, "test": 200, "validation": 300}  # plus the task's index
LEARNING_RATE = 0.01  # with train's 1e-3 the gates hardly single out the keywords (tables_lr0.001.md)
GRIDS = {
    "relative": [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.97, 0.98, 0.99],
    "nucleus": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95],
}
FIXED_RULES = [("top_k", 0.3), ("threshold", 0.5)]
# `train`'s variant flags: their tag in results file names (in this order; run names: target density first) and
# their argparse options.
VARIANTS = {
    "complement_weight": ("cw", {"type": float}),
    "complement": ("c", {"choices": COMPLEMENT_CHOICES}),
    "complement_target": ("ct", {"type": float}),
    "target_density": ("td", {"type": float}),
    "lam": ("lam", {"type": float}),
    "aux": ("aux", {}),
    "straight_through": ("st", {"action": "store_true"}),
}
RUN_ORDER = ("target_density", *(key for key in VARIANTS if key != "target_density"))


def variant(values, order=tuple(VARIANTS)):
    """(name suffix, `train` flags) of the variant flags given in `values` (None, False: not given)."""
    suffix, flags = "", []
    for key in [key for key in order if values.get(key) is not None and values.get(key) is not False]:
        text = "" if values[key] is True else f"{values[key]:g}" if isinstance(values[key], float) else values[key]
        suffix += f"_{VARIANTS[key][0]}{text}"
        flags += ["--" + key.replace("_", "-"), *([text] if text else [])]
    return suffix, flags


def task_data(task, split):
    """(texts, labels, keyword masks) of `split` of `task`, always the same."""
    seed = DATA_SEEDS[split] + list(TASKS).index(task)
    return selection_task(TEXTS[split], TASKS[task], seed=seed, max_length=400)


def write_task_files(task):
    """Writes `task`'s train and test CSV files (when they differ); returns their paths in the repository."""
    paths = [os.path.join(RUNS, "data", task, f"{split}.csv") for split in ("train", "test")]
    for split, path in zip(("train", "test"), paths, strict=True):
        texts, labels, _ = task_data(task, split)
        rows = [["text", "label"], *([text, f"c{label}"] for text, label in zip(texts, labels, strict=True))]
        absolute = os.path.join(REPO, path)
        os.makedirs(os.path.dirname(absolute), exist_ok=True)
        if os.path.exists(absolute):
            with open(absolute, newline="", encoding="utf-8") as handle:
                if list(csv.reader(handle)) == rows:
                    continue
        with open(absolute + ".tmp", "w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows(rows)
        os.replace(absolute + ".tmp", absolute)
    return paths


def train_task(task, seed, args, variants):
    """Trains (or finds) GA-Net on `task` with `train`'s defaults but these; returns its run folder."""
    train_file, test_file = write_task_files(task)
    suffix, variant_flags = variant(variants, RUN_ORDER)
    name = f"{task}_ganet_seed{seed}" + ("" if args.lr == 0.001 else f"_lr{args.lr:g}")
    name += ("" if args.epochs == EPOCHS else f"_ep{args.epochs}") + suffix
    flags = ["--train-file", train_file, "--test-file", test_file, "--seed", str(seed), "--epochs", str(args.epochs)]
    flags += [*COMMON, "--lr", f"{args.lr:g}", *variant_flags]
    extra = {"task": task, "keyword_share": TASKS[task]}
    run_or_skip(name, flags, os.path.join(REPO, RESULTS, "runs"), out_root=RUNS, extra=extra)
    return os.path.join(REPO, RUNS, name)


def summary(scores, all_closed):
    """The overall scores of `selection_scores`, with F1, all-closed rate and density - true share."""
    overall = dict(scores["all"])
    precision, recall = overall["precision"] or 0.0, overall["recall"] or 0.0
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    gap = overall["attended_density"] - overall["true_share"]
    return {**overall, "f1": f1, "all_closed_rate": all_closed, "density_gap": gap}


def parameters(mode, value):
    """`{parameter: value}` of the rule `mode` of `GateSampler`."""
    return {} if mode == "threshold" else {MODE_PARAMETERS[mode]: value}


def split_of(run_dir, task, split):
    """The trained model, its class names and `task`'s `split`: ids, labels, real tokens, keywords."""
    model, vectorizer, class_names = load_run(run_dir)
    texts, labels, keyword_masks = task_data(task, split)
    ids = vectorize(vectorizer, texts)
    return model, class_names, ids, labels, ids != 0, keyword_masks[:, : ids.shape[1]]


def validation_scores(run_dir, task):
    """Selection scores of the open gates (`GateSampler` on the auxiliary network's trained gate logits) on `task`'s
    validation texts under the fixed rules and every grid value, with the AUC of the logits for the keywords."""
    model, _, ids, _, real, keywords = split_of(run_dir, task, "validation")
    logits = keras.Model(model.inputs, model.get_layer("auxiliary").output).predict(ids, verbose=0)
    result = {"gate_probability_auc": float(roc_auc_score(keywords[real], logits[real]))}
    for mode, value in FIXED_RULES + [(mode, value) for mode, values in GRIDS.items() for value in values]:
        gates = GateSampler(inference_mode=mode, **parameters(mode, value))(logits, mask=real).numpy() > 0.5
        closed = float(np.mean(~gates.any(axis=1)[real.any(axis=1)]))
        result[f"{mode}:{value}"] = summary(selection_scores(gates, keywords, real), closed)
    return result


def choose(validation, tasks):
    """Per rule, the grid value of highest smallest validation F1 over `tasks`, and that F1."""
    chosen = {}
    for mode, values in GRIDS.items():
        worst = {value: min(validation[task][f"{mode}:{value}"]["f1"] for task in tasks) for value in values}
        best = max(values, key=lambda value: (worst[value], -abs(value - 0.5)))
        chosen[mode] = {"value": best, "smallest_validation_f1": worst[best]}
    return chosen


def test_scores(run_dir, task, rules):
    """Accuracy and selection scores of the attended tokens (weight > 0) on `task`'s test texts, through the whole
    model, under each rule `(mode, value)`."""
    model, class_names, ids, labels, real, keywords = split_of(run_dir, task, "test")
    targets = np.array([class_names.index(f"c{label}") for label in labels])  # the CSV labels
    result = {}
    for mode, value in rules:
        outputs = build_explainer(with_gate_inference(model, mode, **parameters(mode, value))).predict(ids, verbose=0)
        closed = float(np.mean(~((outputs["gates"] > 0.5) & real).any(axis=1)[real.any(axis=1)]))
        scores = selection_scores(outputs["attention"] > 0, keywords, real)
        result[mode] = {
            "rule": {"inference_mode": mode, **parameters(mode, value)},
            "accuracy": float(np.mean(np.argmax(outputs["probabilities"], axis=1) == targets)),
            "attended": summary(scores, closed),
            "attended_by_length": scores["by_length"],
        }
    return result


def _precision_recall(s):
    return f"{number(s['precision'])} / {number(s['recall'])}"


def _length_cell(b):
    return f"{_precision_recall(b)} / {b['attended_density']:.2f} ({b['true_share']:.2f})"


def seed_lines(seed, result, tasks):
    """The tables of one seed: choice, test scores, test scores by length, validation grid."""
    chosen = ", ".join(
        f"`{mode}` {MODE_PARAMETERS[mode]} = {c['value']:g} (smallest validation F1 {c['smallest_validation_f1']:.3f})"
        for mode, c in result["chosen"].items()
    )
    aucs = ", ".join(f"{task} {result['validation'][task]['gate_probability_auc']:.3f}" for task in tasks)
    lines = [f"## Seed {seed}", "", f"Chosen on validation: {chosen}.", ""]
    lines += [f"AUC of p_t for keywords against filler (validation): {aucs}.", ""]
    lines += [
        "Test: attended tokens (attention weight > 0) against the keywords; attended density is the mean",
        "over texts (true share in brackets); all-closed: texts whose gates are all closed.",
        "",
    ]
    rows = []
    for task in tasks:
        for name, scores in result["test"][task].items():
            value, s = scores["rule"].get(MODE_PARAMETERS.get(name), 0.5), scores["attended"]
            cells = [f"{x:.3f}" for x in (scores["accuracy"], s["precision"], s["recall"])]
            density = f"{s['attended_density']:.3f} ({s['true_share']:.3f})"
            rows.append([task, f"{name} {value:g}", *cells, density, f"{s['all_closed_rate']:.3f}"])
    header = ["task", "rule", "accuracy", "precision", "recall", "attended density (true share)", "all-closed"]
    lines += [*grid(header, rows), ""]
    lines += ["By text length (test, attended tokens): precision / recall / density (true share).", ""]
    for task in tasks:
        test = result["test"][task]
        buckets = list(next(iter(test.values()))["attended_by_length"])
        rows = [
            [name, *map(_length_cell, map(scores["attended_by_length"].get, buckets))] for name, scores in test.items()
        ]
        lines += [f"### {task}", "", *grid(["rule", *buckets], rows), ""]
    lines += ["Validation grid (precision / recall / density - true share, smallest F1 over tasks):", ""]
    rows = []
    for key in [key for key in result["validation"][tasks[0]] if key != "gate_probability_auc"]:
        values = [result["validation"][task][key] for task in tasks]
        cells = [f"{_precision_recall(v)} / {v['density_gap']:+.3f}" for v in values]
        rows.append([key, *cells, f"{min(v['f1'] for v in values):.3f}"])
    return [*lines, *grid(["rule", *tasks, "smallest F1"], rows), ""]


def readme(report, tasks):
    flags = variant({key: report.get(key) for key in VARIANTS})[1]
    changed = f" but `{' '.join(flags)}`" if flags else ""
    lines = [
        "# Adaptive test gates on the synthetic selection family (issue 39)",
        "",
        f"Written by `{report['command']}` on {report['machine']} (shared with other jobs).",
        "",
        f"GA-Net trained once per task with the defaults of `train` (target density 0.3, `top_k` test gates){changed}, "
        f"`{' '.join(COMMON)} --lr {report['learning_rate']:g}`, at most {report['epochs']} epochs",
        f"({TEXTS['train']} training texts, 10 % of them for early stopping; the tasks of",
        "`experiments/adaptive_gates.py`). The same trained model is then scored under each rule of",
        "`GateSampler` (`ganet_tf.models.with_gate_inference`). Each rule's parameter is ONE value for the",
        f"family, chosen on {TEXTS['validation']} validation texts per task (another seed of the generator) as",
        f"the grid value with the highest smallest F1 over the tasks; test: {TEXTS['test']} test texts per task,"
        " through the whole model.",
        "",
    ]
    return lines + [line for seed, result in report["seeds"].items() for line in seed_lines(seed, result, tasks)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--lr", type=float, default=LEARNING_RATE)
    for key, (_, options) in VARIANTS.items():
        parser.add_argument("--" + key.replace("_", "-"), **options)
    args = parser.parse_args()
    variants = {key: getattr(args, key) for key in RUN_ORDER}
    command = " ".join(["python experiments/adaptive_gates.py", *sys.argv[1:]])
    report = {"machine": machine(), "command": command, "learning_rate": args.lr, "epochs": args.epochs, **variants}
    report["seeds"] = {}
    for seed in args.seeds:
        runs = {task: train_task(task, seed, args, variants) for task in args.tasks}
        validation = {task: validation_scores(runs[task], task) for task in args.tasks}
        chosen = choose(validation, args.tasks)
        rules = [*FIXED_RULES, *((mode, c["value"]) for mode, c in chosen.items())]
        test = {task: test_scores(runs[task], task, rules) for task in args.tasks}
        report["seeds"][str(seed)] = {"chosen": chosen, "validation": validation, "test": test}
        print(json.dumps({"seed": seed, "chosen": chosen}), flush=True)
    suffix = "" if args.lr == LEARNING_RATE else f"_lr{args.lr:g}"
    suffix += ("" if args.epochs == EPOCHS else f"_ep{args.epochs}") + variant(variants)[0]
    if args.complement_weight is not None and set(args.tasks) != set(TASKS):
        suffix += "_" + "_".join(args.tasks)
    write_json(os.path.join(REPO, RESULTS, f"selection{suffix}.json"), report)
    write_text(os.path.join(REPO, RESULTS, f"tables{suffix}.md"), readme(report, args.tasks))


if __name__ == "__main__":
    main()
