"""Epoch time of GA-Net (auxiliary hidden 20 and 100) vs BiLSTM+softAtt.

    python experiments/time_epochs.py --data-dir ../shared/data

Trains each model for a fixed number of epochs (no early stopping) on the
same data, one after another, and writes the median epoch time (epoch 1,
which traces the graph, left out) to `results/core/epoch_time.{json,md}`.
Run it on an otherwise idle machine: timings are only comparable then.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import PAPER_GATES
from runner import REPO
from runner import machine

OUT = os.path.join(REPO, "results", "core")
VARIANTS = {
    "ganet (aux BiLSTM 20)": ["--model", "ganet", "--aux-hidden", "20", *PAPER_GATES],
    "ganet (aux BiLSTM 100)": ["--model", "ganet", "--aux-hidden", "100", *PAPER_GATES],
    "soft": ["--model", "soft"],
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("GANET_DATA_DIR"))
    parser.add_argument("--dataset", default="sst1")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = []
    for name, flags in VARIANTS.items():
        command = [
            sys.executable,
            "-m",
            "ganet_tf",
            "train",
            "--dataset",
            args.dataset,
            "--data-dir",
            args.data_dir,
            "--epochs",
            str(args.epochs),
            "--patience",
            str(args.epochs),
            "--seed",
            str(args.seed),
            "--verbose",
            "0",
            *flags,
        ]
        shown = "python -m ganet_tf train " + shlex.join(command[4:])
        print(shown, flush=True)
        completed = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=True)
        result = json.loads(completed.stdout.strip().splitlines()[-1])
        timed = result["epoch_seconds"][1:]
        rows.append(
            {
                "model": name,
                "command": shown,
                "epoch_seconds": result["epoch_seconds"],
                "median_epoch_seconds": float(np.median(timed)),
                "train_examples": result["train_examples"],
                "sequence_length": result["sequence_length"],
            }
        )
        print(f"    median epoch {rows[-1]['median_epoch_seconds']:.2f}s", flush=True)
    cores = machine(system=False)
    with open(os.path.join(OUT, "epoch_time.json"), "w") as handle:
        json.dump({"machine": cores, "dataset": args.dataset, "runs": rows}, handle, indent=1)
    base = rows[-1]["median_epoch_seconds"]
    lines = [
        f"# Epoch time on {args.dataset}",
        "",
        f"`python experiments/time_epochs.py --data-dir ../shared/data --dataset {args.dataset} "
        f"--epochs {args.epochs} --seed {args.seed}`, machine: {cores}, nothing else running.",
        f"{rows[0]['train_examples']} training examples padded to {rows[0]['sequence_length']} "
        "tokens, batch 32; median of epochs 2.. (validation included).",
        "",
        "| model | median epoch seconds | relative to soft attention |",
        "|---|---|---|",
    ]
    lines += [
        f"| {r['model']} | {r['median_epoch_seconds']:.2f} | {r['median_epoch_seconds'] / base:.2f}x |" for r in rows
    ]
    with open(os.path.join(OUT, "epoch_time.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
