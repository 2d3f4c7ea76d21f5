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

`--test` then reads the test split, once the choice is made: ONE r for the
complement setting is chosen on the validation scores above with
`adaptive_real.choose_ratio` (among the r whose validation density is no
more than the defaults' `top_k` 0.3 on TREC and SST-2, the largest smallest
accuracy gain over it), the setting is trained on `--test-datasets` too
(SST-1 by default: held out of every choice, here and in
`adaptive_real.py`), and its test scores, as trained and at that r, go
beside `adaptive_real.py`'s test rows of the same seeds (the defaults under
`top_k` 0.3 and under that script's chosen r, soft, sparsemax, 1.5-entmax)
in `README_rhoRHO_test.md` (`README_test.md` without a target); `--test-seeds`
trains fewer seeds there (the table reports every seed with a model; IMDB
runs keep a training backup and resume). It answers
what the training that meets the synthetic family's Done-when costs on
real data nobody tuned it on.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from experiments import adaptive_real
from experiments.runner import REPO
from experiments.runner import mean_std
from experiments.runner import recorded_machine
from experiments.runner import run_or_skip
from experiments.runner import write_text

FOLDER = os.path.join("adaptive_real", "complement")  # under the results root
RATIOS = (*adaptive_real.RATIOS, 0.97, 0.98, 0.99)
# The settings whose tables are committed, as `write` takes them: the
# complement at weight 1 at the defaults' target (README.md), and at target
# density 0.05 with its test table (README_rho0.05.md, README_rho0.05_test.md).
VARIANTS = ({}, {"density": 0.05, "test": True})


def setting_name(weight, density=None):
    return f"rho{0.3 if density is None else density:g}-adv{weight:g}"


def complement_flags(weight, density=None):
    flags = ["--complement", "adversarial", "--complement-weight", f"{weight:g}"]
    return flags + ([] if density is None else ["--target-density", f"{density:g}"])


def train(dataset, seed, weight, density, data_dir):
    setting = setting_name(weight, density)
    flags = adaptive_real.train_flags(dataset, adaptive_real.DEFAULT, seed, os.path.abspath(data_dir))
    flags += complement_flags(weight, density)
    runs_dir = os.path.join(REPO, "results", FOLDER, "runs")
    name = adaptive_real.run_name(dataset, setting, seed)
    extra = {"setting": setting}
    return run_or_skip(name, flags, runs_dir, out_root=adaptive_real.MODELS, resumable=dataset == "imdb", extra=extra)


def rescorer(root, dataset, seed, setting, extra, data_dir):
    """The `adaptive_real.Rescorer` of the run of `setting` (the defaults'
    flags plus `extra`), caching in `rescored/DATASET_seedSEED.json`;
    without `data_dir`, cached scores only."""
    path = os.path.join(root, FOLDER, "rescored", f"{dataset}_seed{seed}.json")
    data = data_dir and os.path.abspath(data_dir)
    flags = adaptive_real.train_flags(dataset, adaptive_real.DEFAULT, seed, data) + extra
    name = adaptive_real.run_name(dataset, setting, seed)
    return adaptive_real.Rescorer(path, name, setting, flags, cached_only=not data_dir)


def validation_scores(root, dataset, seed, weight, density, data_dir):
    """{setting: {"top_k": scores, ratio: scores}} on validation, cached in
    `rescored/DATASET_seedSEED.json`."""
    complement = (setting_name(weight, density), complement_flags(weight, density))
    result = {}
    for setting, extra in ((adaptive_real.DEFAULT, []), complement):
        name = adaptive_real.run_name(dataset, setting, seed)
        runs = "adaptive_real" if setting == adaptive_real.DEFAULT else FOLDER
        metrics = adaptive_real.read_json(os.path.join(root, runs, "runs", f"{name}.json"), None)
        if metrics is None:
            raise SystemExit(f"No run {name}: train it first (experiments/adaptive_real.py for rho0.3).")
        scores = rescorer(root, dataset, seed, setting, extra, data_dir).grid("validation", "relative", RATIOS)
        if None in scores.values():
            raise SystemExit(f"No model of {name} to score the relative rule with: train it again.")
        top_k = {"accuracy": metrics["validation_accuracy"], "attended_density": metrics["validation_attended_density"]}
        result[setting] = {"top_k": top_k, **scores}
    return result


def validation_choice(results, seeds, weight, density):
    """`adaptive_real.choose_ratio` on the complement setting's validation
    relative scores against the defaults' `top_k` 0.3 (same seeds)."""
    adv = setting_name(weight, density)
    grid = {}
    for dataset, by_seed in results.items():
        grid[dataset] = {"seeds": list(seeds)}
        for rule in ("top_k", *RATIOS):
            setting = adaptive_real.DEFAULT if rule == "top_k" else adv
            points = [by_seed[seed][setting][rule] for seed in seeds]
            grid[dataset][rule] = tuple(np.mean([(p["accuracy"], p["attended_density"]) for p in points], axis=0))
    return adaptive_real.choose_ratio(grid, RATIOS)


def test_scores(root, dataset, seed, weight, density, data_dir, ratio):
    """The complement setting's test scores, as trained (`top_k` at its
    target) and under the relative rule at `ratio`, or None without a model."""
    setting = setting_name(weight, density)
    name = adaptive_real.run_name(dataset, setting, seed)
    summary = os.path.join(root, FOLDER, "runs", f"{name}.json")
    if not os.path.isfile(summary):
        print(f"    {name}: not trained, left out of the test table", flush=True)
        return None
    extra = complement_flags(weight, density)
    run = adaptive_real.read_json(summary)
    relative = rescorer(root, dataset, seed, setting, extra, data_dir).score("test", "relative", ratio)
    if relative is None:
        print(f"    {name}: no model to score relative {ratio:g} with, left out of the test table", flush=True)
        return None
    return {
        "top_k": {"accuracy": run["test_accuracy"], "density": run["test_attended_density"]},
        "relative": {"accuracy": relative["accuracy"], "density": relative["attended_density"]},
    }


def _cell(points):
    return mean_std([p["accuracy"] for p in points]), f"{np.mean([p['density'] for p in points]):.3f}"


def test_table(root, scores, choice, weight, density):
    """The test table of `--test`: `scores[dataset][seed]` of the complement
    setting beside `adaptive_real.py`'s test rows of the same seeds."""
    adv = setting_name(weight, density)
    ratio = choice["ratio"]
    theirs = adaptive_real.read_json(os.path.join(root, "adaptive_real", "curves.json"), {}).get("choice")
    default_ratio = theirs["ratio"] if theirs else None
    records = adaptive_real.collect(os.path.join(root, "adaptive_real"), tuple(scores))
    trained_at = 0.3 if density is None else density
    lines = [
        f"# The adversarial complement `{adv}` on the test split (issue 39)",
        "",
        f"Written by `python -m experiments table complement` on {_machine(root)}; {_runs(weight, density, True)}",
        "(shared with other jobs). Mean ± sample std over the seeds listed; attended density as `train`",
        "reports it (soft attention: 1).",
        "",
        f"`{adv}`: `train` with `{' '.join(complement_flags(weight, density))}`, scored as trained",
        f"(`top_k` at {trained_at:g}) and under the relative rule at r = {ratio:g}, chosen on TREC and SST-2",
        f"validation (`{'README.md' if density is None else f'README_rho{density:g}.md'}`: the largest "
        f"smallest accuracy gain over the defaults' `top_k` 0.3, {100 * choice['smallest_gain']:+.2f} points,",
        "among the r that attend no more). The other rows are `experiments/adaptive_real.py`'s runs of the",
        "same seeds (`results/adaptive_real/README.md`)"
        + (f"; its relative r = {default_ratio:g} was chosen there." if default_ratio is not None else "."),
        "",
        "| dataset | role | model / test rule | seeds | accuracy | attended density | vs defaults (points) |",
        "|---|---|---|---|---|---|---|",
    ]
    for dataset, by_seed in scores.items():
        seeds = sorted(seed for seed, found in by_seed.items() if found)
        if not seeds:
            continue
        role = adaptive_real._role(dataset)
        rows = [
            ("rho0.3", "GA-Net defaults, top_k 0.3"),
            *(
                [(f"relative{default_ratio:g}@{adaptive_real.DEFAULT}", f"GA-Net defaults, relative {default_ratio:g}")]
                if default_ratio is not None
                else []
            ),
            ("soft", "soft attention"),
            ("sparsemax", "sparsemax attention"),
            ("entmax", "1.5-entmax attention"),
        ]
        reference = adaptive_real.per_seed(records, dataset, "rho0.3")
        base = np.mean([reference[s]["accuracy"] for s in seeds]) if all(s in reference for s in seeds) else None

        def row(label, points, dataset=dataset, role=role, seeds=seeds, base=base):
            accuracy, attended = _cell(points)
            gain = "-" if base is None else f"{100 * (np.mean([p['accuracy'] for p in points]) - base):+.2f}"
            return f"| {dataset} | {role} | {label} | {seed_text(seeds)} | {accuracy} | {attended} | {gain} |"

        for name, label in rows:
            found = adaptive_real.per_seed(records, dataset, name)
            if all(seed in found for seed in seeds):
                lines.append(row(label, [found[seed] for seed in seeds]))
        lines.append(row(f"`{adv}`, top_k {trained_at:g} (as trained)", [by_seed[s]["top_k"] for s in seeds]))
        lines.append(row(f"`{adv}`, relative {ratio:g} (chosen)", [by_seed[s]["relative"] for s in seeds]))
    return lines


def seed_text(seeds):
    return ",".join(str(seed) for seed in seeds)


def table(root, results, datasets, seeds, weight, density=None):
    adv = setting_name(weight, density)
    lines = [
        "# The adversarial complement on TREC and SST-2, validation (issue 39)",
        "",
        f"Written by `python -m experiments table complement` on {_machine(root)}; {_runs(weight, density)}",
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


def _machine(root):
    return recorded_machine(os.path.join(root, FOLDER, "runs"))


def _runs(weight, density, test=False):
    """The command of the runs of a table: `runs: python -m experiments run complement -- ...`."""
    flags = [*([f"--complement-weight {weight:g}"] if weight != 1 else [])]
    flags += [*([f"--target-density {density:g}"] if density is not None else []), *(["--test"] if test else [])]
    return "runs: `python -m experiments run complement" + (" -- " + " ".join(flags) if flags else "") + "`"


def write(root, weight=1.0, density=None, test=False, data_dir=None, **given):
    """The validation table of the complement at `weight` and `density`
    (`README.md`, or `README_rhoRHO.md`) and, with `test`, its test table,
    under the results root `root`. With `data_dir` it trains what is missing
    and scores what is not cached (`given`: `datasets`, `seeds`,
    `test_datasets`, `test_seeds`); without, it reads the cached scores."""
    datasets, seeds = given.get("datasets", adaptive_real.TUNING), given.get("seeds", (0, 1, 2))
    for dataset in datasets if data_dir else ():
        for seed in seeds:
            train(dataset, seed, weight, density, data_dir)
    results = {
        d: {seed: validation_scores(root, d, seed, weight, density, data_dir) for seed in seeds} for d in datasets
    }
    name = "README.md" if density is None else f"README_rho{density:g}.md"
    write_text(os.path.join(root, FOLDER, name), table(root, results, datasets, seeds, weight, density))
    if not test:
        return
    if sorted(datasets) != sorted(adaptive_real.TUNING):
        raise SystemExit("error: --test chooses r on every tuning dataset: leave --datasets at trec sst2")
    choice = validation_choice(results, seeds, weight, density)
    scores = {}
    test_seeds = given.get("test_seeds") or seeds
    for dataset in [d for d in adaptive_real.DATASETS if d in given.get("test_datasets", ("trec", "sst2", "sst1"))]:
        for seed in test_seeds if data_dir else ():
            train(dataset, seed, weight, density, data_dir)
        scored = sorted(set(seeds) | set(test_seeds))  # every seed with a model: others are left out
        scores[dataset] = {
            seed: test_scores(root, dataset, seed, weight, density, data_dir, choice["ratio"]) for seed in scored
        }
    lines = test_table(root, scores, choice, weight, density)
    write_text(os.path.join(root, FOLDER, name.replace(".md", "_test.md")), lines)


def main():
    parser = adaptive_real.data_flags(
        argparse.ArgumentParser(description=__doc__.splitlines()[0]), adaptive_real.TUNING
    )
    parser.add_argument("--complement-weight", type=float, default=1.0)
    parser.add_argument("--target-density", type=float, help="the complement runs' --target-density (default 0.3)")
    parser.add_argument("--test", action="store_true", help="then choose r on validation and report the test split")
    parser.add_argument(
        "--test-datasets",
        nargs="+",
        choices=adaptive_real.DATASETS,
        default=["trec", "sst2", "sst1"],
        help="datasets of the --test table (default: trec sst2 sst1)",
    )
    parser.add_argument("--test-seeds", type=int, nargs="+", help="seeds of the --test table (default: --seeds)")
    args = parser.parse_args()
    if not args.complement_weight > 0:
        parser.error(f"--complement-weight must be > 0, got {args.complement_weight}")
    given = {k: getattr(args, k) for k in ("datasets", "seeds", "test_datasets", "test_seeds")}
    write(os.path.join(REPO, "results"), args.complement_weight, args.target_density, args.test, args.data_dir, **given)


if __name__ == "__main__":
    main()
