"""The tables of the declared studies (`studies.py`), one function each, `(study, results_root) -> None`, and the
analyses of their finished runs (`after`). A table fills the generated blocks of its committed README (`tables.fill`)
from the committed summaries; the prose around them is written by hand."""

import importlib
import itertools
import math
import os

import numpy as np

from experiments import bench
from experiments import runner
from experiments import tables
from experiments.protocol import HELD_OUT
from experiments.protocol import LRA_BENCH_MODELS
from experiments.protocol import LRA_RECOMMENDED
from experiments.protocol import TUNING


def _runs(root, folder, sub="runs"):
    return runner.load_runs(os.path.join(root, folder, sub))


def fill_readme(study, root, runs, machines=False, **blocks):
    """Fills `blocks` and the runs' commands into the study's README (a smoke run's starts as the committed one)."""
    committed = os.path.join(runner.REPO, "results", study.folder, "README.md")
    blocks["runs"] = [f"- `{run['command']}`" + (f" ({run['machine']})" if machines else "") for run in runs]
    tables.fill_copy(os.path.join(root, study.folder, "README.md"), committed, blocks)


def _axis(study, name):
    return tuple(study.axes[name])


def selection(study, root):
    """Candidates of each dataset ranked by mean validation accuracy."""
    runs = _runs(root, study.folder)
    columns = [
        ("candidate", lambda group: group[0]["candidate"]),
        ("flags", lambda group: f"`{' '.join(study.axes['candidate'][group[0]['candidate']]) or '(defaults)'}`"),
        ("seeds", tables.seeds),
        ("validation accuracy", tables.stat("validation_accuracy")),
        ("test accuracy", tables.stat("test_accuracy")),
        ("test density", tables.stat("test_density")),
        ("best epochs", lambda group: ",".join(str(run["best_epoch"]) for run in group)),
    ]
    lines = [f"Machine: {runs[0]['machine']}."]
    for dataset in _axis(study, "dataset"):
        rows = tables.groups(runs, ("dataset", "candidate"), ((dataset,), _axis(study, "candidate")))
        if rows:
            rows.sort(key=lambda group: -np.mean([run["validation_accuracy"] for run in group]))
            lines += ["", f"## {dataset}", "", *tables.markdown(columns, rows)]
    fill_readme(study, root, runs, tables=lines)


def _flops(group):
    if group[0]["attention_flops_soft"] is None:
        return "-"
    soft = np.mean([run["attention_flops_soft"] for run in group])
    gated = [run["attention_flops_gated"] for run in group if run["attention_flops_gated"] is not None]
    return f"{soft:,.0f}" + (f" / {np.mean(gated):,.0f}" if gated else "")


# The paper's figures (100-d GloVe) that the issues quote.
PAPER = {("trec", "ganet"): "0.9124 / 0.4431", ("imdb", "ganet"): "0.8941 / 0.1999"}
_CORE_COLUMNS = [
    ("dataset", lambda group: group[0]["dataset"]),
    ("model", lambda group: group[0]["variant"]),
    ("seeds", tables.seeds),
    ("test accuracy", tables.stat("test_accuracy")),
    ("test density", tables.stat("test_density")),
    ("attended density", tables.stat(runner.attended_density)),
    ("all-closed rows", tables.stat("test_all_closed_rate")),
    ("attention FLOPs soft / gated", _flops),
    ("epochs", tables.field("epochs_trained")),
    ("paper (acc / density, 100d GloVe)", lambda group: PAPER.get((group[0]["dataset"], group[0]["variant"]), "")),
]


def core(study, root):
    """Every model per dataset: accuracy, densities, attention FLOPs; the earlier protocols' runs (`runs_*/`) too."""
    order = (_axis(study, "dataset"), _axis(study, "variant"))
    found = {sub: _runs(root, study.folder, sub) for sub in ("runs", "runs_sst1_dropout3", "runs_val_loss")}
    blocks = {
        sub: tables.markdown(_CORE_COLUMNS, tables.groups(runs, ("dataset", "variant"), order))
        for sub, runs in found.items()
    }
    blocks["table"] = blocks.pop("runs")
    fill_readme(study, root, found["runs"], machine=[f"Machine: {found['runs'][0]['machine']}."], **blocks)


def gates_top_k(study, point, summary, context):
    """A gated run's validation scores under `top_k` test gates at its rho (0.3 for the paper's lambda): `top_k`."""
    flags = study.run_flags(point)
    if "top_k" in summary or "soft" in flags:
        return None
    rho = float(flags[flags.index("--target-density") + 1]) if "rho" in point["setting"] else 0.3
    from ganet_tf.data.vectorizer import vectorize
    from ganet_tf.policy.trained_run import load_run
    from ganet_tf.training.evaluate import evaluate_model
    from ganet_tf.training.train import load_splits

    model_dir = os.path.join(runner.REPO, context["out_root"], point["name"])
    data = load_splits(runner.parse_train(study.run_flags(point, context["data_dir"])))
    model, vectorizer, class_names = load_run(model_dir, {"inference_mode": "top_k", "inference_density": rho})
    scores = evaluate_model(model, vectorize(vectorizer, data.validation_texts), data.validation_labels, class_names)
    scores.pop("report")
    return {**summary, "top_k": {"rho": rho, **{f"validation_{key}": value for key, value in scores.items()}}}


def gates(study, root):
    """Validation scores per setting under the trained `threshold` gates and under `top_k`."""
    runs = [run for run in _runs(root, study.folder) if "top_k" in run or run.get("setting") == "soft"]
    columns = [
        ("dataset", lambda group: group[0]["dataset"]),
        ("setting", lambda group: group[0]["setting"]),
        ("n", lambda group: str(len(group))),
        ("seeds", tables.seeds),
        ("val acc (threshold)", tables.stat("validation_accuracy")),
        ("val attended density", tables.stat("validation_attended_density")),
        ("val all-closed", tables.stat("validation_all_closed_rate")),
        ("val acc (top_k)", tables.stat(("top_k", "validation_accuracy"))),
        ("val attended density (top_k)", tables.stat(("top_k", "validation_attended_density"))),
        ("epochs", tables.field("epochs_trained")),
    ]
    rows = tables.groups(runs, ("dataset", "setting"), (_axis(study, "dataset"), _axis(study, "setting")))
    machine = f"on {runs[0]['machine']} (cores shared with other jobs), `--epochs 10` as an upper limit."
    fill_readme(study, root, runs, machine=[machine], table=tables.markdown(columns, rows))


def nucleus_default(study, root):
    """Per dataset and rho, nucleus at pi = rho beside `top_k` at rho (adaptive_real's runs), on the seeds both have."""
    ours, theirs = _runs(root, study.folder), _runs(root, "adaptive_real")

    def cell(runs):
        density = sum(run["test_attended_density"] for run in runs) / len(runs)
        return f"{tables.mean_std([run['test_accuracy'] for run in runs])} / {density:.3f}"

    rows = []
    for dataset, rho in itertools.product(_axis(study, "dataset"), _axis(study, "rho")):
        mine = {r["seed"]: r for r in ours if r["dataset"] == dataset and r.get("target_density") == rho}
        other = {r["seed"]: r for r in theirs if r["dataset"] == dataset and r.get("setting") == f"rho{rho:g}"}
        seeds = sorted(set(mine) & set(other))
        a, b = [mine[s] for s in seeds], [other[s] for s in seeds]
        gap = 100 * sum(x["test_accuracy"] - y["test_accuracy"] for x, y in zip(a, b, strict=True)) / len(seeds)
        rows.append([dataset, f"{rho:g}", ",".join(map(str, seeds)), cell(a), cell(b), f"{gap:+.2f}"])
    headers = ["dataset", "rho", "seeds", "nucleus pi = rho (the default)", "`top_k` rho", "accuracy gap (points)"]
    machine = f"Written by `python -m experiments table {study.name}` on {ours[0]['machine']}"
    runs = sorted(ours, key=lambda r: (r["dataset"], r.get("target_density", 0), r["seed"]))
    fill_readme(study, root, runs, machine=[machine], table=tables.grid(headers, rows))


# A summary written by a run resumed after its last epoch holds no epoch times (its model's metrics.json does).
NO_EPOCH_TIMES = "no epoch times in its summary (resumed after its last epoch)"


def _epoch_seconds(run):
    """Each epoch's seconds over every attempt of a resumed run (its history's; the summary's list is the last
    attempt's)."""
    return run["history"].get("epoch_seconds") or run["epoch_seconds"]


def _median_epoch_seconds(group):
    seconds = [s for run in group for s in _epoch_seconds(run)]
    return f"{np.median(seconds):.0f}" if seconds else "-"


def _pass_seconds(run):
    """The seconds of one pass over the training reviews with one validation, as an epoch of a run without
    `--steps-per-epoch` takes; a run validated every N batches: its epochs' training seconds scaled to a pass (the
    training reviews over the batch size), plus one validation (medians over its full epochs)."""
    steps = run["config"].get("steps_per_epoch")
    if not steps:
        return np.median(_epoch_seconds(run)) if _epoch_seconds(run) else None
    pairs = list(zip(_epoch_seconds(run), run.get("validation_seconds") or [], strict=False))[:-1]  # the last: cut
    pairs = [(epoch, validation) for epoch, validation in pairs if validation is not None]
    if not pairs:
        return None
    batches = math.ceil(run["train_examples"] / run["config"]["batch_size"])
    training = np.median([epoch - validation for epoch, validation in pairs])
    return training * batches / steps + np.median([validation for _, validation in pairs])


def _median_pass_seconds(group):
    seconds = [s for s in map(_pass_seconds, group) if s is not None]
    return f"{np.median(seconds):,.0f}" if seconds else "-"


def _cumulative_best(run):
    """`(seconds, best validation accuracy so far)` at each epoch's end: accuracy against training time."""
    seconds = np.cumsum(_epoch_seconds(run))
    return list(zip(seconds, np.maximum.accumulate(run["history"]["val_accuracy"]), strict=False))


# The settings the bench times under another setting's name: the same model at another length.
_BENCHED_AS = {"dense-1000": "dense"}


def _lra_steps(root):
    """Each benched `lra_text` setting's training step in the bench's bucketed batch-32 cells (`lra_text/bench`):
    `{(setting, T): (step ms, dense step / its step, peak GB)}`, the dense figures from the cell of the recommended
    gated recipe where there are several."""
    path = os.path.join(root, "lra_text", "bench", "bench.json")
    if not os.path.exists(path):
        return {}
    steps = {}
    cells = [c for c in runner.read_json(path)["cells"] if c["layout"] == "bucketed" and c["batch"] == 32]
    for cell in sorted(cells, key=lambda c: c["gated"] == LRA_RECOMMENDED):  # the recommended recipe's cell last
        for role, setting in {**LRA_BENCH_MODELS, "gated": cell["gated"]}.items():
            if f"{role}_step_ms" in cell:
                ratio = cell["dense_step_ms"] / cell[f"{role}_step_ms"]
                peak = cell["memory"][role]["peak_mb"] / 1024
                steps[setting, cell["T"]] = (cell[f"{role}_step_ms"], ratio, peak)
    return steps


def lra_text(study, root):
    """Each setting's test accuracy and attended density (mean ± std over its seeds), epoch time, and each run's
    validation accuracy against training time."""
    runs = _runs(root, study.folder)
    if not runs:
        return
    columns = [
        ("setting", lambda group: group[0]["setting"]),
        ("flags", lambda group: f"`{' '.join(study.axes['setting'][group[0]['setting']])}`"),
        ("seeds", tables.seeds),
        ("validation accuracy", tables.stat("validation_accuracy")),
        ("test accuracy", tables.stat("test_accuracy")),
        ("test attended density", tables.stat("test_attended_density")),
        ("median epoch s", _median_epoch_seconds),
        ("s per pass", _median_pass_seconds),
        ("epochs (best)", lambda group: ", ".join(f"{r['epochs_trained']} ({r['best_epoch']})" for r in group)),
    ]
    rows = tables.groups(runs, ("setting",), (_axis(study, "setting"),))
    recommended = [run["test_accuracy"] for run in runs if run["setting"] == LRA_RECOMMENDED]

    def gap(group):  # how far the recommended gated recipe's mean test accuracy is above this setting's
        if not recommended or group[0]["setting"] == LRA_RECOMMENDED:
            return "-"
        return f"{np.mean(recommended) - np.mean([run['test_accuracy'] for run in group]):+.4f}"

    columns.insert(5, (f"{LRA_RECOMMENDED} − this (test)", gap))
    steps = _lra_steps(root)

    def step(index, spec):  # the setting's bench figure at its length, bucketed, batch 32
        def cell(group):
            setting, length = group[0]["setting"], group[0]["config"]["sequence_length"]
            figures = steps.get((_BENCHED_AS.get(setting, setting), length))
            return "-" if figures is None else f"{figures[index]:{spec}}"

        return cell

    columns[7:7] = [
        ("step ms (bucketed, 32)", step(0, ",.0f")),
        ("dense step / this", step(1, ".1f")),
        ("peak GB", step(2, ".1f")),
    ]
    curve = [
        f"- {run['name']}: "
        + (", ".join(f"{seconds / 60:.0f} min {accuracy:.4f}" for seconds, accuracy in points) or NO_EPOCH_TIMES)
        for run in sorted(runs, key=lambda run: run["name"])
        for points in [_cumulative_best(run)]
    ]
    fill_readme(study, root, runs, machines=True, table=tables.markdown(columns, rows), curve=curve)


_SELECTION = "selection.json"
_SUBWORD_CELLS = {
    "test_bleu": ".2f",
    "test_perplexity": ".3f",
    "seconds_per_epoch": ".0f",
    "decode_seconds_per_sentence": ".4f",
}


def subwords(study, root):
    """The subword candidates: validation BLEU (the choice), test BLEU beside."""
    runs = {run["name"]: run for run in _runs(root, study.folder)}
    selection = runner.read_json(os.path.join(root, study.folder, _SELECTION))
    rows = []
    for point in study.points():
        run, bleu = runs[point["name"]], selection["validation_bleu"][point["name"]]
        cells = [f"{run[key]:{spec}}" for key, spec in _SUBWORD_CELLS.items()]
        rows.append([point["tokenizer"], run["target_vocabulary"], run["epochs_trained"], f"{bleu:.2f}", *cells])
    headers = "tokenizer | joint ids | epochs | validation BLEU | test BLEU | test perplexity | s/epoch | decode s/sent"
    lines = [f"Chosen: **{selection['chosen']}**.", "", *tables.grid(headers, rows)]
    fill_readme(study, root, list(runs.values()), machines=True, table=lines)


# --- gate_check: GA-Net's default gates on every dataset (issue 13) ----------

GATE_SWEEP = ("trec", "sst2", "imdb")
_FLOORS = "floors.json"


def _group(runs, dataset, setting):
    return [r for r in runs if r["dataset"] == dataset and r.get("setting") == setting]


def _verdict(ganet, soft):
    """The issue's checks on the means: all-closed <= 2 %, attended density in [0.1, 0.7], accuracy >= soft
    attention's - 0.5 point."""
    closed = np.mean([r["test_all_closed_rate"] for r in ganet])
    density = np.mean([r["test_attended_density"] for r in ganet])
    gap = np.mean([r["test_accuracy"] for r in ganet]) - np.mean([r["test_accuracy"] for r in soft])
    checks = [closed <= 0.02, 0.1 <= density <= 0.7, gap >= -0.005]
    return f"{'pass' if all(checks) else 'FAIL'} (accuracy {gap * 100:+.2f} points)"


_SWEPT = ("test_accuracy", "test_attended_density", "test_all_closed_rate")


def _gate_defaults(runs, tuning, held_out):
    rows = []
    for dataset in (*tuning, *held_out):
        ganet, soft = _group(runs, dataset, "default"), _group(runs, dataset, "soft")
        role = "tuned on (validation)" if dataset in tuning else "held out"
        cells = [tables.seeds(ganet), *(tables.stat(key)(ganet) for key in _SWEPT)]
        rows.append([dataset, role, *cells, tables.stat("test_accuracy")(soft), _verdict(ganet, soft)])
    headers = ["dataset", "role", "seeds", "GA-Net accuracy", "attended density", "all-closed rate", "soft accuracy"]
    return tables.grid([*headers, "checks"], rows)


def _gate_anneal(runs, tuning):
    """Fixed tau against annealed tau on the tuning datasets."""
    columns = [
        ("dataset", lambda group: group[0]["dataset"]),
        ("setting", lambda group: group[0]["setting"]),
        ("seeds", tables.seeds),
        ("val accuracy", tables.stat("validation_accuracy")),
        ("val attended density", tables.stat("validation_attended_density")),
        ("epochs", tables.stat("epochs_trained")),
        ("test accuracy", tables.stat("test_accuracy")),
    ]
    return tables.markdown(columns, tables.groups(runs, ("dataset", "setting"), (tuning, ("default", "anneal"))))


def _sweep_points(runs):
    """One point per (dataset, rho): means over the seeds."""
    points = []
    for dataset, rho in itertools.product(GATE_SWEEP, (0.1, 0.3, 0.5)):
        group = _group(runs, dataset, "default" if rho == 0.3 else f"rho{rho}")
        point = {"dataset": dataset, "target_density": rho, "seeds": sorted(r["seed"] for r in group)}
        points.append(point | {key: float(np.mean([r[key] for r in group])) for key in _SWEPT})
    return points


def _sweep_row(floors, p):
    floor, within = floors[p["dataset"]]["one_token_floor"], abs(p["test_attended_density"] - p["target_density"])
    verdict = "yes" if within <= 0.05 else "NO" + (" (rho is below the floor)" if floor > p["target_density"] else "")
    cells = [p["dataset"], str(p["target_density"]), ",".join(map(str, p["seeds"])), *(f"{p[k]:.4f}" for k in _SWEPT)]
    return [*cells, f"{floor:.3f}", verdict]


def _sweep_plot(points, path):
    with bench.figure(path, 1, len(GATE_SWEEP), figsize=(12, 3.5)) as (axes,):
        for axis, dataset in zip(axes, GATE_SWEEP, strict=True):
            mine = [p for p in points if p["dataset"] == dataset]
            axis.plot([p["test_attended_density"] for p in mine], [p["test_accuracy"] for p in mine], "o-")
            for p in mine:
                axis.annotate(f"rho {p['target_density']}", (p["test_attended_density"], p["test_accuracy"]))
            axis.set(title=dataset, xlabel="attended test density", ylabel="test accuracy", xlim=(0, 1))


def gate_check(study, root):
    """The defaults against soft attention, annealing, the density sweep (with `sweep.json` and `sweep.png`)."""
    runs, folder = _runs(root, study.folder), os.path.join(root, study.folder)
    points, floors = _sweep_points(runs), runner.read_json(os.path.join(folder, _FLOORS))
    runner.write_json(os.path.join(folder, "sweep.json"), points)
    _sweep_plot(points, os.path.join(folder, "sweep.png"))
    headers = ["dataset", "rho", "seeds", "accuracy", "attended density", "all-closed rate", "floor", "within"]
    blocks = {"defaults": _gate_defaults(runs, TUNING, HELD_OUT), "anneal": _gate_anneal(runs, TUNING)}
    blocks["sweep"] = tables.grid(headers, [_sweep_row(floors, p) for p in points])
    machine = [f"on {runs[0]['machine']}. Test scores, mean ± std over the seeds listed."]
    fill_readme(study, root, runs, machine=machine, **blocks)


def lazy(module, function):
    """`experiments/MODULE.py`'s FUNCTION, imported when called (listing studies or a table imports no TensorFlow)."""
    return lambda *args: getattr(importlib.import_module(f"experiments.{module}"), function)(*args)


def folder_tables(module, function):
    """The tables of a study whose `MODULE.FUNCTION(folder)` rebuilds its results folder."""
    return lambda study, root: lazy(module, function)(os.path.join(root, study.folder))


# --- seq2seq: the hierarchical-attention report's tables beside our runs ----


def _epochs(runs):
    """Each run's epochs trained, with its best epoch where it kept one: `20 (17), 14 (11)`."""
    best = [(r.get("epochs_trained", r["epochs"]), r.get("best_epoch")) for r in sorted(runs, key=lambda r: r["seed"])]
    return ", ".join(f"{n}" + ("" if b is None else f" ({b})") for n, b in best) or "-"


def _seq2seq_group(runs, table, row):
    return [run for run in runs if run["name"].startswith(f"{table}_{row}_seed")]


_SEQ2SEQ_STATS = (
    ("attended density", "test_attended_density"),
    ("all-closed", "test_all_closed_rate"),
    ("kFLOPs/token", lambda run: run["attention_flops_per_token"] * 1e-3),
    ("decode s/sent", "decode_seconds_per_sentence"),
    ("s/epoch", "seconds_per_epoch"),
)


def _seq2seq_table(runs, name, spec):
    """One table of `studies.SEQ2SEQ_TABLES`: each row's k and L, the report's figures and ours (mean ± std)."""
    scores = [("BLEU", "test_bleu")]
    if not name.startswith("multi30k"):
        scores = [("exact match", "test_exact_match"), ("symbol error rate", "test_symbol_error_rate")]
    fields = [("loss", "test_loss"), ("PPL", "test_perplexity"), *scores, *_SEQ2SEQ_STATS]
    headers = ["model", "k", "L", "report loss", "report PPL", "report BLEU", "n", *(h for h, _ in fields)]
    rows = []
    for row, flags in spec["rows"].items():
        group = _seq2seq_group(runs, name, row)
        cells = [row, *(flags[flags.index(f) + 1] if f in flags else "-" for f in ("--block-size", "--levels"))]
        report = spec.get("report", {}).get(row, (None,) * 3)
        cells += [tables.number(value, digits) for value, digits in zip(report, (3, 3, 2), strict=True)]
        rows.append([*cells, str(len(group)), *(tables.stat(path)(group) for _, path in fields), _epochs(group)])
    return tables.grid([*headers, "epochs (best)"], rows)


def _seq2seq_reruns(runs, reruns):
    """Each rerun (`reruns/`) beside the table's run of the same name."""
    first = {run["name"]: run for run in runs}
    rows = []
    for again in reruns:
        for label, r in (("first", first[again["name"]]), ("rerun", again)):
            score = r.get("test_bleu") if r.get("test_bleu") is not None else r.get("test_exact_match")
            cells = [tables.number(value, 4) for value in (r.get("test_loss"), r.get("test_perplexity"), score)]
            seconds = tables.number(r.get("seconds_per_epoch"), 1)
            rows.append([f"{again['name']} ({label})", *cells, _epochs([r]), seconds])
    return tables.grid(["run", "loss", "PPL", "BLEU or exact match", "epochs (best)", "s/epoch"], rows)


def seq2seq(study, root, specs):
    """`results/seq2seq/README.md`: every table of `specs` (`studies.SEQ2SEQ_TABLES`) beside the report's
    figures, the subword rows beside the word-level ones, the reruns."""
    runs = _runs(root, study.folder)
    blocks = {name: _seq2seq_table(runs, name, spec) for name, spec in specs.items()}
    blocks["multi30k-subwords-section"] = _subwords_beside_words(runs, specs["multi30k-subwords"]["rows"])
    fill_readme(study, root, runs, reruns=_seq2seq_reruns(runs, _runs(root, study.folder, "reruns")), **blocks)


def _subwords_beside_words(runs, rows):
    """Each subword row (issue 54) beside its word-level row (`multi30k-long`): test BLEU, translations holding
    the unknown token (`-` without runs, or where one predates the count), attended density, decoding time."""

    def unknown(group):
        counts = [r.get("test_unknown_translations") for r in group]
        return "-" if None in counts or not counts else str(sum(counts))

    cells = []
    for row in rows:
        sub, word = _seq2seq_group(runs, "multi30k-subwords", row), _seq2seq_group(runs, "multi30k-long", row)
        fields = ("test_attended_density", "decode_seconds_per_sentence")
        cells.append([row, str(len(sub)), tables.stat("test_bleu")(sub), unknown(sub)])
        cells[-1] += [str(len(word)), tables.stat("test_bleu")(word), unknown(word)]
        cells[-1] += [tables.stat(key)(group) for key in fields for group in (sub, word)]
    headers = ["model", "n subwords", "BLEU subwords", "unknown", "n words", "BLEU words", "unknown"]
    return tables.grid([*headers, "attended density subwords", "words", "decode s/sent subwords", "words"], cells)
