"""The README's main job, as a stranger runs it: `python -m ganet_tf train
--dataset trec --out runs/trec --seed S` from an empty folder outside the
repository, no data flag and no `GANET_DATA_DIR` (TREC ships with the
package). Writes `results/main_job/seed_S.json` (resumable: a seed with its
JSON is skipped) and `README.md`.

    python experiments/main_job.py --seeds 0 1 2
"""

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from experiments import runner
from experiments.tables import mean_std

RESULTS = os.path.join(runner.REPO, "results", "main_job")


def run_seed(seed):
    """Trains and evaluates one seed in a fresh empty folder; its summary."""
    shown = f"python -m ganet_tf train --dataset trec --out runs/trec --seed {seed}"
    with tempfile.TemporaryDirectory(prefix="ganet_tf-stranger-") as empty:
        command = [sys.executable, "-m", "ganet_tf", *shown.split()[3:], "--verbose", "2"]
        result = runner.run_command(command, shown, cwd=empty, unset=("GANET_DATA_DIR",))
    if result.get("data_source") != "packaged":
        raise SystemExit(f"seed {seed} read {result.get('data_source')!r}, not the packaged TREC copy")
    result.pop("report", None)
    return {**result, "command": shown, **runner.provenance(), "cwd": "an empty temporary folder"}


def rule_text(rule):
    """`nucleus 0.3` for `{"inference_mode": "nucleus", "inference_mass": 0.3}`."""
    if not rule:
        return "not named (these runs predate summaries that name them)"
    return " ".join([rule["inference_mode"], *(f"{v:g}" for k, v in rule.items() if k != "inference_mode")])


def seed_files(folder, prefix):
    """The JSON files `PREFIX{seed}.json` in `folder`, by seed."""
    seeds = sorted(int(name[len(prefix) : -5]) for name in os.listdir(folder) if name.startswith(prefix))
    return [runner.read_json(os.path.join(folder, f"{prefix}{seed}.json")) for seed in seeds]


def write_readme(results=RESULTS):
    """`README.md` of the folder `results` from its `seed_S.json` files."""
    runs = seed_files(results, "seed_")
    rows = [
        f"| {run['seed']} | {run['test_accuracy']:.4f} | {run['test_attended_density']:.3f} | "
        f"{run['test_all_closed_rate']:.3f} | {run['epochs_trained']} | {run['train_seconds']:.0f} |"
        for run in runs
    ]
    lines = [
        "# The README's main job, three seeds",
        "",
        "`python -m ganet_tf train --dataset trec --out runs/trec --seed S`, run by",
        "`python experiments/main_job.py --seeds 0 1 2` from an empty temporary folder outside the",
        "repository, with no `--data-dir` and no `GANET_DATA_DIR`: TREC is read from the copy that ships",
        f"with the package (`ganet_tf/data/packaged/trec/`). Machine: {runs[0]['machine']}.",
        f"Test gates: {rule_text(runs[0].get('test_gates'))}. Test split (500 questions); attended density is",
        "the share of real tokens attention weighs;",
        "train seconds are wall-clock under whatever load the machine had.",
        "",
        "| seed | test accuracy | attended density | all-closed rate | epochs | train seconds |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"Mean ± sample std over seeds {', '.join(str(run['seed']) for run in runs)}: test accuracy "
        f"**{mean_std([run['test_accuracy'] for run in runs])}**.",
    ]
    runner.write_text(os.path.join(results, "README.md"), lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    seeds = parser.parse_args().seeds
    runner.seed_results(seeds, lambda seed: os.path.join(RESULTS, f"seed_{seed}.json"), run_seed)
    write_readme()


if __name__ == "__main__":
    main()
