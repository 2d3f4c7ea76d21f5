"""The nucleus rule on real data (issue 39): `adaptive_real`'s target-0.3 models (nothing is trained)
scored under nucleus at every pi of `MASSES` (its `Rescorer`), ONE pi chosen on TREC and SST-2
validation (`adaptive_real.choose_ratio`), the test split scored at it and checked (`adaptive_real.checks`).
Writes `rescored/` and the tables of `results/adaptive_real/nucleus/README.md`.

    python -m experiments run nucleus_real      # scores adaptive_real's models (run that first)
    python -m experiments table nucleus_real    # from the cached scores
"""

import argparse
import os

from experiments import adaptive_real as real
from experiments.runner import REPO
from experiments.runner import recorded_machine
from experiments.tables import fill
from experiments.tables import grid

FOLDER = os.path.join("adaptive_real", "nucleus")  # under the results root
MASSES = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def choice_lines(means, choice):
    """The choice of pi on the validation `means` (`{dataset: mean_grid}`) and their table."""
    seeds = "; ".join(f"{d} seeds {','.join(map(str, means[d]['seeds']))}" for d in sorted(means))
    text = [
        f"Chosen on {seeds}: **pi = {choice['ratio']:g}**, its smallest validation accuracy gain over `top_k`",
        f"0.3 (same models) {100 * choice['smallest_gain']:+.2f} points; pi attending no more than `top_k` 0.3 on"
        f" every dataset: {', '.join(f'{m:g}' for m in choice['eligible']) or 'none'}.",
        f"Validation {'favours' if choice['favours_relative'] else 'does not favour'} nucleus pi ="
        f" {choice['ratio']:g} over `top_k` 0.3, the test rule the models were trained with (at least as accurate"
        " at no more attended density on every dataset it was chosen on). On this evidence `train`'s default"
        " test rule is nucleus at pi = rho (`docs/gates.md`); this script changes no default itself.",
        "",
    ]
    rows = [
        ["top_k 0.3 (as trained)" if key == "top_k" else f"nucleus {key:g}"]
        + [f"{means[d][key][0]:.4f} / {means[d][key][1]:.3f}" for d in sorted(means)]
        for key in ("top_k", *MASSES)
    ]
    return text + grid(["rule", *(f"{d} accuracy / attended density" for d in sorted(means))], rows)


def _check_cell(part):
    if not part:
        return "-"
    mark = "met" if part["met"] else "NOT met"
    return mark if part["gap"] is None else f"{mark} ({100 * part['gap']:+.2f})"


def test_rows(dataset, records, scorers, mass, ratio):
    """The test rows of `dataset` (top_k 0.3, relative r, nucleus at `mass`, with their checks) and
    those of its per-text densities by length."""
    found = {seed: real.test_point(s) for seed, sc in scorers.items() if (s := sc.score("test", "nucleus", mass))}
    if not found:
        return [], []
    relative, nucleus = f"relative{ratio:g}@{real.DEFAULT}", f"nucleus{mass:g}"
    points = {**real.dataset_points(records, dataset, ratio), nucleus: real.mean_point(found)}
    labels = {real.DEFAULT: "top_k 0.3", relative: f"relative {ratio:g}", nucleus: f"nucleus {mass:g}"}
    rows = []
    for name, label in labels.items():
        p, check = points[name], name != real.DEFAULT and real.checks(points, name)
        label += {real.DEFAULT: " (as trained)", nucleus: " (chosen)"}.get(name, "")
        rows.append([dataset, real.role(dataset), label, ",".join(map(str, p["seeds"])), real.accuracy(p)])
        rows[-1] += [f"{p['density']:.3f}", *(_check_cell(check and check[n]) for n in ("top_k", *real.BASELINES))]
    lengths = [real.pooled_lengths(records, dataset, key) for key in ("top_k:0.3", real.rule_key("relative", ratio))]
    lengths.append(
        real.pool_lengths({s: e for s, sc in scorers.items() if (e := sc.score("test_by_length", "nucleus", mass))})
    )
    return rows, [real.length_row(dataset, label, e) for label, e in zip(labels.values(), lengths, strict=True) if e]


def write(root, data_dir=None):
    """Chooses pi on the validation scores and writes the tables under the results root `root`; with
    `data_dir`, scores what is not cached (models needed), else reads the cached scores only."""
    records = real.collect(os.path.join(root, "adaptive_real"))
    folder = os.path.join(root, FOLDER)
    scorers = {
        d: {
            seed: real.Rescorer(
                folder, d, seed, real.DEFAULT, data_dir and real.train_flags(d, real.DEFAULT, seed, data_dir)
            )
            for seed in seeds
        }
        for d, seeds in records.items()
    }
    means = real.validation_grid(records, lambda d, seed: scorers[d][seed].grid("validation", "nucleus", MASSES))
    choice = real.choose_ratio(means, MASSES)
    ratio = real.chosen_ratio(root)
    tests = [test_rows(d, records, scorers[d], choice["ratio"], ratio) for d in scorers]
    header = ["dataset", "role", "rule", "seeds", "accuracy", "attended density", "vs top_k", "vs soft"]
    machine = recorded_machine(os.path.join(root, "adaptive_real", "runs"))
    blocks = {
        "machine": [f"Written by `python -m experiments table nucleus_real` on {machine}"],
        "choice": choice_lines(means, choice),
        "ratio": [f"r = {ratio:g} and the other rows: `results/adaptive_real/README.md` (same runs). Checks as there:"],
        "test": grid([*header, "vs sparsemax", "vs entmax"], [row for rows, _ in tests for row in rows]),
        "lengths": grid(real.length_header(), [row for _, rows in tests for row in rows]),
    }
    fill(os.path.join(folder, "README.md"), blocks)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("GANET_DATA_DIR", "../shared/data"))
    write(os.path.join(REPO, "results"), os.path.abspath(parser.parse_args().data_dir))
