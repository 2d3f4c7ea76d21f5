"""Which tokens each attention picks, where the informative ones are known (issue 39).

    python experiments/selection_family.py [--tasks share05 share20 share50] [--models ...] [--seeds 0 1 2]

The synthetic selection family (`ganet_tf.data.synthetic_selection`): texts
of 5-400 words (log-uniform) whose label only their keywords carry, with
about 5 %, 20 % and 50 % of keywords per task (the share varies by text).
Each task is written as CSV files to `runs/selection_family/data/` and
trained with `python -m ganet_tf train --train-file ... --test-file ...`
for every model: GA-Net with the defaults, GA-Net with `top_k` test gates
at density 0.3 given explicitly, and soft, sparsemax and 1.5-entmax
attention. The test texts' attended tokens (attention weight > 0) are then
scored against the keywords (`ganet_tf.metrics.selection_scores`):
precision, recall, and attended density against the true share, overall
and by text length.

Every run's summary, with its selection scores, goes to
`results/selection_family/runs/NAME.json` and its model to the git-ignored
`runs/selection_family/NAME`; finished runs are skipped (a run whose
summary exists is not trained again), so a killed command resumes where it
stopped. `README.md` there is rewritten after each run and with `--table-only`.
`--limit N` makes a smoke run (N training texts, a quarter of that for
test, names ending in `_limitN`, left out of the tables of full runs) to
check the script end to end, best with `--epochs 1` and other folders
(`--results-dir`, `--runs-dir`).
"""

import argparse
import csv
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import REPO
from runner import load_runs
from runner import machine
from runner import mean_std
from runner import portable
from runner import run_or_skip
from runner import seed_list
from runner import write_results_readme

# Task name -> the mean share of keywords of its texts.
TASKS = {"share05": 0.05, "share20": 0.2, "share50": 0.5}
# Model name -> its `train` flags.
MODELS = {
    "ganet": [],
    "ganet_topk": ["--inference-mode", "top_k", "--target-density", "0.3"],
    "soft": ["--model", "soft"],
    "sparsemax": ["--model", "sparsemax"],
    "entmax": ["--model", "entmax"],
}
# Flags of every run: a small BiLSTM (the task needs no more), every word
# kept (texts are at most 400 words), and patience enough to settle.
COMMON = ["--hidden", "32", "--patience", "3", "--sequence-length", "400"]
EPOCHS = 8
TRAIN_TEXTS, TEST_TEXTS = 1000, 400
MAX_LENGTH = 400
# One data set per task for every model and training seed, test apart from train.
DATA_SEEDS = {"train": 100, "test": 200}


def _sizes(limit):
    return (TRAIN_TEXTS, TEST_TEXTS) if limit is None else (limit, max(limit // 4, 8))


def task_data(task, split, limit):
    """(texts, labels, keyword masks) of `split` of `task`, always the same."""
    from ganet_tf.data.synthetic_selection import selection_task

    size = _sizes(limit)[split == "test"]
    seed = DATA_SEEDS[split] + list(TASKS).index(task)
    return selection_task(size, TASKS[task], seed=seed, max_length=MAX_LENGTH)


def write_task_files(task, limit, runs_dir):
    """Writes `task`'s train and test CSV files (rewritten only when they
    differ); returns their paths, relative to the repository."""
    folder = os.path.join(runs_dir, "data", task + (f"_limit{limit}" if limit else ""))
    os.makedirs(os.path.join(REPO, folder), exist_ok=True)
    paths = []
    for split in ("train", "test"):
        texts, labels, _ = task_data(task, split, limit)
        rows = [["text", "label"], *([text, f"c{label}"] for text, label in zip(texts, labels, strict=True))]
        path = os.path.join(folder, f"{split}.csv")
        absolute = os.path.join(REPO, path)
        if not os.path.exists(absolute) or _read_rows(absolute) != rows:
            with open(absolute + ".tmp", "w", newline="", encoding="utf-8") as handle:
                csv.writer(handle).writerows(rows)
            os.replace(absolute + ".tmp", absolute)
        paths.append(path)
    return paths


def _read_rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def selection_of(run_dir, texts, keyword_masks):
    """Selection scores of the trained run in `run_dir` on `texts`: of the
    tokens with attention weight > 0 (`attended`) and, for GA-Net, of the
    open gates (`open`)."""
    from ganet_tf.data.vectorizer import vectorize
    from ganet_tf.metrics import selection_scores
    from ganet_tf.models import build_explainer
    from ganet_tf.training.trained_run import load_run

    model, vectorizer, _ = load_run(run_dir)
    ids = vectorize(vectorizer, texts)
    real = ids != 0
    words = np.array([len(text.split()) for text in texts])
    if not np.array_equal(real.sum(axis=1), words):
        raise SystemExit(f"error: the tokens of {run_dir} are not the words of the texts: retrain it")
    keywords = keyword_masks[:, : ids.shape[1]]
    outputs = build_explainer(model).predict(ids, verbose=0)
    result = {"attended": selection_scores(outputs["attention"] > 0, keywords, real)}
    if "gates" in outputs:
        result["open"] = selection_scores(outputs["gates"] > 0.5, keywords, real)
    return result


def run(task, model, seed, limit, epochs, results_dir, runs_dir):
    name = f"{task}_{model}_seed{seed}" + (f"_limit{limit}" if limit else "")
    train_file, test_file = write_task_files(task, limit, runs_dir)
    flags = ["--train-file", train_file, "--test-file", test_file, "--seed", str(seed), "--epochs", str(epochs)]
    flags += [*COMMON, *MODELS[model]]
    runs = os.path.join(REPO, results_dir, "runs")
    extra = {"task": task, "setting": model, "keyword_share": TASKS[task], "limit": limit}
    result = run_or_skip(name, flags, runs, out_root=runs_dir, extra=extra, reuse=[runs])
    if result is None or "selection" in result:
        return
    # The model of a copied run is that of the run it was copied from.
    source = os.path.splitext(os.path.basename(result.get("copied_from", name)))[0]
    texts, _, keyword_masks = task_data(task, "test", limit)
    result["selection"] = selection_of(os.path.join(REPO, runs_dir, source), texts, keyword_masks)
    path = os.path.join(runs, f"{name}.json")
    with open(path + ".tmp", "w") as handle:
        json.dump(portable(result), handle, indent=1)
    os.replace(path + ".tmp", path)
    overall = result["selection"]["attended"]["all"]
    print(
        f"    selection: precision {_number(overall['precision'])} recall {_number(overall['recall'])} "
        f"attended density {overall['attended_density']:.3f} (true share {overall['true_share']:.3f})",
        flush=True,
    )


def _number(value):
    return "-" if value is None else f"{value:.3f}"


def _group(runs, task, model):
    return [r for r in runs if r.get("task") == task and r.get("setting") == model and "selection" in r]


def _scores(group, key):
    return mean_std([r["selection"]["attended"]["all"][key] for r in group])


def tables(runs, tasks, models):
    lines = [
        "## Selection on the test texts",
        "",
        "Attended: tokens with attention weight > 0. Precision and recall against the keywords,",
        "pooled over the test tokens; attended density and true share are means over texts.",
        "",
        "| task | model | seeds | test accuracy | precision | recall | attended density | true share |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for task in tasks:
        for model in models:
            group = _group(runs, task, model)
            if group:
                lines.append(
                    f"| {task} | {model} | {seed_list(group)} | {mean_std([r['test_accuracy'] for r in group])} "
                    f"| {_scores(group, 'precision')} | {_scores(group, 'recall')} "
                    f"| {_scores(group, 'attended_density')} | {_scores(group, 'true_share')} |"
                )
    lines += [
        "",
        "## By text length (test, real tokens)",
        "",
        "Precision / recall / attended density (true share) per length bucket.",
        "",
    ]
    for task in tasks:
        groups = {model: _group(runs, task, model) for model in models}
        groups = {model: group for model, group in groups.items() if group}
        if not groups:
            continue
        buckets = list(next(iter(groups.values()))[0]["selection"]["attended"]["by_length"])
        lines += [f"### {task}", "", "| model | " + " | ".join(buckets) + " |", "|---|" + "---|" * len(buckets)]
        for model, group in groups.items():
            cells = [
                f"{_mean(group, 'precision', b)} / {_mean(group, 'recall', b)} / "
                f"{_mean(group, 'attended_density', b)} ({_mean(group, 'true_share', b)})"
                for b in buckets
            ]
            lines.append(f"| {model} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def _mean(group, key, bucket):
    values = [r["selection"]["attended"]["by_length"].get(bucket, {}).get(key) for r in group]
    values = [v for v in values if v is not None]
    return f"{np.mean(values):.2f}" if values else "-"


def write_tables(results_dir, tasks, models, limit=None):
    """Rewrites the README of `results_dir` from the runs of size `limit`."""
    runs = [r for r in load_runs(os.path.join(REPO, results_dir, "runs")) if r.get("limit") == limit]
    train_texts, test_texts = _sizes(limit)
    smoke = f" (a smoke run, `--limit {limit}`)" if limit else ""
    epochs = ", ".join(str(e) for e in sorted({r["config"]["epochs"] for r in runs})) or EPOCHS
    head = [
        "# Token selection on the synthetic selection family (issue 39)",
        "",
        "Written by `python experiments/selection_family.py` on " + machine() + ".",
        f"Tasks: keywords carry the label, about {', '.join(f'{s:.0%}' for s in TASKS.values())} of the words",
        f"(varying by text), lengths 5-{MAX_LENGTH} words; {train_texts} training and {test_texts} test texts{smoke}.",
        "Every model trains with `" + " ".join(COMMON) + f"` and at most {epochs} epochs;",
        "GA-Net `ganet` with the defaults of `train`, `ganet_topk` with `"
        + " ".join(MODELS["ganet_topk"])
        + "`. Test scores, mean ± std over the seeds listed.",
        "",
    ]
    write_results_readme(os.path.join(REPO, results_dir), [*head, *tables(runs, tasks, models)], runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS))
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--limit", type=int, help="smoke run: this many training texts")
    parser.add_argument("--epochs", type=int, default=EPOCHS, help=f"at most this many epochs (default {EPOCHS})")
    parser.add_argument("--results-dir", default=os.path.join("results", "selection_family"))
    parser.add_argument("--runs-dir", default=os.path.join("runs", "selection_family"))
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args()
    if args.limit is not None and args.limit < 8:
        parser.error(f"--limit must be at least 8, got {args.limit}")
    results_dir = os.path.relpath(os.path.abspath(args.results_dir), REPO)
    runs_dir = os.path.relpath(os.path.abspath(args.runs_dir), REPO)
    os.makedirs(os.path.join(REPO, results_dir, "runs"), exist_ok=True)
    if not args.table_only:
        for seed in args.seeds:
            for task in args.tasks:
                for model in args.models:
                    run(task, model, seed, args.limit, args.epochs, results_dir, runs_dir)
                    write_tables(results_dir, list(TASKS), list(MODELS), args.limit)
    write_tables(results_dir, list(TASKS), list(MODELS), args.limit)


if __name__ == "__main__":
    main()
