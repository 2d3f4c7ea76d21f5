"""The README's main job as a stranger runs it, `train --dataset trec` from an empty folder with no data flag and no
`GANET_DATA_DIR`: `python -m experiments.main_job --seeds 0 1 2` writes `seed_S.json` (resumable) and the README."""

import argparse
import os
import sys
import tempfile

from experiments import runner
from experiments import tables

RESULTS = os.path.join(runner.REPO, "results", "main_job")


def run_seed(seed):
    """Trains and evaluates one seed in a fresh empty folder; its summary."""
    shown = f"python -m ganet_tf train --dataset trec --out runs/trec --seed {seed}"
    command = [sys.executable, *shown.split()[1:], "--verbose", "2"]
    with tempfile.TemporaryDirectory(prefix="ganet_tf-stranger-") as empty:
        result = runner.run_command(command, shown, cwd=empty, unset=("GANET_DATA_DIR",))
    if result.get("data_source") != "packaged":
        raise SystemExit(f"seed {seed} read {result.get('data_source')!r}, not the packaged TREC copy")
    result.pop("report", None)
    return {**result, "command": shown, **runner.provenance(), "cwd": "an empty temporary folder"}


def rule_text(rule):
    """`nucleus 0.3` for `{"inference_mode": "nucleus", "inference_mass": 0.3}`."""
    return " ".join([rule["inference_mode"], *(f"{v:g}" for k, v in rule.items() if k != "inference_mode")])


def seed_files(folder, prefix):
    """The JSON files `PREFIX{seed}.json` in `folder`, by seed."""
    seeds = sorted(int(name[len(prefix) : -5]) for name in os.listdir(folder) if name.startswith(prefix))
    return [runner.read_json(os.path.join(folder, f"{prefix}{seed}.json")) for seed in seeds]


def cells(run, columns):
    """`format(run[key], spec)` for each `(key, spec)` of `columns`."""
    return [format(run[key], spec) for key, spec in columns]


def rebuild(results=RESULTS):
    """Fills the tables of `README.md` in the folder `results` from its `seed_S.json` files."""
    runs = seed_files(results, "seed_")
    keys = ("seed", "test_accuracy", "test_attended_density", "test_all_closed_rate", "epochs_trained", "train_seconds")
    headers = ["seed", "test accuracy", "attended density", "all-closed rate", "epochs", "train seconds"]
    rows = [cells(run, zip(keys, ("", ".4f", ".3f", ".3f", "", ".0f"), strict=True)) for run in runs]
    machine = [
        f"with the package (`ganet_tf/data/packaged/trec/`). Machine: {runs[0]['machine']}.",
        f"Test gates: {rule_text(runs[0]['test_gates'])}. Test split (500 questions); attended density is",
    ]
    seeds, mean = ", ".join(str(run["seed"]) for run in runs), tables.mean_std([run["test_accuracy"] for run in runs])
    table = [*tables.grid(headers, rows), "", f"Mean ± sample std over seeds {seeds}: test accuracy **{mean}**."]
    tables.fill(os.path.join(results, "README.md"), {"machine": machine, "table": table})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    runner.seed_results(parser.parse_args().seeds, lambda seed: os.path.join(RESULTS, f"seed_{seed}.json"), run_seed)
    rebuild()
