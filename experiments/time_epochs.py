"""Epoch time of GA-Net (auxiliary hidden 20 and 100) against BiLSTM+softAtt on an otherwise idle machine: each
trained `--epochs` epochs, no early stopping; the median epoch time but the first (tracing) into
`results/core/epoch_time.{json,md}`.

    python experiments/time_epochs.py --data-dir ../shared/data
"""

import argparse
import os
import shlex
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from experiments import bench
from experiments import runner
from experiments import tables

VARIANTS = {
    "ganet (aux BiLSTM 20)": ["--model", "ganet", "--aux-hidden", "20", *runner.PAPER_GATES],
    "ganet (aux BiLSTM 100)": ["--model", "ganet", "--aux-hidden", "100", *runner.PAPER_GATES],
    "soft": ["--model", "soft"],
}


def time_model(name, flags, args):
    """One model's run: its command, epoch seconds and their median but the first."""
    command = ["train", "--dataset", args.dataset, "--data-dir", args.data_dir, "--epochs", str(args.epochs)]
    command += ["--patience", str(args.epochs), "--seed", str(args.seed), "--verbose", "0", *flags]
    shown = "python -m ganet_tf " + shlex.join(command)
    result = runner.run_command([sys.executable, "-m", "ganet_tf", *command], shown)
    run = {"model": name, "command": shown, "epoch_seconds": result["epoch_seconds"]}
    run["median_epoch_seconds"] = float(np.median(result["epoch_seconds"][1:]))
    return {**run, **{key: result[key] for key in ("train_examples", "sequence_length")}}


def table(report, args):
    """`epoch_time.md`'s lines from `epoch_time.json` (`report`) and the script's flags."""
    runs, base = report["runs"], report["runs"][-1]["median_epoch_seconds"]
    seconds = [
        [r["model"], f"{r['median_epoch_seconds']:.2f}", f"{r['median_epoch_seconds'] / base:.2f}x"] for r in runs
    ]
    return [
        f"# Epoch time on {args.dataset}",
        "",
        f"`python experiments/time_epochs.py --data-dir ../shared/data --dataset {args.dataset} "
        f"--epochs {args.epochs} --seed {args.seed}`, machine: {report['machine']}, nothing else running.",
        f"{runs[0]['train_examples']} training examples padded to {runs[0]['sequence_length']} "
        "tokens, batch 32; median of epochs 2.. (validation included).",
        "",
        *tables.grid(["model", "median epoch seconds", "relative to soft attention"], seconds),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("GANET_DATA_DIR"))
    parser.add_argument("--dataset", default="sst1")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    runs = [time_model(name, flags, args) for name, flags in VARIANTS.items()]
    report = {"machine": bench.machine(system=False), "dataset": args.dataset, "runs": runs}
    runner.write_json(os.path.join(runner.REPO, "results", "core", "epoch_time.json"), report)
    tables.write_text(os.path.join(runner.REPO, "results", "core", "epoch_time.md"), table(report, args))
