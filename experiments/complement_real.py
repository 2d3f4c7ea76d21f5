"""The adversarial complement on real data, validation only (issue 39).

    python experiments/complement_real.py --data-dir ../shared/data [--datasets trec sst2] [--seeds 0 1 2]
        [--complement-weight 1] [--target-density RHO]

On the synthetic family the adversarial complement (`train --complement
adversarial --complement-weight MU`) ranked every keyword first and let the
relative rule find about the right number of tokens
(`results/adaptive_gates/COMPLEMENT.md`). Before any default changes, this
asks the tuning datasets of `experiments/adaptive_real.py` (TREC, SST-2;
SST-1 and IMDB stay held out) what it costs or gains there: per dataset and
seed it trains GA-Net with the defaults plus the complement (the flags of
`adaptive_real.py`'s default setting, `rho0.3`, and the complement's), then
scores, on the VALIDATION split only, both that model and `adaptive_real.py`'s
`rho0.3` model of the same seed (trained there; run it first) under `top_k`
0.3 (the models as trained) and under the relative rule at every r of
`adaptive_real.RATIOS` and 0.97-0.99 (the synthetic family's choice was 0.99).
Accuracy and attended density, means over seeds, go to
`results/adaptive_real/complement/README.md` (scores per seed in
`rescored/`, run summaries in `runs/`); no test split is read.

`--target-density RHO` trains the complement runs at that density target
instead of 0.3 (setting `rhoRHO-advMU`; their `top_k` row is then `top_k`
at RHO, as trained) and writes `README_rhoRHO.md`.
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import adaptive_real  # noqa: I001 - beside runner, in experiments/
from runner import REPO
from runner import machine
from runner import run_or_skip

RESULTS = os.path.join(adaptive_real.RESULTS, "complement")
RATIOS = (*adaptive_real.RATIOS, 0.97, 0.98, 0.99)


def setting_name(weight, density=None):
    return f"rho{0.3 if density is None else density:g}-adv{weight:g}"


def complement_flags(weight, density=None):
    flags = ["--complement", "adversarial", "--complement-weight", f"{weight:g}"]
    return flags + ([] if density is None else ["--target-density", f"{density:g}"])


def train(dataset, seed, weight, args):
    setting = setting_name(weight, args.target_density)
    flags = adaptive_real.train_flags(dataset, adaptive_real.DEFAULT, seed, os.path.abspath(args.data_dir))
    flags += complement_flags(weight, args.target_density)
    runs_dir = os.path.join(REPO, RESULTS, "runs")
    name = adaptive_real.run_name(dataset, setting, seed)
    return run_or_skip(name, flags, runs_dir, out_root=adaptive_real.MODELS, extra={"setting": setting})


def validation_scores(dataset, seed, weight, args):
    """{setting: {"top_k": scores, ratio: scores}} on validation, cached in
    `rescored/DATASET_seedSEED.json`."""
    path = os.path.join(REPO, RESULTS, "rescored", f"{dataset}_seed{seed}.json")
    complement = (setting_name(weight, args.target_density), complement_flags(weight, args.target_density))
    cache = adaptive_real.read_json(path, {})
    data_dir = os.path.abspath(args.data_dir)
    result = {}
    for setting, extra in ((adaptive_real.DEFAULT, []), complement):
        name = adaptive_real.run_name(dataset, setting, seed)
        run_dir = os.path.join(REPO, adaptive_real.MODELS, name)
        if not os.path.isfile(os.path.join(run_dir, "model.keras")):
            raise SystemExit(f"No model in {run_dir}: train it first (experiments/adaptive_real.py for rho0.3).")
        flags = adaptive_real.train_flags(dataset, adaptive_real.DEFAULT, seed, data_dir) + extra
        rescorer = adaptive_real.Rescorer(run_dir, flags, cache, setting, lambda: adaptive_real.write_json(path, cache))
        with open(os.path.join(run_dir, "metrics.json")) as handle:
            metrics = json.load(handle)
        result[setting] = {
            "top_k": {
                "accuracy": metrics["validation_accuracy"],
                "attended_density": metrics["validation_attended_density"],
            }
        }
        for ratio in RATIOS:
            result[setting][ratio] = rescorer.score("validation", "relative", ratio)
    return result


def table(results, datasets, seeds, weight, density=None):
    adv = setting_name(weight, density)
    lines = [
        "# The adversarial complement on TREC and SST-2, validation (issue 39)",
        "",
        f"Written by `python experiments/complement_real.py {' '.join(sys.argv[1:])}` on {machine()}",
        "(shared with other jobs). Seeds " + ", ".join(str(s) for s in seeds) + "; means over them.",
        "",
        f"`rho0.3`: `train` with its defaults (the models of `experiments/adaptive_real.py`); `{adv}`: the same",
        f"with `{' '.join(complement_flags(weight, density))}`. Validation accuracy / attended density",
        "under `top_k` as trained (at the run's target density) and the relative rule at r. No test split was read.",
        "",
        "| dataset | rule | " + f"`rho0.3` | `{adv}` |",
        "|---|---|---|---|",
    ]
    for dataset in datasets:
        for rule in ("top_k", *RATIOS):
            cells = []
            for setting in (adaptive_real.DEFAULT, adv):
                points = [results[dataset][seed][setting][rule] for seed in seeds]
                accuracy = np.mean([p["accuracy"] for p in points])
                density = np.mean([p["attended_density"] for p in points])
                cells.append(f"{accuracy:.4f} / {density:.3f}")
            label = "top_k (as trained)" if rule == "top_k" else f"relative {rule:g}"
            lines.append(f"| {dataset} | {label} | {cells[0]} | {cells[1]} |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("GANET_DATA_DIR", "../shared/data"))
    parser.add_argument("--datasets", nargs="+", choices=adaptive_real.TUNING, default=list(adaptive_real.TUNING))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--complement-weight", type=float, default=1.0)
    parser.add_argument("--target-density", type=float, help="the complement runs' --target-density (default 0.3)")
    args = parser.parse_args()
    if not args.complement_weight > 0:
        parser.error(f"--complement-weight must be > 0, got {args.complement_weight}")
    for dataset in args.datasets:
        for seed in args.seeds:
            train(dataset, seed, args.complement_weight, args)
    results = {
        dataset: {seed: validation_scores(dataset, seed, args.complement_weight, args) for seed in args.seeds}
        for dataset in args.datasets
    }
    name = "README.md" if args.target_density is None else f"README_rho{args.target_density:g}.md"
    lines = table(results, args.datasets, args.seeds, args.complement_weight, args.target_density)
    with open(os.path.join(REPO, RESULTS, name), "w") as handle:
        handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
