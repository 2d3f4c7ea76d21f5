"""GA-Net's default gates on every dataset, and the target density sweep (issue 13).

    python experiments/gate_check.py --data-dir ../shared/data [--part {defaults,anneal,sweep} ...] [--seeds 0 1 2]

`defaults`: `python -m ganet_tf train` with no gate flag at all (the
defaults: target density 0.3, top_k test gates) beside `--model soft`, on
TREC and SST-2 (the datasets the defaults were chosen on, see
`results/gates/`) and on SST-1 and IMDB, which were held out of that
choice. `anneal`: the gates' temperature annealed from 1.0 to 0.1 over
5 epochs against the default fixed 0.5, on TREC and SST-2, compared on
validation scores. `sweep`: `--target-density` 0.1, 0.3 (the default run) and 0.5 on
TREC, SST-2 and IMDB. IMDB runs use the IMDB setting of
`experiments/reproduce.py`, chosen there on validation data
(`--sequence-length 400 --dropout 0.5 --buckets 8 --epochs 8 --patience 2`).

Every run writes its summary to `results/gate_check/runs/NAME.json` (with
its command and machine) and its model to the git-ignored
`runs/gate_check/`; IMDB runs keep a training backup, so a killed command
resumes where it stopped, and finished runs are skipped. Two processes may
share the work: a run that another process is training is skipped. The
tables (`README.md`), the data of the plot (`sweep.json`) and the plot
(`sweep.png`) are rewritten after each run and with `--table-only`; they
report TEST scores, 3-seed means where the seeds have run.
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from experiments.studies import IMDB
from experiments.studies import TOP_K
from runner import REPO
from runner import load_runs
from runner import mean_std
from runner import run_or_skip
from runner import seed_list
from runner import write_results_readme

RESULTS = os.path.join(REPO, "results", "gate_check")
MODELS = os.path.join("runs", "gate_check")
TUNED = ("trec", "sst2")  # the defaults were chosen on these (validation)
HELD_OUT = ("sst1", "imdb")  # never looked at for any gate default
SWEEP_DATASETS = ("trec", "sst2", "imdb")
DENSITIES = (0.1, 0.3, 0.5)
DATASET_FLAGS = {"imdb": list(IMDB)}
# Setting name -> `train` flags; "default" is `train`'s defaults, tested
# with `top_k` (the default test rule when these runs were made; nucleus now).
SETTINGS = {
    "default": list(TOP_K),
    "soft": ["--model", "soft"],
    "rho0.1": ["--target-density", "0.1", *TOP_K],
    "rho0.5": ["--target-density", "0.5", *TOP_K],
    # Temperature annealing (issue 13): from 1.0, the top of the paper's
    # grid for tau, to 0.1 over the first 5 epochs, set before any run; the
    # defaults keep a fixed tau = 0.5 unless validation says otherwise.
    "anneal": ["--tau", "1.0", "--final-tau", "0.1", "--anneal-epochs", "5", *TOP_K],
}
PARTS = ("defaults", "anneal", "sweep")


def jobs(part, datasets, seeds):
    """(dataset, setting, seed) of `part`, cheap datasets first."""
    if part == "defaults":
        wanted = [(d, s) for d in datasets for s in ("default", "soft")]
    elif part == "anneal":
        wanted = [(d, s) for d in datasets if d in TUNED for s in ("default", "anneal")]
    else:
        wanted = [(d, s) for d in datasets if d in SWEEP_DATASETS for s in ("default", "rho0.1", "rho0.5")]
    wanted.sort(key=lambda pair: pair[0] == "imdb")
    return [(d, s, seed) for seed in seeds for d, s in wanted]


def run(dataset, setting, seed, data_dir):
    name = f"{dataset}_{setting}_seed{seed}"
    flags = [
        "--dataset",
        dataset,
        "--data-dir",
        data_dir,
        "--seed",
        str(seed),
        *DATASET_FLAGS.get(dataset, []),
        *SETTINGS[setting],
    ]
    run_or_skip(
        name,
        flags,
        os.path.join(RESULTS, "runs"),
        out_root=MODELS,
        resumable=dataset == "imdb",
        extra={"setting": setting},
    )


def _group(runs, dataset, setting):
    return [r for r in runs if r["dataset"] == dataset and r.get("setting") == setting]


def _stat(group, key):
    return mean_std([r.get(key) for r in group])


def _verdict(ganet, soft):
    """The issue's three checks on 3-seed means: all-closed <= 2 %, attended
    density in [0.1, 0.7], accuracy >= soft attention's - 0.5 point."""
    if len(ganet) < 3 or len(soft) < 3:
        return f"pending ({len(ganet)}/3 GA-Net, {len(soft)}/3 soft)"
    closed = np.mean([r["test_all_closed_rate"] for r in ganet])
    density = np.mean([r["test_attended_density"] for r in ganet])
    gap = np.mean([r["test_accuracy"] for r in ganet]) - np.mean([r["test_accuracy"] for r in soft])
    checks = [closed <= 0.02, 0.1 <= density <= 0.7, gap >= -0.005]
    return f"{'pass' if all(checks) else 'FAIL'} (accuracy {gap * 100:+.2f} points)"


def defaults_table(runs):
    lines = [
        "## Defaults against soft attention (test)",
        "",
        "`python -m ganet_tf train --dataset D --seed S` with no gate flag, and with `--model soft`.",
        "",
        "| dataset | role | seeds | GA-Net accuracy | attended density | all-closed rate | soft accuracy | checks |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for dataset in (*TUNED, *HELD_OUT):
        ganet, soft = _group(runs, dataset, "default"), _group(runs, dataset, "soft")
        if not ganet and not soft:
            continue
        role = "tuned on (validation)" if dataset in TUNED else "held out"
        seeds = seed_list(ganet)
        lines.append(
            f"| {dataset} | {role} | {seeds or '-'} | {_stat(ganet, 'test_accuracy')} "
            f"| {_stat(ganet, 'test_attended_density')} | {_stat(ganet, 'test_all_closed_rate')} "
            f"| {_stat(soft, 'test_accuracy')} | {_verdict(ganet, soft)} |"
        )
    return lines


def anneal_table(runs):
    """Fixed tau against annealed tau on the tuning datasets: VALIDATION
    scores decide, test scores beside them."""
    lines = [
        "## Temperature annealing (validation decides)",
        "",
        "`" + " ".join(SETTINGS["anneal"]) + "` against the default fixed `--tau 0.5`, on the datasets",
        "the defaults were chosen on. Validation columns are the comparison; test is shown beside.",
        "",
        "| dataset | setting | seeds | val accuracy | val attended density | epochs | test accuracy |",
        "|---|---|---|---|---|---|---|",
    ]
    for dataset in TUNED:
        for setting in ("default", "anneal"):
            group = _group(runs, dataset, setting)
            if not group or not _group(runs, dataset, "anneal"):
                continue
            lines.append(
                f"| {dataset} | {setting} | {seed_list(group)} | {_stat(group, 'validation_accuracy')} "
                f"| {_stat(group, 'validation_attended_density')} | {_stat(group, 'epochs_trained')} "
                f"| {_stat(group, 'test_accuracy')} |"
            )
    return lines if len(lines) > 7 else []


def sweep_points(runs):
    """One point per (dataset, rho): means over the seeds that have run."""
    points = []
    for dataset in SWEEP_DATASETS:
        for rho in DENSITIES:
            group = _group(runs, dataset, "default" if rho == 0.3 else f"rho{rho}")
            if group:
                points.append(
                    {
                        "dataset": dataset,
                        "target_density": rho,
                        "seeds": sorted(r["seed"] for r in group),
                        "test_accuracy": float(np.mean([r["test_accuracy"] for r in group])),
                        "test_attended_density": float(np.mean([r["test_attended_density"] for r in group])),
                        "test_all_closed_rate": float(np.mean([r["test_all_closed_rate"] for r in group])),
                    }
                )
    return points


def one_token_floors(data_dir):
    """Per sweep dataset, the mean of 1 / T over the test texts (T real
    tokens after vectorising, as the model sees them): the least attended
    density of gates that never leave a text all-closed. Cached in
    `floors.json`; read from the default seed-0 run's vectorizer."""
    path = os.path.join(RESULTS, "floors.json")
    floors = {}
    if os.path.exists(path):
        with open(path) as handle:
            floors = json.load(handle)
    for dataset in SWEEP_DATASETS:
        folder = os.path.join(REPO, MODELS, f"{dataset}_default_seed0")
        if dataset in floors or not data_dir or not os.path.isdir(folder):
            continue
        from ganet_tf.data import load_dataset
        from ganet_tf.data.vectorizer import vectorize
        from ganet_tf.training.trained_run import load_preprocessing

        vectorizer, _ = load_preprocessing(folder)
        texts = load_dataset(dataset, data_dir, 0.1, 0).test_texts
        lengths = (vectorize(vectorizer, texts) != 0).sum(axis=1)
        lengths = lengths[lengths > 0]
        floors[dataset] = {"one_token_floor": float(np.mean(1 / lengths)), "mean_tokens": float(lengths.mean())}
    with open(path, "w") as handle:
        json.dump(floors, handle, indent=1, sort_keys=True)
    return floors


def sweep_table(points, floors):
    lines = [
        "## Target density sweep (test)",
        "",
        "`--target-density RHO` (0.3: the default run). Within: |attended density - rho| <= 0.05.",
        "Floor: the least attended density that opens at least one token in every text",
        "(the mean of 1 / T over the test texts, `floors.json`): `top_k` never goes below it.",
        "",
        "| dataset | rho | seeds | accuracy | attended density | all-closed rate | floor | within |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        within = abs(p["test_attended_density"] - p["target_density"]) <= 0.05
        floor = floors.get(p["dataset"], {}).get("one_token_floor")
        verdict = (
            "yes" if within else "NO" + (" (rho is below the floor)" if floor and floor > p["target_density"] else "")
        )
        lines.append(
            f"| {p['dataset']} | {p['target_density']} | {','.join(map(str, p['seeds']))} "
            f"| {p['test_accuracy']:.4f} | {p['test_attended_density']:.4f} "
            f"| {p['test_all_closed_rate']:.4f} | {f'{floor:.3f}' if floor else '-'} | {verdict} |"
        )
    return lines


def plot(points, path):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(1, len(SWEEP_DATASETS), figsize=(12, 3.5))
    for axis, dataset in zip(axes, SWEEP_DATASETS, strict=True):
        mine = [p for p in points if p["dataset"] == dataset]
        axis.plot([p["test_attended_density"] for p in mine], [p["test_accuracy"] for p in mine], "o-")
        for p in mine:
            axis.annotate(f"rho {p['target_density']}", (p["test_attended_density"], p["test_accuracy"]))
        axis.set(title=dataset, xlabel="attended test density", ylabel="test accuracy", xlim=(0, 1))
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def write_tables(data_dir=None):
    runs = load_runs(os.path.join(RESULTS, "runs"))
    points = sweep_points(runs)
    floors = one_token_floors(data_dir)
    with open(os.path.join(RESULTS, "sweep.json"), "w") as handle:
        json.dump(points, handle, indent=1)
    if points:
        plot(points, os.path.join(RESULTS, "sweep.png"))
    head = [
        "# GA-Net's default gates (issue 13)",
        "",
        "Written by `python experiments/gate_check.py --data-dir ../shared/data`",
        f"on {runs[0]['machine']}. Test scores, mean ± std over the seeds listed.",
        "Attended density counts every token that attention weighs, the fallback's",
        "tokens of all-closed rows included. SST-1 and IMDB were held out of the",
        "choice of the defaults (made on TREC and SST-2 validation data, `results/gates/`).",
        "",
    ]
    tail = ["", "![accuracy against density](sweep.png)", ""] if points else []
    anneal = anneal_table(runs)
    tables = [*defaults_table(runs), "", *([*anneal, ""] if anneal else []), *sweep_table(points, floors), *tail]
    write_results_readme(RESULTS, [*head, *tables], runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("GANET_DATA_DIR", "../shared/data"))
    parser.add_argument("--part", choices=PARTS, nargs="+", default=list(PARTS))
    parser.add_argument("--datasets", nargs="+", choices=(*TUNED, *HELD_OUT), default=[*TUNED, *HELD_OUT])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args()
    os.makedirs(os.path.join(RESULTS, "runs"), exist_ok=True)
    if not args.table_only:
        for part in args.part:
            for dataset, setting, seed in jobs(part, args.datasets, args.seeds):
                run(dataset, setting, seed, os.path.abspath(args.data_dir))
                write_tables(args.data_dir)
    write_tables(args.data_dir)


if __name__ == "__main__":
    main()
