"""GA-Net gates on a Transformer against the dense one, IMDB (issues 17, 41): the tables of its README, from the
study's runs and the committed timings of their SavedModels (`serving.json`, `serving_sparse.json`)."""

import os

import numpy as np

from experiments import runner
from experiments.tables import field
from experiments.tables import grid
from experiments.tables import number
from experiments.tables import seeds
from experiments.tables import stat

CANDIDATES = ("fnn", "attention")  # in this order: a tie goes to the first
# The Done-when items' bounds; serving "at least as fast" allows the rounds' noise.
MAX_ACCURACY_GAP, MAX_DENSITY, MIN_SPEEDUP, MIN_LENGTH = 0.01, 0.25, 1.5, 512
MIN_TRAINING_SPEEDUP, SAME_SERVING = 1.5, 0.95
MS = ("p50_ms", "p99_ms", "mean_ms")
ACCURACY, VALIDATION, ATTENDED = stat("test_accuracy"), stat("validation_accuracy"), stat(runner.attended_density)
EPOCHS = field("epochs_trained")


def _setting(runs, setting):
    return [r for r in runs if r.get("setting") == setting]


def _seed0(runs, setting):
    return next((r for r in _setting(runs, setting) if r["seed"] == 0), None)


def choice(runs):
    """The candidate whose seed-0 run has the higher VALIDATION accuracy (the first on a tie); None before."""
    chosen = [_seed0(runs, setting) for setting in CANDIDATES]
    return None if None in chosen else max(chosen, key=lambda run: run["validation_accuracy"])["setting"]


def _epochs(run):
    return ", ".join(f"{s:.0f}" for s in run["epoch_seconds"])


def _pass(ok):
    return "pass" if ok else "FAIL"


def selection_table(runs):
    chosen, rows = choice(runs), []
    for run in (_seed0(runs, setting) for setting in ("dense", *CANDIDATES)):
        mark = "-" if run["setting"] == "dense" else ("yes" if run["setting"] == chosen else "no")
        density = number(runner.attended_density(run, "validation"), 4)
        rows.append([run["model"], run["setting"], f"{run['validation_accuracy']:.4f}", density])
        rows[-1] += [run["epochs_trained"], run["best_epoch"], mark]
    return grid("model | setting | val accuracy | val attended density | epochs | best epoch | chosen", rows)


def seeds_table(runs):
    rows = []
    for setting in ("dense", choice(runs), "sparse"):
        group = _setting(runs, setting)
        density = ATTENDED(group) if setting != "dense" else "1 (all tokens)"
        flops = field(lambda r: (r.get("attention_flops_gated") or r.get("attention_flops_soft")) / 1e6, ".2f")(group)
        scores = [ACCURACY(group), density, VALIDATION(group), EPOCHS(group), flops]
        rows.append([group[0]["model"], setting, seeds(group), *scores])
    headers = "model | setting | seeds | test accuracy | test attended density | val accuracy | epochs | pooling MFLOPs"
    return grid(headers, rows)


def accuracy_density_checks(runs, setting):
    """The Done-when lines on the 3-seed test accuracy of `setting` against dense and on its attended density."""
    group, dense = _setting(runs, setting), _setting(runs, "dense")
    gap = np.mean([r["test_accuracy"] for r in group]) - np.mean([r["test_accuracy"] for r in dense])
    density = np.mean([runner.attended_density(r) for r in group])
    return [
        f"- test accuracy of `{setting}` minus dense, 3-seed means: {gap * 100:+.2f} points "
        f"(>= -{MAX_ACCURACY_GAP * 100:.0f}): {_pass(gap >= -MAX_ACCURACY_GAP)}",
        f"- attended test density of `{setting}`, 3-seed mean: {density:.4f} "
        f"(<= {MAX_DENSITY}): {_pass(density <= MAX_DENSITY)}",
    ]


def checks(runs, serving):
    """The Done-when checks of issue 17, from the stored runs and timings."""
    ratio, length = serving["ratio_gated_to_dense"]["texts_per_second"], serving["sequence_length"]
    return [
        *accuracy_density_checks(runs, choice(runs)),
        f"- SavedModel texts/s at batch {serving['batch_size']}, gated / dense, at sequence length "
        f"{length}: {ratio:.2f}x (>= {MIN_SPEEDUP}x at >= {MIN_LENGTH}): "
        + _pass(ratio >= MIN_SPEEDUP and length >= MIN_LENGTH),
    ]


def epoch_table(timed, chosen):
    """The side-by-side epoch times (round 0); the speed-up of `sparse`."""
    rows, by_setting = [], {r["setting"]: r for r in timed}
    dense = np.mean(by_setting["dense"]["epoch_seconds"])
    for setting in ("dense", chosen, "sparse"):
        run = by_setting[setting]
        mean, last = np.mean(run["epoch_seconds"]), by_setting["dense"]["epoch_seconds"][-1] / run["epoch_seconds"][-1]
        rows.append([0, setting, _epochs(run), f"{mean:.0f}", f"{dense / mean:.2f}x", f"{last:.2f}x"])
    headers = "round | setting | epoch seconds | mean | dense / this, mean | dense / this, last epoch"
    return grid(headers, rows), dense / np.mean(by_setting["sparse"]["epoch_seconds"])


def sparse_checks(runs, speedup, serving, chosen):
    """Issue 41's Done-when checks and the serving of the sparse-trained model beside the others."""
    median = serving["median"]
    ratio = median["sparse"]["texts_per_second"] / median["gated"]["texts_per_second"]
    return [
        f"- epoch speed-up of `sparse` over dense, side by side (mean epoch, the smallest over rounds): "
        f"{speedup:.2f}x (>= {MIN_TRAINING_SPEEDUP}x): {_pass(speedup >= MIN_TRAINING_SPEEDUP)}",
        *accuracy_density_checks(runs, "sparse"),
        f"- SavedModel texts/s at batch {serving['batch_size']}, `sparse` / `{chosen}` (relaxed-gate training; "
        f"both serve the same graph): {ratio:.2f}x (>= {SAME_SERVING}x, the rounds' noise allowed): "
        + _pass(ratio >= SAME_SERVING),
        "",
        *serving_table(serving),
    ]


def serving_table(serving):
    """The serving record `serving`: how it was timed, the medians, the load."""
    load, batch, length = serving["load_average"], serving["batch_size"], serving["sequence_length"]
    cores = serving["machine"].split(" CPU cores")[0].split(", ")[-1]
    rows = [
        [f"{key} (`{serving['runs'][key]}`)", *(f"{m[k]:.2f}" for k in MS), f"{m['texts_per_second']:.1f}"]
        for key, m in serving["median"].items()
    ]
    ratios = serving.get("ratio_to_dense", {"gated": serving["ratio_gated_to_dense"]})
    headers = f"model | batch 1 p50 (ms) | batch 1 p99 (ms) | batch 1 mean (ms) | batch {batch} texts/s"
    return [
        f"`{serving['command']}` on {serving['machine']}.",
        f"The {serving['texts']} of {serving['test_texts_scanned']} IMDB test texts with >= "
        f"{length} tokens (both models see {length} real tokens);",
        f"batch 1: {serving['calls']} calls after {serving['warmup']} warm-up calls; batch {batch}: "
        f"{serving['batches']} batches after 3 warm-up batches; medians over {serving['rounds']} rounds, each",
        "measurement taken for both models in turn, the order alternating between rounds.",
        f"Gated density on the first batch of these texts: {serving['gated_density_first_batch']:.4f}.",
        "",
        *grid(headers, rows),
        *(f"| {key} / dense | {r['p50']:.2f} | | | {r['texts_per_second']:.2f} |" for key, r in ratios.items()),
        "",
        f"1-minute load average {load['before'][0]:.2f} before and {load['after'][0]:.2f} after "
        f"({cores} cores; the benchmark itself accounts for about 1).",
    ]


def trec_table(runs):
    rows = []
    for group in (_setting(runs, setting) for setting in ("relaxed", "sparse")):
        seconds = np.median([np.median(r["epoch_seconds"]) for r in group])
        scores = [ACCURACY(group), ATTENDED(group), VALIDATION(group), EPOCHS(group), f"{seconds:.1f}"]
        rows.append([group[0]["setting"], seeds(group), *scores])
    headers = "setting | seeds | test accuracy | test attended density | val accuracy | epochs | median epoch s"
    return grid(headers, rows)


def tables(study, root):
    """The tables of `results/transformer_check/README.md` (its prose, the design included, is written by hand)."""
    from experiments.reports import fill_readme

    results = os.path.join(root, study.folder)
    runs = runner.load_runs(os.path.join(results, "runs"))
    chosen, serving = choice(runs), runner.read_json(os.path.join(results, "serving.json"))
    sparse_serving = runner.read_json(os.path.join(results, "serving_sparse.json"))
    epochs, speedup = epoch_table(runner.load_runs(os.path.join(results, "epoch_time")), chosen)
    seeds = "; ".join(f"seed {r['seed']}: {_epochs(r)}" for r in _setting(runs, "sparse"))  # by file name: by seed
    seeds = f"Epoch seconds of the 3-seed `sparse` runs themselves (other jobs may have shared the machine): {seeds}"
    blocks = dict(selection=selection_table(runs), seeds=seeds_table(runs), checks=checks(runs, serving))
    blocks.update(serving=serving_table(serving), epochs=epochs, sparse_seeds=[seeds])
    blocks.update(sparse_checks=sparse_checks(runs, speedup, sparse_serving, chosen))
    blocks["trec"] = trec_table(runner.load_runs(os.path.join(results, "trec")))
    head = [f"on {runs[0]['machine']}. Seeds 0, 1, 2; mean ± std over the seeds listed."]
    fill_readme(study, root, runs, head=head, **blocks)
