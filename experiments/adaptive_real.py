"""Adaptive test gates on real data: the relative rule against top_k, sparsemax, entmax and soft (issue 39).

    python -m experiments run adaptive_real [--data-dir ../shared/data] [--only 'trec_*']
    python -m experiments table adaptive_real
    # a smoke run:
    python -m experiments run adaptive_real --results /tmp/D/results --models /tmp/D/runs -- --limit 200 --epochs 1

The runs are declared in `experiments/studies.py`; this module rescores
them (`after_run`, after each run) and writes the tables (`write_tables`).
Per dataset and seed, `python -m ganet_tf train` trains GA-Net with the
defaults at `--target-density` 0.1, 0.3 (the defaults) and 0.5, with
`--inference-mode top_k`, whose test gates at the same rho give three points of the
`top_k` accuracy-density curve, and `--model soft`, `--model sparsemax`
and `--model entmax`. The relative rule (`GateSampler(inference_mode=
"relative", inference_ratio=r)`: open t where p_t >= r max p) is not
trained: the gate probabilities do not depend on the test rule, so the
target-0.3 model, the one `train` gives, is scored again under `relative`
at every r of `RATIOS` (`ganet_tf.models.with_gate_inference`), on the
validation split and on the test split, which gives the rule's curve.
Scores are those of `train` itself (`ganet_tf.training.evaluate.
evaluate_model`: accuracy, attended density = share of real tokens with
attention weight > 0, all-closed rate).

ONE r for every dataset is chosen on VALIDATION scores of TREC and SST-2
only (SST-1 and IMDB are held out of every choice, as in
`results/gate_check/`), means over the seeds that have run: among the r
whose validation attended density is no more than `top_k` 0.3's (the same
models) on each of them, the r with the largest smallest accuracy gain over
`top_k` 0.3; ties go to the larger r (fewer tokens). That is the first
Done-when condition of the issue (at least as accurate as `top_k` at the
same or lower density) asked of validation data. The synthetic family
chose r = 0.65 (`results/adaptive_gates/`); it is one value of the grid,
not a prior. The per-text attended density of the test texts against
their length is binned for `top_k` 0.3 and the chosen r (same models). Test
scores are then reported against the Done-when conditions, computed:
against `top_k` the `top_k` curve (means over seeds) is interpolated
linearly in attended density at the relative rule's density (below the
curve's least density its least-density point is the comparison, which
attends more; above its greatest one there is no comparison: that counts
as not met); against soft attention the accuracy may be at most 1 point
lower (soft attention weighs every real token: density 1); against
sparsemax and entmax the accuracy must be higher at no more attended
density. Nothing here changes a default: the README says whether
validation favours the rule over `top_k` 0.3.

`results/gate_check/runs/` holds runs of the same datasets, seeds and
flags: soft attention everywhere, `--target-density` 0.1 and 0.5 on TREC,
SST-2 and IMDB. Only their summaries were kept, which is all these rows
need, so such a run is copied (`copied_from` in its summary) when its
config equals the one wanted once the config fields added to `train` after
it are set to their defaults (which reproduce the older behaviour); about
10 hours of IMDB training saved. The target-0.3 runs are always trained
here (their models are rescored); each is compared with gate_check's run
of the same config (`train` is deterministic for a config and seed on one
machine), a check that the copies still stand for the current code
(README: "Copies"). Under another results root (without gate_check's
summaries) everything is trained, and then the chosen r also rescores the
0.1 and 0.5 models (extra rows).

IMDB runs use the IMDB setting of `experiments/reproduce.py`
(`--sequence-length 400 --dropout 0.5 --buckets 8 --epochs 8 --patience
2`) and keep a training backup, so a killed command resumes where it
stopped. Finished runs are not trained again, a run that another process
is training is skipped (`experiments/runner.py`), and rescored scores are
cached per dataset and seed (`rescored/`), written after each rule.

Outputs under `results/adaptive_real/`: `runs/NAME.json` (train summaries
with command and machine), `rescored/DATASET_seedS.json`, `curves.json`
(the points of every curve and the per-text densities by length),
`copies.json` (whether the target-0.3 runs repeat gate_check's,
checked after training), `README.md` (tables and checks) and `curves.png`; models under the
git-ignored `runs/adaptive_real/`. Datasets go cheap ones first, each
with all its seeds.
"""

import os

import numpy as np

from experiments import studies
from experiments.runner import REPO
from experiments.runner import load_runs
from experiments.runner import read_json
from experiments.runner import recorded_machine
from experiments.runner import same_run
from experiments.runner import write_json
from experiments.runner import write_results_readme
from experiments.studies import ADAPTIVE_SETTINGS as SETTINGS
from experiments.studies import IMDB
from experiments.studies import REAL_DATASETS as DATASETS
from experiments.studies import TUNING

RESULTS = os.path.join("results", "adaptive_real")
MODELS = os.path.join("runs", "adaptive_real")
DENSITIES = (0.1, 0.3, 0.5)
DEFAULT = "rho0.3"
BASELINES = ("soft", "sparsemax", "entmax")
RATIOS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.8, 0.9, 0.95)
# Left edges of the text-length bins (real tokens) of the per-text densities.
LENGTH_EDGES = (1, 5, 10, 15, 20, 30, 50, 100, 200, 400)
COPIES = "copies.json"  # check_copies' verdict
GATE_CHECK = ("gate_check", "runs")  # the runs copied (beside results/adaptive_real)
SCORES = ("accuracy", "attended_density", "density", "all_closed_rate")


def run_name(dataset, setting, seed):
    return f"{dataset}_{setting}_seed{seed}"


def train_flags(dataset, setting, seed, data_dir, options=()):
    """The `train` flags of one run, as `python -m experiments run adaptive_real` gives them."""
    point = {"dataset": dataset, "seed": seed, "setting": setting}
    return [*studies.STUDIES["adaptive_real"].run_flags(point, data_dir), *options]


def rule_key(mode, value):
    return f"{mode}:{value:g}"


_CACHES = {}  # cache file -> its scores, shared by every Rescorer of that file


class Rescorer:
    """Scores one trained run's model (`models/NAME`, trained with `flags`)
    under other test-gate rules, on the validation and test splits of its
    own config, caching each result in the JSON file `cache_path` under
    `setting` (written after each rule). Without the model (a checkout has
    the summaries and caches, not the git-ignored models), or with
    `cached_only`, only cached scores are given, and None for the others.
    `adaptive_real`, `nucleus_real` and `complement_real` all score with it."""

    def __init__(self, cache_path, name, setting, flags, models=MODELS, cached_only=False):
        self.run_dir, self.flags, self.setting = os.path.join(REPO, models, name), flags, setting
        if cache_path not in _CACHES:
            _CACHES[cache_path] = read_json(cache_path, {})
        self.cache = _CACHES[cache_path]
        self.save = lambda: write_json(cache_path, self.cache)
        self._loaded = None
        self.has_model = not cached_only and os.path.isfile(os.path.join(self.run_dir, "model.keras"))

    def grid(self, split, mode, values):
        """`{value: score(split, mode, value)}` for each of `values`."""
        return {value: self.score(split, mode, value) for value in values}

    def _load(self):
        if self._loaded is None:
            from ganet_tf.cli import _config_from
            from ganet_tf.cli import build_parser
            from ganet_tf.data.vectorizer import vectorize
            from ganet_tf.training.prepare import load_splits
            from ganet_tf.training.trained_run import load_run

            model, vectorizer, class_names = load_run(self.run_dir)
            splits = load_splits(_config_from(build_parser().parse_args(["train", *self.flags])))
            if list(splits.class_names) != list(class_names):
                raise SystemExit(f"error: {self.run_dir} has other classes than its dataset: retrain it")
            data = {
                split: (vectorize(vectorizer, getattr(splits, f"{split}_texts")), getattr(splits, f"{split}_labels"))
                for split in ("validation", "test")
            }
            self._loaded = model, class_names, data
        return self._loaded

    def _cached(self, section, mode, value, compute):
        """`cache[setting][section][mode:value]`, computed by
        `compute(class_names, data, served model)` when missing and scorable."""
        entry = self.cache.setdefault(self.setting, {}).setdefault(section, {})
        key = rule_key(mode, value)
        if key not in entry and not self.has_model:
            return None
        if key not in entry:
            from ganet_tf.layers.gate_sampler import MODE_PARAMETERS
            from ganet_tf.models import with_gate_inference

            model, class_names, data = self._load()
            entry[key] = compute(class_names, data, with_gate_inference(model, mode, **{MODE_PARAMETERS[mode]: value}))
            self.save()
        return entry[key]

    def score(self, split, mode, value):
        """The scores of `evaluate_model` under `mode` at `value`, cached."""

        def compute(class_names, data, served):
            from ganet_tf.training.evaluate import evaluate_model

            scores = evaluate_model(served, *data[split], class_names)
            return {name: scores[name] for name in SCORES}

        return self._cached(split, mode, value, compute)

    def lengths(self, mode, value):
        """Test texts binned by length (`LENGTH_EDGES`): per bin, the number
        of texts and the sum of their attended densities, under `mode`,
        cached; None when neither cached nor scorable."""

        def compute(class_names, data, served):
            from ganet_tf.models import build_explainer

            ids = data["test"][0]
            attention = build_explainer(served).predict(ids, batch_size=128, verbose=0)["attention"]
            return length_bins(ids != 0, attention > 0)

        return self._cached("test_by_length", mode, value, compute)


def length_bins(real, attended):
    """Per length bin of `LENGTH_EDGES`: texts, sum of attended densities
    (attended real tokens / real tokens); texts without a real token left out."""
    lengths = real.sum(axis=1)
    keep = lengths > 0
    density = (attended & real).sum(axis=1)[keep] / lengths[keep]
    bins = np.digitize(lengths[keep], LENGTH_EDGES) - 1
    return {
        "texts": [int(np.sum(bins == b)) for b in range(len(LENGTH_EDGES))],
        "density_sum": [float(density[bins == b].sum()) for b in range(len(LENGTH_EDGES))],
    }


def rescore(dataset, seed, where, chosen):
    """Rescores the runs of `dataset` and `seed` that have a model: the
    target-0.3 model under every r (validation on the tuning datasets, test
    everywhere); with `chosen` r, the 0.1 and 0.5 models under it and the
    per-text densities of top_k 0.3 and relative r. `where`: the results
    folder, the models root, the data folder and the runs' added flags."""
    results, models, data_dir, options = where
    path = os.path.join(results, "rescored", f"{dataset}_seed{seed}.json")

    def rescorer(setting):
        name = run_name(dataset, setting, seed)
        if not os.path.exists(os.path.join(results, "runs", f"{name}.json")):
            return None
        return Rescorer(path, name, setting, train_flags(dataset, setting, seed, data_dir, options), models)

    default = rescorer(DEFAULT)
    if default is None:
        return
    if dataset in TUNING:
        default.grid("validation", "relative", RATIOS)
    default.grid("test", "relative", RATIOS)
    if chosen is None:
        return
    default.lengths("top_k", 0.3)
    default.lengths("relative", chosen)
    for setting in ("rho0.1", "rho0.5"):
        other = rescorer(setting)
        if other is not None:
            other.score("test", "relative", chosen)


# --- the choice of r and the tables, from the saved summaries ---------------


def collect(results, datasets):
    """{dataset: {seed: {"runs": {setting: summary}, "rescored": {...}}}}."""
    runs = [r for r in load_runs(os.path.join(results, "runs")) if r.get("setting") in SETTINGS]
    records = {}
    for dataset in datasets:
        for run in runs:
            if run["dataset"] == dataset:
                record = records.setdefault(dataset, {}).setdefault(run["seed"], {"runs": {}})
                record["runs"][run["setting"]] = run
        for seed, record in records.get(dataset, {}).items():
            record["rescored"] = read_json(os.path.join(results, "rescored", f"{dataset}_seed{seed}.json"), {})
    return records


def relative_scores(record, split, ratio, setting=DEFAULT):
    return record.get("rescored", {}).get(setting, {}).get(split, {}).get(rule_key("relative", ratio))


def validation_grid(records):
    """{dataset: {"seeds", "top_k": (acc, density), ratio: (acc, density)}}
    on validation, means over the seeds with the whole grid scored."""
    grid = {}
    for dataset in TUNING:
        seeds = [
            seed
            for seed, record in sorted(records.get(dataset, {}).items())
            if DEFAULT in record["runs"] and all(relative_scores(record, "validation", r) for r in RATIOS)
        ]
        if not seeds:
            continue
        chosen = [records[dataset][seed] for seed in seeds]
        top_k = [
            (r["runs"][DEFAULT]["validation_accuracy"], r["runs"][DEFAULT]["validation_attended_density"])
            for r in chosen
        ]
        grid[dataset] = {"seeds": seeds, "top_k": tuple(np.mean(top_k, axis=0))}
        for ratio in RATIOS:
            points = [relative_scores(r, "validation", ratio) for r in chosen]
            grid[dataset][ratio] = tuple(np.mean([(p["accuracy"], p["attended_density"]) for p in points], axis=0))
    return grid


def choose_ratio(grid, ratios=RATIOS):
    """The r of `ratios` chosen on the validation `grid` (see the module
    docstring): `{"ratio", "smallest_gain", "eligible", "favours_relative"}`,
    or None without validation scores. `eligible` lists the r whose density
    is no more than top_k's on every dataset; without any, the r of least
    largest density is taken."""
    if not grid:
        return None
    datasets = sorted(grid)

    def gain(ratio):
        return min(grid[d][ratio][0] - grid[d]["top_k"][0] for d in datasets)

    eligible = [r for r in ratios if all(grid[d][r][1] <= grid[d]["top_k"][1] for d in datasets)]
    if eligible:
        ratio = max(eligible, key=lambda r: (round(gain(r), 9), r))
    else:
        ratio = min(ratios, key=lambda r: max(grid[d][r][1] for d in datasets))
    return {
        "ratio": ratio,
        "smallest_gain": float(gain(ratio)),
        "eligible": eligible,
        "datasets": datasets,
        "seeds": {d: grid[d]["seeds"] for d in datasets},
        "favours_relative": bool(eligible and gain(ratio) >= 0),
    }


def per_seed(records, dataset, name):
    """{seed: {"accuracy", "density", "all_closed"}} of `name` on the test
    split: a setting of `SETTINGS`, or "relativeR@SETTING" (rescored)."""
    found = {}
    for seed, record in sorted(records.get(dataset, {}).items()):
        if name in SETTINGS and name in record["runs"]:
            run = record["runs"][name]
            found[seed] = {
                "accuracy": run["test_accuracy"],
                # softmax weighs every real token; sparse runs store theirs
                "density": 1.0 if name == "soft" else run["test_attended_density"],
                "all_closed": run.get("test_all_closed_rate"),
            }
        elif name.startswith("relative"):
            ratio, setting = name[len("relative") :].split("@")
            scored = relative_scores(record, "test", float(ratio), setting)
            if scored:
                found[seed] = {
                    "accuracy": scored["accuracy"],
                    "density": scored["attended_density"],
                    "all_closed": scored["all_closed_rate"],
                }
    return found


def point_names(ratio):
    """The names of `per_seed` that make a dataset's points."""
    names = [*SETTINGS, *(f"relative{r:g}@{DEFAULT}" for r in RATIOS)]
    if ratio is not None:
        names += [f"relative{ratio:g}@{setting}" for setting in ("rho0.1", "rho0.5")]
    return names


def dataset_points(records, dataset, ratio):
    """{name: {"seeds", "accuracy", "accuracy_std", "density", "all_closed"}}
    of `dataset`'s test points, means over the seeds that have them."""
    points = {}
    for name in point_names(ratio):
        found = per_seed(records, dataset, name)
        if not found:
            continue
        points[name] = mean_point(found)
    return points


def mean_point(found):
    """The point of per-seed scores `{seed: {"accuracy", "density",
    "all_closed"}}`: `{"seeds", "accuracy", "accuracy_std", "density",
    "all_closed"}`, means over the seeds."""
    values = list(found.values())
    accuracies = [v["accuracy"] for v in values]
    closed = [v["all_closed"] for v in values if v["all_closed"] is not None]
    return {
        "seeds": list(found),
        "accuracy": float(np.mean(accuracies)),
        "accuracy_std": float(np.std(accuracies, ddof=1)) if len(values) > 1 else None,
        "density": float(np.mean([v["density"] for v in values])),
        "all_closed": float(np.mean(closed)) if closed else None,
    }


def top_k_at(points, density):
    """(accuracy, note) of the top_k curve (`rho*` points) at `density`:
    linear between its points; below them its least-density point; above
    them None."""
    curve = sorted((points[f"rho{rho}"]["density"], points[f"rho{rho}"]["accuracy"]) for rho in DENSITIES)
    if density <= curve[0][0]:
        return curve[0][1], f"top_k point of least density ({curve[0][0]:.3f})"
    if density > curve[-1][0]:
        return None, "attends more than every top_k point"
    for (d0, a0), (d1, a1) in zip(curve, curve[1:], strict=False):
        if d0 <= density <= d1:
            return a0 + (a1 - a0) * (density - d0) / (d1 - d0), "interpolated"
    raise AssertionError("unreachable")


def checks(points, ratio, name=None):
    """The Done-when comparisons of the relative rule at `ratio` (on the
    target-0.3 model; or of the point `name`) on one dataset's test points,
    or None if a point is missing."""
    relative = points.get(name or f"relative{ratio:g}@{DEFAULT}")
    needed = [f"rho{rho}" for rho in DENSITIES] + list(BASELINES)
    if relative is None or any(name not in points for name in needed):
        return None
    accuracy, density = relative["accuracy"], relative["density"]
    reference, note = top_k_at(points, density)
    result = {
        "seeds": relative["seeds"],
        "top_k": {
            "accuracy": reference,
            "note": note,
            "gap": None if reference is None else accuracy - reference,
            "met": bool(reference is not None and accuracy >= reference),
        },
        "soft": {"gap": accuracy - points["soft"]["accuracy"]},
    }
    result["soft"]["met"] = bool(result["soft"]["gap"] >= -0.01)
    for name in ("sparsemax", "entmax"):
        other = points[name]
        result[name] = {
            "gap": accuracy - other["accuracy"],
            "density": other["density"],
            "met": bool(accuracy > other["accuracy"] and density <= other["density"]),
        }
    return result


def paired_gain(records, dataset, ratio):
    """Per seed, relative r minus top_k 0.3 test accuracy (same models)."""
    gains = []
    for _, record in sorted(records.get(dataset, {}).items()):
        scored = relative_scores(record, "test", ratio)
        if scored and DEFAULT in record["runs"]:
            gains.append(scored["accuracy"] - record["runs"][DEFAULT]["test_accuracy"])
    return gains


def pooled_lengths(records, dataset, key):
    """The per-text densities by length of rule `key` on the target-0.3
    models, pooled over seeds (`pool_lengths`)."""
    found = {}
    for seed, record in sorted(records.get(dataset, {}).items()):
        entry = record.get("rescored", {}).get(DEFAULT, {}).get("test_by_length", {}).get(key)
        if entry:
            found[seed] = entry
    return pool_lengths(found)


def pool_lengths(entries):
    """`{seed: Rescorer.lengths entry}` pooled: `{"seeds", "texts" per bin,
    "mean_density" per bin (None for an empty bin)}`, or None without entries."""
    if not entries:
        return None
    texts, sums = np.zeros(len(LENGTH_EDGES)), np.zeros(len(LENGTH_EDGES))
    for entry in entries.values():
        texts += entry["texts"]
        sums += entry["density_sum"]
    means = [float(s / t) if t else None for s, t in zip(sums, texts, strict=True)]
    return {"seeds": list(entries), "texts": [int(t) for t in texts], "mean_density": means}


def _ratio_of(name):
    return float(name[len("relative") :].split("@")[0])


def _label(name, chosen):
    if name.startswith("rho"):
        return f"GA-Net, top_k at rho {name[3:]}" + (" (the defaults)" if name == DEFAULT else "")
    if name.startswith("relative"):
        setting = name.split("@")[1]
        mark = " (chosen)" if chosen is not None and _ratio_of(name) == chosen else ""
        return f"GA-Net rho {setting[3:]}, relative r = {_ratio_of(name):g}{mark}"
    return {"soft": "soft attention", "sparsemax": "sparsemax attention", "entmax": "1.5-entmax attention"}[name]


def _points_pm(points, name):
    return accuracy_pm(points[name])


def accuracy_pm(point):
    """A point's mean accuracy, with ` ± std` over its seeds when it has several."""
    std = "" if point["accuracy_std"] is None else f" ± {point['accuracy_std']:.4f}"
    return f"{point['accuracy']:.4f}{std}"


def _role(dataset):
    return "chooses r (validation)" if dataset in TUNING else "held out"


def choice_lines(grid, choice):
    if choice is None:
        return ["## The choice of r", "", "No validation scores of TREC or SST-2 yet: r is not chosen.", ""]
    where = "; ".join(f"{d} seeds {','.join(map(str, choice['seeds'][d]))}" for d in choice["datasets"])
    missing = [d for d in TUNING if d not in choice["datasets"]]
    lines = [
        "## The choice of r (validation scores of the target-0.3 models)",
        "",
        f"Chosen on {where}" + (f" (provisional: {', '.join(missing)} not run yet)" if missing else "") + ":",
        f"**r = {choice['ratio']:g}**; its smallest validation accuracy gain over `top_k` 0.3 (same models) is "
        f"{choice['smallest_gain'] * 100:+.2f} points; r with no more validation density than `top_k` 0.3 on "
        f"every dataset: {', '.join(f'{r:g}' for r in choice['eligible']) or 'none (r of least density taken)'}.",
        "Validation "
        + ("favours" if choice["favours_relative"] else "does not favour")
        + f" relative r = {choice['ratio']:g} over `top_k` 0.3, the test rule the models were trained with"
        " (at least as accurate at no more attended density on every dataset it was chosen on). This script"
        " changes no default.",
        "",
        "| rule | " + " | ".join(f"{d} accuracy | {d} attended density" for d in choice["datasets"]) + " |",
        "|---|" + "---|---|" * len(choice["datasets"]),
    ]
    for key in ("top_k", *RATIOS):
        name = "top_k 0.3 (as trained)" if key == "top_k" else f"relative {key:g}"
        cells = " | ".join(f"{grid[d][key][0]:.4f} | {grid[d][key][1]:.4f}" for d in choice["datasets"])
        lines.append(f"| {name} | {cells} |")
    return [*lines, ""]


def test_lines(all_points, ratio):
    lines = [
        "## Test scores",
        "",
        "Mean ± sample std over the seeds listed. Attended density: the share of real tokens with attention",
        "weight > 0 (mean over texts), as `train` reports it; soft attention weighs every real token (1).",
        "All-closed: texts whose gates are all closed (pooled by the fallback; the relative rule never has one).",
        "",
        "| dataset | role | model / test rule | seeds | accuracy | attended density | all-closed |",
        "|---|---|---|---|---|---|---|",
    ]
    for dataset, points in all_points.items():
        names = ["rho0.1", "rho0.3", "rho0.5"]
        if ratio is not None:
            names += [f"relative{ratio:g}@{s}" for s in ("rho0.3", "rho0.1", "rho0.5")]
        for name in [*names, *BASELINES]:
            if name not in points:
                continue
            p = points[name]
            closed = "-" if p["all_closed"] is None else f"{p['all_closed']:.4f}"
            lines.append(
                f"| {dataset} | {_role(dataset)} | {_label(name, ratio)} | {','.join(map(str, p['seeds']))} "
                f"| {_points_pm(points, name)} | {p['density']:.4f} | {closed} |"
            )
    return [*lines, ""]


def _met(check):
    return "met" if check["met"] else "NOT met"


def check_lines(all_checks, records, ratio):
    if ratio is None:
        return []
    lines = [
        f"## Done-when checks (test, relative r = {ratio:g} on the target-0.3 models)",
        "",
        "Against `top_k`: the accuracy of the `top_k` curve (rho 0.1, 0.3, 0.5; means over seeds) at the",
        "relative rule's attended density, linear between its points (below them: its least-density point).",
        "Against soft attention: at most 1 point lower. Against sparsemax / 1.5-entmax: more accurate at no",
        "more attended density. Last column: relative minus `top_k` 0.3 per seed (same models), mean ± std.",
        "",
        "| dataset | role | seeds | relative accuracy / density | top_k there | vs top_k | vs soft "
        "| vs sparsemax | vs entmax | paired gain over top_k 0.3 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    not_met = []
    for dataset, c in all_checks.items():
        if c is None:
            lines.append(f"| {dataset} | {_role(dataset)} | pending (a setting has no run yet) | | | | | | | |")
            continue
        relative = c["relative"]
        top_k = c["top_k"]
        there = "-" if top_k["accuracy"] is None else f"{top_k['accuracy']:.4f} ({top_k['note']})"
        gap = "" if top_k["gap"] is None else f" ({top_k['gap'] * 100:+.2f})"
        gains = [g * 100 for g in paired_gain(records, dataset, ratio)]
        paired = f"{np.mean(gains):+.2f}" + (f" ± {np.std(gains, ddof=1):.2f}" if len(gains) > 1 else "")
        cells = [
            f"{_met(top_k)}{gap}",
            f"{_met(c['soft'])} ({c['soft']['gap'] * 100:+.2f})",
            *(
                f"{_met(c[n])} ({c[n]['gap'] * 100:+.2f}; density {c[n]['density']:.3f})"
                for n in ("sparsemax", "entmax")
            ),
        ]
        seeds = ",".join(map(str, c["seeds"])) + ("" if len(c["seeds"]) >= 3 else " (3 wanted)")
        lines.append(
            f"| {dataset} | {_role(dataset)} | {seeds} | {relative['accuracy']:.4f} / {relative['density']:.4f} "
            f"| {there} | " + " | ".join(cells) + f" | {paired} points |"
        )
        not_met += [f"{dataset} ({name})" for name in ("top_k", "soft", "sparsemax", "entmax") if not c[name]["met"]]
    lines += ["", "Gaps in accuracy points (relative minus the other). " + _summary(all_checks, not_met), ""]
    return lines


def _summary(all_checks, not_met):
    done = [d for d, c in all_checks.items() if c is not None]
    if not done:
        return "No dataset has every run yet."
    head = f"Checked on {', '.join(done)}"
    if not not_met:
        return head + ": every condition is met."
    return head + "; not met: " + ", ".join(not_met) + "."


def section(title, text, header):
    """`## title`, the lines of `text`, then a table's header of `header` cells."""
    return [
        f"## {title}",
        "",
        *text,
        *([""] if text else []),
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]


def curve_lines(all_points, ratio):
    datasets = [d for d, points in all_points.items() if any(n.startswith("relative") for n in points)]
    if not datasets:
        return []
    lines = section(
        "The relative rule's test curve (target-0.3 models, means over seeds)",
        [
            "Every r of the grid on the test split, accuracy / attended density; the choice was made on",
            "validation only (table above). `top_k` 0.3 of the same models for comparison.",
        ],
        ["rule", *datasets],
    )
    rows = [("top_k 0.3", DEFAULT)] + [
        (f"relative {r:g}" + (" (chosen)" if r == ratio else ""), f"relative{r:g}@{DEFAULT}") for r in RATIOS
    ]
    for label, name in rows:
        cells = []
        for dataset in datasets:
            p = all_points[dataset].get(name)
            cells.append("-" if p is None else f"{p['accuracy']:.4f} / {p['density']:.3f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _bin_names():
    edges = [*LENGTH_EDGES, None]
    return [f"{lo}-{hi - 1}" if hi else f"{lo}+" for lo, hi in zip(edges, edges[1:], strict=False)]


def length_lines(by_length, ratio):
    if not by_length:
        return []
    names = _bin_names()
    lines = section(
        "Attended density per text against its length (test, target-0.3 models)",
        [
            "Texts binned by their real tokens (after the run's truncation), seeds pooled: mean attended density",
            "(texts in the bin).",
        ],
        ["dataset", "rule", "seeds", *names],
    )
    for dataset, rules in by_length.items():
        for key, entry in rules.items():
            lines.append(length_row(dataset, key.replace(":", " "), entry))
    return [*lines, ""]


def length_row(dataset, label, entry):
    """One table row of pooled per-text densities by length (`pool_lengths`):
    per bin the mean attended density and, in brackets, the texts."""
    cells = [
        "-" if mean is None else f"{mean:.3f} ({texts})"
        for mean, texts in zip(entry["mean_density"], entry["texts"], strict=True)
    ]
    seeds = ",".join(map(str, entry["seeds"]))
    return f"| {dataset} | {label} | {seeds} | " + " | ".join(cells) + " |"


def plot(all_points, by_length, ratio, path):
    """Accuracy against attended density per dataset (top row) and the
    per-text attended density against length (bottom row)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    datasets = list(all_points)
    figure, axes = pyplot.subplots(2, len(datasets), figsize=(4 * len(datasets), 7), squeeze=False)
    for column, dataset in enumerate(datasets):
        points, axis = all_points[dataset], axes[0][column]
        top_k = sorted(
            (points[n]["density"], points[n]["accuracy"]) for n in ("rho0.1", "rho0.3", "rho0.5") if n in points
        )
        if top_k:
            axis.plot(*zip(*top_k, strict=True), "o-", label="top_k rho 0.1/0.3/0.5")
        curve = [points[f"relative{r:g}@{DEFAULT}"] for r in RATIOS if f"relative{r:g}@{DEFAULT}" in points]
        if curve:
            axis.plot([p["density"] for p in curve], [p["accuracy"] for p in curve], ".-", label="relative r (rho 0.3)")
        if ratio is not None and f"relative{ratio:g}@{DEFAULT}" in points:
            p = points[f"relative{ratio:g}@{DEFAULT}"]
            axis.plot(p["density"], p["accuracy"], "*", markersize=14, label=f"relative r = {ratio:g} (chosen)")
        for name, marker in (("sparsemax", "s"), ("entmax", "^"), ("soft", "x")):
            if name in points:
                axis.plot(points[name]["density"], points[name]["accuracy"], marker, markersize=8, label=name)
        axis.set(title=f"{dataset} (test)", xlabel="attended density", ylabel="accuracy", xlim=(0, 1.05))
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=7)
        axis = axes[1][column]
        for key, entry in by_length.get(dataset, {}).items():
            shown = [(lo, m) for lo, m in zip(LENGTH_EDGES, entry["mean_density"], strict=True) if m is not None]
            if shown:
                axis.plot(*zip(*shown, strict=True), "o-", label=key.replace(":", " "))
        axis.set(xscale="log", xlabel="text length (real tokens, bin start)", ylabel="attended density per text")
        axis.set_ylim(0, 1.05)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    pyplot.close(figure)


def _all_runs(records):
    return [run for seeds in records.values() for record in seeds.values() for run in record["runs"].values()]


def check_copies(results, records):
    """Whether the target-0.3 runs trained here repeat gate_check's runs of
    the same config (test accuracy, attended density, epochs), into
    `copies.json`: run after training, as it reads configs with `ganet_tf`;
    the tables read its verdict."""
    import shlex

    same, differ = [], []
    for run in _all_runs(records):
        if run["setting"] != DEFAULT or run.get("copied_from"):
            continue
        source = same_run(shlex.split(run["command"])[4:], [os.path.join(os.path.dirname(results), *GATE_CHECK)])
        if source:
            older = read_json(source)
            keys = ("test_accuracy", "test_attended_density", "epochs_trained")
            (same if all(older[k] == run[k] for k in keys) else differ).append(
                f"{run['name']} ({run['test_accuracy']:.4f} here, {older['test_accuracy']:.4f} in "
                f"{os.path.relpath(source, REPO)})"
            )
    write_json(os.path.join(results, COPIES), {"same": same, "differ": differ})


def copies_lines(results, records):
    """How many runs were copied from gate_check, and `check_copies`' verdict."""
    runs = _all_runs(records)
    copied = [run for run in runs if run.get("copied_from")]
    checked = read_json(os.path.join(results, COPIES), {})
    same, differ = checked.get("same", []), checked.get("differ", [])
    if not copied and not same and not differ:
        return []
    lines = [
        "## Copies",
        "",
        f"{len(copied)} of the {len(runs)} runs are copied from `results/gate_check/runs/` (same config; their",
        "`copied_from`). Target-0.3 runs trained here against gate_check's run of the same config (test accuracy,",
        f"attended density and epochs equal): {len(same)} equal"
        + (f" ({', '.join(same)})" if same else "")
        + f", {len(differ)} different"
        + (f" ({', '.join(differ)}: the copies may not stand for the current code)" if differ else "")
        + ".",
        "",
    ]
    return lines


def write_tables(results):
    """Chooses r and writes `curves.json`, `README.md` and `curves.png` from
    the saved summaries and rescored scores; returns the chosen r or None."""
    records = collect(results, DATASETS)
    grid = validation_grid(records)
    choice = choose_ratio(grid)
    ratio = None if choice is None else choice["ratio"]
    all_points = {d: dataset_points(records, d, ratio) for d in DATASETS if records.get(d)}
    all_checks = {d: None if ratio is None else checks(points, ratio) for d, points in all_points.items()}
    for dataset, c in all_checks.items():
        if c is not None:
            c["relative"] = all_points[dataset][f"relative{ratio:g}@{DEFAULT}"]
    by_length = {}
    for dataset in all_points:
        for key in ("top_k:0.3", None if ratio is None else rule_key("relative", ratio)):
            pooled = pooled_lengths(records, dataset, key) if key else None
            if pooled:
                by_length.setdefault(dataset, {})[key] = pooled
    curves = {
        "machine": recorded_machine(os.path.join(results, "runs")),
        "ratios": list(RATIOS),
        "length_edges": list(LENGTH_EDGES),
        "choice": choice,
        "validation": {d: {str(k): v for k, v in g.items()} for d, g in grid.items()},
        "test": all_points,
        "checks": all_checks,
        "by_length": by_length,
    }
    write_json(os.path.join(results, "curves.json"), curves)
    head = [
        "# Adaptive test gates on real data (issue 39)",
        "",
        "Written by `python -m experiments table adaptive_real` (the design: `experiments/adaptive_real.py`'s",
        f"docstring) on {curves['machine']}, shared with other jobs. GA-Net is trained with the defaults of `train` at",
        "`--target-density` 0.1, 0.3 (the defaults) and 0.5, `top_k` test gates at the same rho; the target-0.3",
        "models are scored again under the relative rule (open t where p_t >= r max p) at every r of the grid",
        "(`with_gate_inference`, no retraining). One r for all datasets is chosen on TREC and SST-2 validation",
        "scores; SST-1 and IMDB are held out of every choice. Soft, sparsemax and 1.5-entmax attention are",
        "trained with the same flags. IMDB: `" + " ".join(IMDB) + "`.",
        "The nucleus rule, scored the same way on the same models: [nucleus/README.md](nucleus/README.md)",
        "(`experiments/nucleus_real.py`).",
        "",
    ]
    tail = []
    if all_points:
        try:
            plot(all_points, by_length, ratio, os.path.join(results, "curves.png"))
            tail = ["![accuracy against attended density; attended density per text by length](curves.png)", ""]
        except ImportError:
            tail = ["No plot: matplotlib is not installed (`curves.json` holds the points).", ""]
    lines = [
        *head,
        *choice_lines(grid, choice),
        *test_lines(all_points, ratio),
        *check_lines(all_checks, records, ratio),
        *curve_lines(all_points, ratio),
        *length_lines(by_length, ratio),
        *copies_lines(results, records),
        *tail,
    ]
    order = lambda run: (DATASETS.index(run["dataset"]), run["seed"], list(SETTINGS).index(run["setting"]))  # noqa: E731
    runs = sorted(_all_runs(records), key=order)
    write_results_readme(results, lines, runs)
    return ratio


def after_run(study, point, summary, context):
    """After each run of `python -m experiments run adaptive_real`: every
    dataset and seed with a target-0.3 run is rescored under every r, r is
    chosen on the validation scores, and they are rescored under it; a new
    target-0.3 run is checked against gate_check's (`check_copies`)."""
    results = os.path.dirname(context["runs_dir"])
    where = (results, context["out_root"], os.path.abspath(context["data_dir"]), context["options"])
    finished = [r for r in load_runs(context["runs_dir"]) if r.get("setting") == DEFAULT]
    pairs = sorted({(r["dataset"], r["seed"]) for r in finished}, key=lambda p: (DATASETS.index(p[0]), p[1]))
    for dataset, seed in pairs:
        rescore(dataset, seed, where, None)
    records = collect(results, DATASETS)
    if point["setting"] == DEFAULT:
        check_copies(results, records)
    choice = choose_ratio(validation_grid(records))
    for dataset, seed in pairs if choice else ():
        rescore(dataset, seed, where, choice["ratio"])
    return None


def data_flags(parser, datasets=DATASETS):
    """`--data-dir`, `--datasets` (of `datasets`, all by default) and `--seeds` (0 1 2)."""
    parser.add_argument("--data-dir", default=os.environ.get("GANET_DATA_DIR", "../shared/data"))
    parser.add_argument("--datasets", nargs="+", choices=datasets, default=list(datasets))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    return parser
