"""Adaptive test gates on the synthetic selection family (issue 39): a variant's GA-Net, trained once per task and
seed (`studies.GATE_VARIANTS`), scored under `top_k` 0.3, `threshold`, and `relative` and `nucleus` at the grid value
of highest smallest validation F1 over the tasks. Writes `results/adaptive_gates/selection{VARIANT}.json` and
`tables{VARIANT}.md`: `python -m experiments run adaptive_gates [--only VARIANT]`.
"""

import csv
import os

import keras
import numpy as np
from sklearn.metrics import roc_auc_score

from experiments.runner import REPO
from experiments.runner import machine
from experiments.runner import write_json
from experiments.studies import SELECTION_DATA
from experiments.studies import SELECTION_TASKS as TASKS
from experiments.tables import grid
from experiments.tables import number
from experiments.tables import write_text
from ganet_tf.data.synthetic_selection import selection_task
from ganet_tf.data.vectorizer import vectorize
from ganet_tf.layers import GateSampler
from ganet_tf.layers.gate_sampler import MODE_PARAMETERS
from ganet_tf.metrics import selection_scores
from ganet_tf.models import build_explainer
from ganet_tf.models import with_gate_inference
from ganet_tf.training.trained_run import load_run

TEXTS = {"train": 1000, "test": 400, "validation": 400}
DATA_SEEDS = {"train": 100, "test": 200, "validation": 300}  # plus the task's index
GRIDS = {
    "relative": [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.97, 0.98, 0.99],
    "nucleus": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95],
}
FIXED_RULES = [("top_k", 0.3), ("threshold", 0.5)]


def task_data(task, split):
    """(texts, labels, keyword masks) of `split` of `task`, always the same."""
    seed = DATA_SEEDS[split] + list(TASKS).index(task)
    return selection_task(TEXTS[split], TASKS[task], seed=seed, max_length=400)


def write_task_files(point):
    """Writes the train and test CSV files of `point`'s task where they differ."""
    for split in ("train", "test"):
        texts, labels, _ = task_data(point["task"], split)
        rows = [["text", "label"], *([text, f"c{label}"] for text, label in zip(texts, labels, strict=True))]
        path = os.path.join(REPO, SELECTION_DATA.format(task=point["task"], split=split))
        if not os.path.exists(path) or _read_csv(path) != rows:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path + ".tmp", "w", newline="", encoding="utf-8") as handle:
                csv.writer(handle).writerows(rows)
            os.replace(path + ".tmp", path)


def _read_csv(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


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
            [name, *(_length_cell(scores["attended_by_length"][b]) for b in buckets)] for name, scores in test.items()
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
    intro = (
        f"Written by `{report['command']}` on {report['machine']} (shared with other jobs): GA-Net trained once per"
        f" task and seed (`train {' '.join(report['flags'])}`), scored under each rule of `GateSampler`, whose"
        " parameter is ONE value for the family: the grid value of highest smallest F1 over the tasks (validation)."
    )
    lines = ["# Adaptive test gates on the synthetic selection family (issue 39)", "", intro, ""]
    return lines + [line for seed, result in report["seeds"].items() for line in seed_lines(seed, result, tasks)]


def tables(study, root):
    """Writes a variant's `selection{VARIANT}.json` and `tables{VARIANT}.md` once its runs are done; a report there
    stays (older code wrote the committed tables)."""
    path, points = os.path.join(root, study.folder, f"selection{study.variant}.json"), list(study.points())
    if os.path.exists(path) or not all(os.path.exists(study.runs_dir(root) + f"/{p['name']}.json") for p in points):
        return
    command = f"python -m experiments run adaptive_gates --only '{study.variant}'"
    report = {"machine": machine(), "command": command, "flags": study.flags, "seeds": {}}
    tasks = list(study.axes["task"])
    for seed in study.axes["seed"]:
        runs = {p["task"]: os.path.join(REPO, "runs", study.name, p["name"]) for p in points if p["seed"] == seed}
        validation = {task: validation_scores(runs[task], task) for task in tasks}
        chosen = choose(validation, tasks)
        rules = [*FIXED_RULES, *((mode, c["value"]) for mode, c in chosen.items())]
        test = {task: test_scores(runs[task], task, rules) for task in tasks}
        report["seeds"][str(seed)] = {"chosen": chosen, "validation": validation, "test": test}
    write_json(path, report)
    write_text(os.path.join(root, study.folder, f"tables{study.variant}.md"), readme(report, tasks))
