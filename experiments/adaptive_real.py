"""Adaptive test gates on real data (issue 39): GA-Net at target density 0.1, 0.3 and 0.5 (`top_k` test gates) beside
soft, sparsemax and 1.5-entmax; the target-0.3 models rescored (`Rescorer`) under the relative rule at every r of
`RATIOS` and the nucleus rule at every pi of `MASSES`, each chosen once on TREC and SST-2 validation (`choose_ratio`)
and checked on test (`checks`). Writes `rescored/`, `nucleus/rescored/`, `curves.json`, `curves.png` and the tables
of both READMEs (the copies' check read from the committed `copies.json`).

    python -m experiments run adaptive_real [--only 'trec_*']
    python -m experiments table adaptive_real nucleus_real
"""

import functools
import os

import numpy as np

from experiments import bench
from experiments import runner
from experiments import tables
from experiments.protocol import ADAPTIVE_SETTINGS as SETTINGS
from experiments.protocol import REAL_DATASETS as DATASETS
from experiments.protocol import TUNING

MODELS = os.path.join("runs", "adaptive_real")
DENSITIES = (0.1, 0.3, 0.5)
DEFAULT = "rho0.3"
BASELINES = ("soft", "sparsemax", "entmax")
RATIOS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.8, 0.9, 0.95)
MASSES = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)  # the nucleus rule's pi
LENGTH_EDGES = (1, 5, 10, 15, 20, 30, 50, 100, 200, 400)  # left edges of the text-length bins (real tokens)
SCORES = ("accuracy", "attended_density", "density", "all_closed_rate")


def role(dataset):
    return "chooses r (validation)" if dataset in TUNING else "held out"


_CACHES = {}  # cache file -> its scores, shared by every Rescorer of that file


class Rescorer:
    """Run `DATASET_SETTING_seedS`'s model scored under other test rules on its validation and test splits, cached in
    `folder/rescored/DATASET_seedS.json`; without `flags` (its `train` flags) or model, cached scores only."""

    def __init__(self, folder, dataset, seed, setting, flags=None):
        self.path = os.path.join(folder, "rescored", f"{dataset}_seed{seed}.json")
        self.cache = _CACHES.setdefault(self.path, runner.read_json(self.path, {}))
        self.setting, self.flags = setting, flags
        self.run_dir = os.path.join(runner.REPO, MODELS, f"{dataset}_{setting}_seed{seed}")
        self.has_model = flags is not None and os.path.isfile(os.path.join(self.run_dir, "model.keras"))

    def grid(self, split, mode, values):
        return {value: self.score(split, mode, value) for value in values}

    def score(self, split, mode, value):
        """`evaluate_model`'s scores on `split` under `mode` at `value` (None if not cached and no model); split
        `test_by_length`: the test texts' attended densities by length (`length_bins`)."""
        entry = self.cache.setdefault(self.setting, {}).setdefault(split, {})
        key = f"{mode}:{value:g}"
        if key not in entry and self.has_model:
            entry[key] = self._compute(split, mode, value)
            runner.write_json(self.path, self.cache)
        return entry.get(key)

    def _compute(self, split, mode, value):
        from ganet_tf.layers.gate_sampler import MODE_PARAMETERS
        from ganet_tf.models import build_explainer
        from ganet_tf.models import with_gate_inference
        from ganet_tf.training.evaluate import evaluate_model

        model, class_names, data = self._data
        served = with_gate_inference(model, mode, **{MODE_PARAMETERS[mode]: value})
        if split == "test_by_length":
            ids = data["test"][0]
            attention = build_explainer(served).predict(ids, batch_size=128, verbose=0)["attention"]
            return length_bins(ids != 0, attention > 0)
        scores = evaluate_model(served, *data[split], class_names)
        return {name: scores[name] for name in SCORES}

    @functools.cached_property
    def _data(self):
        """The model, its class names and `{split: (ids, labels)}` of its validation and test splits."""
        from ganet_tf.data.vectorizer import vectorize
        from ganet_tf.policy.trained_run import load_run
        from ganet_tf.training.prepare import load_splits

        model, vectorizer, class_names = load_run(self.run_dir)
        splits = load_splits(runner.parse_train(self.flags))
        if list(splits.class_names) != list(class_names):
            raise SystemExit(f"error: {self.run_dir} has other classes than its dataset: retrain it")
        ids = {split: vectorize(vectorizer, getattr(splits, f"{split}_texts")) for split in ("validation", "test")}
        return model, class_names, {split: (ids[split], getattr(splits, f"{split}_labels")) for split in ids}


def length_bins(real, attended):
    """Per bin of `LENGTH_EDGES`: texts, sum of attended densities (texts without a real token left out)."""
    lengths = real.sum(axis=1)
    keep = lengths > 0
    density = (attended & real).sum(axis=1)[keep] / lengths[keep]
    bins = np.digitize(lengths[keep], LENGTH_EDGES) - 1
    return {
        "texts": [int(np.sum(bins == b)) for b in range(len(LENGTH_EDGES))],
        "density_sum": [float(density[bins == b].sum()) for b in range(len(LENGTH_EDGES))],
    }


def pool_lengths(entries):
    """`{seed: length_bins}` pooled: `{"seeds", "texts", "mean_density"}` per bin, or None."""
    if not entries:
        return None
    texts = np.sum([e["texts"] for e in entries.values()], axis=0)
    sums = np.sum([e["density_sum"] for e in entries.values()], axis=0)
    means = [float(s / t) if t else None for s, t in zip(sums, texts, strict=True)]
    return {"seeds": list(entries), "texts": [int(t) for t in texts], "mean_density": means}


def choose_ratio(grid, ratios=RATIOS):
    """The value of `ratios` chosen on the validation `grid` (`{dataset: mean_grid}`): of those attending no more than
    `top_k` everywhere, the largest smallest accuracy gain over it (ties: the larger); else the least dense."""
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


def validation_grid(records, scores_of):
    """`{dataset: {"seeds", rule: (accuracy, attended density)}}` over `TUNING`, means over the seeds whose target-0.3
    run has every value of `scores_of(dataset, seed)` (`{value: validation scores}`) scored; `top_k`: as trained."""
    grids = {}
    for dataset in TUNING:
        rows = {}
        for seed, record in sorted(records.get(dataset, {}).items()):
            if DEFAULT in record["runs"] and all((scores := scores_of(dataset, seed)).values()):
                run = record["runs"][DEFAULT]
                rows[seed] = {"top_k": (run["validation_accuracy"], run["validation_attended_density"])}
                rows[seed].update({value: (s["accuracy"], s["attended_density"]) for value, s in scores.items()})
        if rows:
            means = {r: tuple(np.mean([row[r] for row in rows.values()], 0)) for r in next(iter(rows.values()))}
            grids[dataset] = {"seeds": list(rows), **means}
    return grids


def relative_grid(records):
    """The relative rule's validation grid (the cached scores of `rescore`)."""
    return validation_grid(records, lambda d, s: {r: relative_scores(records[d][s], "validation", r) for r in RATIOS})


def nucleus_grid(results, records):
    """The nucleus rule's validation grid (the cached scores in `results/nucleus/`)."""
    folder = os.path.join(results, "nucleus")
    return validation_grid(records, lambda d, s: Rescorer(folder, d, s, DEFAULT).grid("validation", "nucleus", MASSES))


def rescore(study, dataset, seed, where, chosen):
    """Scores the target-0.3 model under every r and pi (validation on `TUNING`; r on test everywhere); with `chosen`
    (r, pi): the 0.1 and 0.5 models under r, the test split under pi and the per-text densities of top_k 0.3, r and pi.
    `where`: the results folder, data folder, added flags."""
    results, data_dir, options = where

    def rescorer(setting, folder=results):
        if os.path.exists(os.path.join(results, "runs", f"{dataset}_{setting}_seed{seed}.json")):
            flags = study.run_flags({"dataset": dataset, "seed": seed, "setting": setting}, data_dir)
            return Rescorer(folder, dataset, seed, setting, [*flags, *options])

    default, nucleus = rescorer(DEFAULT), rescorer(DEFAULT, os.path.join(results, "nucleus"))
    if default is None:
        return
    for split in ("validation", "test") if dataset in TUNING else ("test",):
        default.grid(split, "relative", RATIOS)
    if dataset in TUNING:
        nucleus.grid("validation", "nucleus", MASSES)
    if chosen is None:
        return
    ratio, mass = chosen
    default.score("test_by_length", "top_k", 0.3)
    default.score("test_by_length", "relative", ratio)
    for other in filter(None, map(rescorer, ("rho0.1", "rho0.5"))):
        other.score("test", "relative", ratio)
    nucleus.score("test", "nucleus", mass)
    nucleus.score("test_by_length", "nucleus", mass)


def after_run(study, point, summary, context):
    """After each run: rescores every target-0.3 model under every r and pi, chooses both and rescores under them."""
    results = os.path.dirname(context["runs_dir"])
    where = (results, os.path.abspath(context["data_dir"]), context["options"])
    finished = [r for r in runner.load_runs(context["runs_dir"]) if r.get("setting") == DEFAULT]
    pairs = sorted({(r["dataset"], r["seed"]) for r in finished}, key=lambda p: (DATASETS.index(p[0]), p[1]))
    for dataset, seed in pairs:
        rescore(study, dataset, seed, where, None)
    records = collect(results)
    ratio, mass = choose_ratio(relative_grid(records)), choose_ratio(nucleus_grid(results, records), MASSES)
    for dataset, seed in pairs if ratio and mass else ():
        rescore(study, dataset, seed, where, (ratio["ratio"], mass["ratio"]))


def collect(results):
    """{dataset: {seed: {"runs": {setting: summary}, "rescored": {...}}}}."""
    records = {}
    for run in runner.load_runs(os.path.join(results, "runs")):
        if run.get("setting") in SETTINGS and run["dataset"] in DATASETS:
            record = records.setdefault(run["dataset"], {}).setdefault(run["seed"], {"runs": {}})
            record["runs"][run["setting"]] = run
    for dataset, seeds in records.items():
        for seed, record in seeds.items():
            record["rescored"] = runner.read_json(os.path.join(results, "rescored", f"{dataset}_seed{seed}.json"), {})
    return {d: records[d] for d in DATASETS if d in records}


def all_runs(records):
    return [run for seeds in records.values() for record in seeds.values() for run in record["runs"].values()]


def relative_scores(record, split, ratio, setting=DEFAULT):
    return record.get("rescored", {}).get(setting, {}).get(split, {}).get(f"relative:{ratio:g}")


def per_seed(records, dataset, name):
    """{seed: test_point} of `name`: a setting of `SETTINGS`, or "relativeR@SETTING" (rescored)."""
    found = {}
    for seed, record in sorted(records.get(dataset, {}).items()):
        if name in SETTINGS and name in record["runs"]:
            run = record["runs"][name]
            density = 1.0 if name == "soft" else run["test_attended_density"]  # softmax weighs every token
            found[seed] = {"accuracy": run["test_accuracy"], "density": density}
            found[seed]["all_closed"] = run.get("test_all_closed_rate")
        elif name.startswith("relative"):
            ratio, setting = name[len("relative") :].split("@")
            scored = relative_scores(record, "test", float(ratio), setting)
            if scored:
                found[seed] = test_point(scored)
    return found


def test_point(s):
    """A `Rescorer.score` as `per_seed` gives it."""
    return {"accuracy": s["accuracy"], "density": s["attended_density"], "all_closed": s["all_closed_rate"]}


def dataset_points(records, dataset, ratio):
    """{name: mean_point} of `dataset`'s test points (`per_seed` names)."""
    names = [*SETTINGS, *(f"relative{r:g}@{DEFAULT}" for r in RATIOS)]
    names += [f"relative{ratio:g}@{s}" for s in ("rho0.1", "rho0.5")]
    return {name: mean_point(found) for name in names if (found := per_seed(records, dataset, name))}


def mean_point(found):
    """`per_seed` scores -> `{"seeds", "accuracy", "accuracy_std", "density", "all_closed"}`, means."""
    accuracies = [v["accuracy"] for v in found.values()]
    closed = [v["all_closed"] for v in found.values() if v["all_closed"] is not None]
    return {
        "seeds": list(found),
        "accuracy": float(np.mean(accuracies)),
        "accuracy_std": float(np.std(accuracies, ddof=1)) if len(found) > 1 else None,
        "density": float(np.mean([v["density"] for v in found.values()])),
        "all_closed": float(np.mean(closed)) if closed else None,
    }


def accuracy(point):
    """A `mean_point`'s accuracy as `mean_std` writes it."""
    std = point["accuracy_std"]
    return f"{point['accuracy']:.4f}" + ("" if std is None else f" ± {std:.4f}")


def top_k_at(points, density):
    """(accuracy, note) of the top_k curve at `density`: linear between its points, below them its least-density
    point, above them None."""
    curve = sorted((points[f"rho{rho}"]["density"], points[f"rho{rho}"]["accuracy"]) for rho in DENSITIES)
    if density <= curve[0][0]:
        return curve[0][1], f"top_k point of least density ({curve[0][0]:.3f})"
    if density > curve[-1][0]:
        return None, "attends more than every top_k point"
    (d0, a0), (d1, a1) = next((p, q) for p, q in zip(curve, curve[1:], strict=False) if p[0] <= density <= q[0])
    return a0 + (a1 - a0) * (density - d0) / (d1 - d0), "interpolated"


def checks(points, name):
    """The Done-when of the point `name` among one dataset's test points (None if one is missing): at least the `top_k`
    curve (`top_k_at`), at most 1 point below soft, above sparsemax and entmax at no more density."""
    relative = points.get(name)
    if relative is None or any(n not in points for n in (*(f"rho{rho}" for rho in DENSITIES), *BASELINES)):
        return None
    accuracy, density = relative["accuracy"], relative["density"]
    reference, note = top_k_at(points, density)
    gap = None if reference is None else accuracy - reference
    met = bool(gap is not None and gap >= 0)
    result = {"seeds": relative["seeds"], "top_k": {"accuracy": reference, "note": note, "gap": gap, "met": met}}
    soft = accuracy - points["soft"]["accuracy"]
    result["soft"] = {"gap": soft, "met": bool(soft >= -0.01)}
    for other in ("sparsemax", "entmax"):
        o = points[other]
        met = bool(accuracy > o["accuracy"] and density <= o["density"])
        result[other] = {"gap": accuracy - o["accuracy"], "density": o["density"], "met": met}
    return result


def pooled_lengths(records, dataset, key):
    """The per-text densities by length of rule `key` on the target-0.3 models, seeds pooled."""
    entries = {
        seed: r["rescored"].get(DEFAULT, {}).get("test_by_length", {}).get(key) for seed, r in records[dataset].items()
    }
    return pool_lengths({seed: entry for seed, entry in sorted(entries.items()) if entry})


def _label(name, chosen):
    if name.startswith("rho"):
        return f"GA-Net, top_k at rho {name[3:]}" + (" (the defaults)" if name == DEFAULT else "")
    if name.startswith("relative"):
        ratio, setting = name[len("relative") :].split("@")
        mark = " (chosen)" if float(ratio) == chosen else ""
        return f"GA-Net rho {setting[3:]}, relative r = {float(ratio):g}{mark}"
    return {"soft": "soft attention", "sparsemax": "sparsemax attention", "entmax": "1.5-entmax attention"}[name]


def _favours(choice, rule):
    return (
        f"Validation {'favours' if choice['favours_relative'] else 'does not favour'} {rule} = {choice['ratio']:g}"
        " over `top_k` 0.3, the test rule the models were trained with (at least as accurate at no more attended"
        " density on every dataset it was chosen on)."
    )


def _chosen_on(choice):
    return "; ".join(f"{d} seeds {','.join(map(str, choice['seeds'][d]))}" for d in choice["datasets"])


def choice_lines(means, choice):
    """The choice of r on the validation `means` (`{dataset: mean_grid}`) and their table."""
    eligible = ", ".join(f"{r:g}" for r in choice["eligible"]) or "none (r of least density taken)"
    text = [
        f"Chosen on {_chosen_on(choice)}:",
        f"**r = {choice['ratio']:g}**; its smallest validation accuracy gain over `top_k` 0.3 (same models) is "
        f"{choice['smallest_gain'] * 100:+.2f} points; r with no more validation density than `top_k` 0.3 on "
        f"every dataset: {eligible}.",
        _favours(choice, "relative r") + " This script changes no default.",
        "",
    ]
    header = ["rule", *(f"{d} {c}" for d in choice["datasets"] for c in ("accuracy", "attended density"))]
    rows = [
        ["top_k 0.3 (as trained)" if key == "top_k" else f"relative {key:g}"]
        + [f"{means[d][key][i]:.4f}" for d in choice["datasets"] for i in (0, 1)]
        for key in ("top_k", *RATIOS)
    ]
    return text + tables.grid(header, rows)


def test_lines(points, ratio):
    header = ["dataset", "role", "model / test rule", "seeds", "accuracy", "attended density", "all-closed"]
    names = ["rho0.1", "rho0.3", "rho0.5", *(f"relative{ratio:g}@{s}" for s in ("rho0.3", "rho0.1", "rho0.5"))]
    rows = [
        [d, role(d), _label(name, ratio), ",".join(map(str, p["seeds"]))]
        + [accuracy(p), f"{p['density']:.4f}", tables.number(p["all_closed"], 4)]
        for d in points
        for name in (*names, *BASELINES)
        if (p := points[d].get(name))
    ]
    return tables.grid(header, rows)


def _met(check, detail=None):
    """'met' or 'NOT met', then `detail` (by default the gap in points, if any); '-' without a check."""
    if not check:
        return "-"
    if detail is None:
        detail = "" if check["gap"] is None else f" ({100 * check['gap']:+.2f})"
    return f"{'met' if check['met'] else 'NOT met'}{detail}"


def check_lines(all_checks, records, ratio):
    """The Done-when table, then which checks are not met."""
    header = ["dataset", "role", "seeds", "relative accuracy / density", "top_k there", "vs top_k", "vs soft"]
    rows, not_met = [], []
    for d, c in all_checks.items():
        relative, top_k = c["relative"], c["top_k"]
        there = "-" if top_k["accuracy"] is None else f"{top_k['accuracy']:.4f} ({top_k['note']})"
        runs = [(relative_scores(r, "test", ratio), r["runs"][DEFAULT]) for _, r in sorted(records[d].items())]
        gains = [(scored["accuracy"] - run["test_accuracy"]) * 100 for scored, run in runs]
        cells = [_met(c[n], f" ({c[n]['gap'] * 100:+.2f}; density {c[n]['density']:.3f})") for n in BASELINES[1:]]
        rows.append(
            [d, role(d), ",".join(map(str, c["seeds"])), f"{relative['accuracy']:.4f} / {relative['density']:.4f}"]
            + [there, _met(top_k), _met(c["soft"]), *cells]
            + [("+" if np.mean(gains) >= 0 else "") + tables.mean_std(gains, 2) + " points"]
        )
        not_met += [f"{d} ({name})" for name in ("top_k", *BASELINES) if not c[name]["met"]]
    verdict = "; not met: " + ", ".join(not_met) + "." if not_met else ": every condition is met."
    summary = f"Gaps in accuracy points (relative minus the other). Checked on {', '.join(all_checks)}{verdict}"
    header += ["vs sparsemax", "vs entmax", "paired gain over top_k 0.3"]
    return [*tables.grid(header, rows), "", summary]


def curve_lines(points, ratio):
    rows = [
        [f"relative {r:g}" + (" (chosen)" if r == ratio else "") if r else "top_k 0.3"]
        + [f"{p['accuracy']:.4f} / {p['density']:.3f}" if p else "-" for p in (points[d].get(key) for d in points)]
        for r, key in [(None, DEFAULT), *((r, f"relative{r:g}@{DEFAULT}") for r in RATIOS)]
    ]
    return tables.grid(["rule", *points], rows)


def length_lines(rows):
    """The table of pooled per-text densities: per row `(dataset, rule, pool_lengths)`, per bin the mean (texts)."""
    edges = [*LENGTH_EDGES, None]
    bins = (f"{lo}-{hi - 1}" if hi else f"{lo}+" for lo, hi in zip(edges, edges[1:], strict=False))
    cells = [
        [d, label, ",".join(map(str, e["seeds"]))]
        + [f"{m:.3f} ({t})" if t else "-" for m, t in zip(e["mean_density"], e["texts"], strict=True)]
        for d, label, e in rows
    ]
    return tables.grid(["dataset", "rule", "seeds", *bins], cells)


def copies_lines(results, records):
    """How many runs were copied from gate_check (`copied`), and the verdict of `copies.json` (`copies`)."""
    runs = all_runs(records)
    checked = runner.read_json(os.path.join(results, "copies.json"), {"same": [], "differ": []})
    same, differ = checked["same"], checked["differ"]
    copied = f"{sum('copied_from' in run for run in runs)} of the {len(runs)} runs are copied from"
    verdict = f"attended density and epochs equal): {len(same)} equal" + (f" ({', '.join(same)})" if same else "")
    verdict += f", {len(differ)} different"
    verdict += f" ({', '.join(differ)}: the copies may not stand for the current code)" if differ else ""
    return {"copied": [copied + " `results/gate_check/runs/` (same config; their"], "copies": [verdict + "."]}


def plot(all_points, by_length, ratio, path):
    """Accuracy against attended density per dataset (top row), per-text attended density against length (bottom)."""
    with bench.figure(path, 2, len(all_points), dpi=90, figsize=(4 * len(all_points), 7)) as axes:
        for (top, bottom), (dataset, points) in zip(axes.T, all_points.items(), strict=True):
            top_k = sorted(
                (points[n]["density"], points[n]["accuracy"]) for n in ("rho0.1", "rho0.3", "rho0.5") if n in points
            )
            top.plot(*zip(*top_k, strict=True), "o-", label="top_k rho 0.1/0.3/0.5")
            curve = [points[n] for r in RATIOS if (n := f"relative{r:g}@{DEFAULT}") in points]
            top.plot([p["density"] for p in curve], [p["accuracy"] for p in curve], ".-", label="relative r (rho 0.3)")
            marks = {f"relative{ratio:g}@{DEFAULT}": "*", "sparsemax": "s", "entmax": "^", "soft": "x"}
            for name, marker in marks.items():
                label = f"relative r = {ratio:g} (chosen)" if marker == "*" else name
                if name in points:
                    size = 14 if marker == "*" else 8
                    top.plot(points[name]["density"], points[name]["accuracy"], marker, markersize=size, label=label)
            top.set(title=f"{dataset} (test)", xlabel="attended density", ylabel="accuracy", xlim=(0, 1.05))
            for key, entry in by_length.get(dataset, {}).items():
                shown = [(lo, m) for lo, m in zip(LENGTH_EDGES, entry["mean_density"], strict=True) if m is not None]
                bottom.plot(*zip(*shown, strict=True), "o-", label=key.replace(":", " "))
            bottom.set(xscale="log", xlabel="text length (real tokens, bin start)", ylabel="attended density per text")
            bottom.set_ylim(0, 1.05)
            top.legend(fontsize=7)
            bottom.legend(fontsize=7)


def write_tables(results):
    """Chooses r on the validation grid and writes `curves.json`, `curves.png` and the tables of `README.md` from the
    saved summaries and rescored scores."""
    records = collect(results)
    means = relative_grid(records)
    choice = choose_ratio(means)
    ratio, machine = choice["ratio"], runner.recorded_machine(os.path.join(results, "runs"))
    name = f"relative{ratio:g}@{DEFAULT}"
    points = {d: dataset_points(records, d, ratio) for d in records}
    all_checks = {d: {**c, "relative": p[name]} for d, p in points.items() if (c := checks(p, name))}
    keys = ("top_k:0.3", f"relative:{ratio:g}")
    by_length = {d: pooled for d in points if (pooled := {k: e for k in keys if (e := pooled_lengths(records, d, k))})}
    curves = {"machine": machine, "ratios": list(RATIOS), "length_edges": list(LENGTH_EDGES), "choice": choice}
    curves["validation"] = {d: {str(k): v for k, v in g.items()} for d, g in means.items()}
    curves.update(test=points, checks=all_checks, by_length=by_length)
    runner.write_json(os.path.join(results, "curves.json"), curves)
    plot(points, by_length, ratio, os.path.join(results, "curves.png"))
    runs = sorted(
        all_runs(records), key=lambda r: (DATASETS.index(r["dataset"]), r["seed"], list(SETTINGS).index(r["setting"]))
    )
    trained = f"docstring) on {machine}, shared with other jobs. GA-Net is trained with the defaults of `train` at"
    blocks = {
        "machine": [trained],
        "choice": choice_lines(means, choice),
        "test": test_lines(points, ratio),
        "checks_title": [f"## Done-when checks (test, relative r = {ratio:g} on the target-0.3 models)"],
        "checks": check_lines(all_checks, records, ratio),
        "curve": curve_lines(points, ratio),
        "lengths": length_lines([(d, k.replace(":", " "), e) for d in by_length for k, e in by_length[d].items()]),
        **copies_lines(results, records),
        "runs": [f"- `{run['command']}`" for run in runs],
    }
    tables.fill(os.path.join(results, "README.md"), blocks)


def _nucleus_rows(folder, records, dataset, mass, ratio):
    """The test rows of `dataset` (top_k 0.3, relative r, nucleus pi, with their checks) and its rows by length."""
    scorers = {seed: Rescorer(folder, dataset, seed, DEFAULT) for seed in records[dataset]}
    found = {seed: test_point(s) for seed, sc in scorers.items() if (s := sc.score("test", "nucleus", mass))}
    if not found:
        return [], []
    relative, nucleus = f"relative{ratio:g}@{DEFAULT}", f"nucleus{mass:g}"
    points = {**dataset_points(records, dataset, ratio), nucleus: mean_point(found)}
    labels = {DEFAULT: "top_k 0.3", relative: f"relative {ratio:g}", nucleus: f"nucleus {mass:g}"}
    rows = []
    for name, label in labels.items():
        p, check = points[name], name != DEFAULT and checks(points, name)
        label += {DEFAULT: " (as trained)", nucleus: " (chosen)"}.get(name, "")
        rows.append([dataset, role(dataset), label, ",".join(map(str, p["seeds"])), accuracy(p), f"{p['density']:.3f}"])
        rows[-1] += [_met(check and check[n]) for n in ("top_k", *BASELINES)]
    by_length = {s: e for s, sc in scorers.items() if (e := sc.score("test_by_length", "nucleus", mass))}
    lengths = [pooled_lengths(records, dataset, key) for key in ("top_k:0.3", f"relative:{ratio:g}")]
    lengths.append(pool_lengths(by_length))
    return rows, [(dataset, label, e) for label, e in zip(labels.values(), lengths, strict=True) if e]


def nucleus_tables(folder):
    """Chooses pi on the cached validation scores of the target-0.3 models and writes the tables of `folder/README.md`
    (`adaptive_real/nucleus`)."""
    results = os.path.dirname(folder)
    records = collect(results)
    means = nucleus_grid(results, records)
    choice, ratio = choose_ratio(means, MASSES), choose_ratio(relative_grid(records))["ratio"]
    tests = [_nucleus_rows(folder, records, d, choice["ratio"], ratio) for d in records]
    eligible, on = ", ".join(f"{m:g}" for m in choice["eligible"]) or "none", _chosen_on(choice)
    text = [
        f"Chosen on {on}: **pi = {choice['ratio']:g}**, its smallest validation accuracy gain over `top_k`",
        f"0.3 (same models) {100 * choice['smallest_gain']:+.2f} points; pi attending no more than `top_k` 0.3 on"
        f" every dataset: {eligible}.",
        _favours(choice, "nucleus pi") + " On this evidence `train`'s default test rule is nucleus at pi = rho"
        " (`docs/gates.md`); this script changes no default itself.",
        "",
    ]
    rows = [
        ["top_k 0.3 (as trained)" if key == "top_k" else f"nucleus {key:g}"]
        + [f"{means[d][key][0]:.4f} / {means[d][key][1]:.3f}" for d in sorted(means)]
        for key in ("top_k", *MASSES)
    ]
    header = ["dataset", "role", "rule", "seeds", "accuracy", "attended density", "vs top_k", "vs soft"]
    machine = runner.recorded_machine(os.path.join(results, "runs"))
    blocks = {
        "machine": [f"Written by `python -m experiments table nucleus_real` on {machine}"],
        "choice": text + tables.grid(["rule", *(f"{d} accuracy / attended density" for d in sorted(means))], rows),
        "ratio": [f"r = {ratio:g} and the other rows: `results/adaptive_real/README.md` (same runs). Checks as there:"],
        "test": tables.grid([*header, "vs sparsemax", "vs entmax"], [row for rows, _ in tests for row in rows]),
        "lengths": length_lines([row for _, rows in tests for row in rows]),
    }
    tables.fill(os.path.join(folder, "README.md"), blocks)
