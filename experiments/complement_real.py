"""The adversarial complement on real data (issue 39): GA-Net with the defaults plus `--complement adversarial
--complement-weight 1` (setting `rhoRHO-adv1`) on TREC and SST-2, seeds 0-2, scored on validation beside
`adaptive_real`'s target-0.3 models, as trained and under the relative rule at every r: `README_rhoRHO.md` (0.3:
`README.md`). With `--test`, r is chosen on those scores and the setting, trained on SST-1 too, scored on test beside
`adaptive_real`'s runs: `README_rhoRHO_test.md`.

    python -m experiments run complement [-- --target-density 0.05 --test]
    python -m experiments table complement
"""

import argparse
import itertools
import os

from experiments import adaptive_real as real
from experiments.runner import REPO
from experiments.runner import read_json
from experiments.runner import recorded_machine
from experiments.runner import run_or_skip
from experiments.tables import fill
from experiments.tables import grid

FOLDER = os.path.join("adaptive_real", "complement")  # under the results root
RATIOS = (*real.RATIOS, 0.97, 0.98, 0.99)
SEEDS = (0, 1, 2)
TEST_DATASETS = ("trec", "sst2", "sst1")
VARIANTS = ((None, False), (0.05, True))  # the committed tables: (--target-density, --test)
DEFAULTS = False  # in place of a density: `adaptive_real`'s target-0.3 run, without the complement


def setting(density):
    return real.DEFAULT if density is DEFAULTS else f"rho{0.3 if density is None else density:g}-adv1"


def train_flags(dataset, seed, density, data_dir):
    """adaptive_real's target-0.3 flags, plus the complement's at `density` (DEFAULTS: none)."""
    extra = [] if density is DEFAULTS else ["--complement", "adversarial", "--complement-weight", "1"]
    extra += [] if density in (None, DEFAULTS) else ["--target-density", f"{density:g}"]
    return [*real.train_flags(dataset, real.DEFAULT, seed, data_dir), *extra]


def scored(root, dataset, seed, density, data_dir):
    """The run's summary (DEFAULTS: adaptive_real's) and its `Rescorer` (scoring only with `data_dir`)."""
    runs = os.path.join(root, "adaptive_real" if density is DEFAULTS else FOLDER, "runs")
    run = read_json(os.path.join(runs, f"{real.run_name(dataset, setting(density), seed)}.json"), None)
    flags = data_dir and train_flags(dataset, seed, density, data_dir)
    return run, real.Rescorer(os.path.join(root, FOLDER), dataset, seed, setting(density), flags)


def train(root, datasets, density, data_dir):
    for dataset, seed in itertools.product(datasets if data_dir else (), SEEDS):
        name, runs = real.run_name(dataset, setting(density), seed), os.path.join(root, FOLDER, "runs")
        flags = train_flags(dataset, seed, density, data_dir)
        run_or_skip(name, flags, runs, out_root=real.MODELS, extra={"setting": setting(density)})


def validation(root, density, data_dir):
    """`{(dataset, DEFAULTS or density): mean_grid}` of the validation scores, seeds 0-2."""
    grids = {}
    for dataset, key in itertools.product(real.TUNING, (DEFAULTS, density)):
        rows = {}
        for seed in SEEDS:
            run, rescorer = scored(root, dataset, seed, key, data_dir)
            scores = rescorer.grid("validation", "relative", RATIOS)
            if run is None or None in scores.values():
                raise SystemExit(f"No run or model of {dataset} seed {seed} to score: train it first.")
            rows[seed] = {"top_k": real.as_trained(run), **scores}
        grids[dataset, key] = real.mean_grid(rows)
    return grids


def written(root, density, test=False):
    """The line that names the table command, the machine and the command of the runs."""
    flags = [*([f"--target-density {density:g}"] if density is not None else []), *(["--test"] if test else [])]
    command = "python -m experiments run complement" + (" -- " + " ".join(flags) if flags else "")
    machine = recorded_machine(os.path.join(root, FOLDER, "runs"))
    return [f"Written by `python -m experiments table complement` on {machine}; runs: `{command}`"]


def test_blocks(root, density, choice, data_dir):
    """The `--test` README's blocks: the test scores of the complement as trained and at the chosen r, beside
    adaptive_real's runs of the same seeds."""
    records = real.collect(os.path.join(root, "adaptive_real"), TEST_DATASETS)
    adv, ratio, theirs = setting(density), choice["ratio"], real.choose_ratio(real.relative_grid(records))["ratio"]
    trained_at = 0.3 if density is None else density
    named = {
        "GA-Net defaults, top_k 0.3": real.DEFAULT,
        f"GA-Net defaults, relative {theirs:g}": f"relative{theirs:g}@{real.DEFAULT}",
        **{"soft attention": "soft", "sparsemax attention": "sparsemax", "1.5-entmax attention": "entmax"},
    }
    rows, trained, chosen = [], f"`{adv}`, top_k {trained_at:g} (as trained)", f"`{adv}`, relative {ratio:g} (chosen)"
    for dataset in TEST_DATASETS:
        found = {label: real.per_seed(records, dataset, name) for label, name in named.items()}
        found[trained], found[chosen] = {}, {}
        for seed in SEEDS:
            run, rescorer = scored(root, dataset, seed, density, data_dir)
            relative = run and rescorer.score("test", "relative", ratio)
            if relative:
                found[chosen][seed] = real.test_point(relative)
                found[trained][seed] = {"accuracy": run["test_accuracy"], "density": run["test_attended_density"]}
                found[trained][seed]["all_closed"] = None
        seeds = list(found[chosen])
        points = {
            label: real.mean_point({s: p[s] for s in seeds}) for label, p in found.items() if set(seeds) <= set(p)
        }
        for label, p in points.items() if seeds else ():
            gain = 100 * (p["accuracy"] - points["GA-Net defaults, top_k 0.3"]["accuracy"])
            cells = [real.accuracy(p), f"{p['density']:.3f}", f"{gain:+.2f}"]
            rows.append([dataset, real.role(dataset), label, ",".join(map(str, seeds)), *cells])
    text = [
        f"(`top_k` at {trained_at:g}) and under the relative rule at r = {ratio:g}, chosen on TREC and SST-2",
        f"validation (`{readme(density)}`: the largest smallest accuracy gain over the defaults' `top_k` 0.3, "
        f"{100 * choice['smallest_gain']:+.2f} points,",
        "among the r that attend no more). The other rows are `experiments/adaptive_real.py`'s runs of the",
        f"same seeds (`results/adaptive_real/README.md`); its relative r = {theirs:g} was chosen there.",
    ]
    header = ["dataset", "role", "model / test rule", "seeds", "accuracy", "attended density", "vs defaults (points)"]
    return {"written": written(root, density, True), "choice": text, "table": grid(header, rows)}


def readme(density):
    return "README.md" if density is None else f"README_rho{density:g}.md"


def write(root, density=None, test=False, data_dir=None):
    """The validation tables of the complement at `density` and, with `test`, its test tables, under the results root
    `root`; with `data_dir`, trains what is missing and scores what is not cached."""
    train(root, real.TUNING, density, data_dir)
    path = os.path.join(root, FOLDER, readme(density))
    grids = validation(root, density, data_dir)
    rows = [
        [dataset, "top_k (as trained)" if rule == "top_k" else f"relative {rule:g}"]
        + [f"{grids[dataset, key][rule][0]:.4f} / {grids[dataset, key][rule][1]:.3f}" for key in (DEFAULTS, density)]
        for dataset in real.TUNING
        for rule in ("top_k", *RATIOS)
    ]
    table = grid(["dataset", "rule", "`rho0.3`", f"`{setting(density)}`"], rows)
    fill(path, {"written": written(root, density), "table": table})
    if test:
        means = {d: {**grids[d, density], "top_k": grids[d, DEFAULTS]["top_k"]} for d in real.TUNING}
        choice = real.choose_ratio(means, RATIOS)
        train(root, TEST_DATASETS, density, data_dir)
        fill(path.replace(".md", "_test.md"), test_blocks(root, density, choice, data_dir))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("GANET_DATA_DIR", "../shared/data"))
    parser.add_argument("--target-density", type=float, help="the complement runs' --target-density (default 0.3)")
    parser.add_argument("--test", action="store_true", help="then choose r on validation and report the test split")
    args = parser.parse_args()
    write(os.path.join(REPO, "results"), args.target_density, args.test, os.path.abspath(args.data_dir))
