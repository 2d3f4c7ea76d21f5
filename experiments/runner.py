"""Shared by the experiment scripts: run `python -m ganet_tf train` once per
configuration, keep its JSON summary, skip what is already done."""

import json
import os
import platform
import shlex
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def machine():
    return f"{platform.machine()}, {os.cpu_count()} CPU cores, {platform.system()}, no GPU"


def run_train(name, flags, runs_dir, out_root=None, resumable=False, extra=None):
    """Runs `train` with `flags` unless `runs_dir/NAME.json` exists.

    The summary (with `report`, the exact command and the machine) is written
    atomically to `runs_dir/NAME.json`; the model to `out_root/NAME` when
    `out_root` is given; with `resumable`, `out_root/NAME.backup` holds the
    training backup, so a killed run continues from its last epoch.
    `extra` fields (e.g. the variant name) are stored with the summary.
    """
    path = os.path.join(runs_dir, f"{name}.json")
    if os.path.exists(path):
        with open(path) as handle:
            return json.load(handle)
    os.makedirs(runs_dir, exist_ok=True)
    command = [sys.executable, "-m", "ganet_tf", "train", *flags, "--verbose", "2"]
    if out_root:
        command += ["--out", os.path.join(out_root, name)]
        if resumable:
            command += ["--backup-dir", os.path.join(out_root, f"{name}.backup")]
    shown = "python -m ganet_tf train " + shlex.join(command[4:])
    print(f"[{time.strftime('%H:%M:%S')}] {shown}", flush=True)
    completed = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    if completed.returncode != 0:
        print(completed.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"run failed: {shown}")
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    if out_root:
        with open(os.path.join(REPO, out_root, name, "metrics.json")) as handle:
            result["report"] = json.load(handle)["report"]
    result.update(command=shown, name=name, machine=machine(), **(extra or {}))
    staging = path + ".tmp"
    with open(staging, "w") as handle:
        json.dump(result, handle, indent=1)
    os.replace(staging, path)
    print(f"    accuracy {result['test_accuracy']:.4f} density {result['test_density']} "
          f"epochs {result['epochs_trained']} in {result['train_seconds']:.0f}s", flush=True)
    return result


def load_runs(runs_dir):
    runs = []
    if os.path.isdir(runs_dir):
        for name in sorted(os.listdir(runs_dir)):
            if name.endswith(".json"):
                with open(os.path.join(runs_dir, name)) as handle:
                    runs.append(json.load(handle))
    return runs


def write_results_readme(results_dir, lines, runs):
    """Writes `results_dir/README.md`: `lines`, then the command of every run."""
    lines = [*lines, "", "## Runs", "", *(f"- `{r['command']}`" for r in runs)]
    with open(os.path.join(results_dir, "README.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")


def mean_std(values):
    """'mean ± sample std' of the non-None values, '-' when there are none."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.4f}"
    return f"{np.mean(values):.4f} ± {np.std(values, ddof=1):.4f}"
