"""GA-Net gates on a Transformer against the dense Transformer on IMDB (issue 17).

    python experiments/transformer_check.py --data-dir ../shared/data [--parts PART ...]

The design, fixed before any run. Every run is `python -m ganet_tf train
--dataset imdb --sequence-length 512 --buckets 8 --epochs 8 --patience 2
--seed S`, with `--model transformer` (dense) or `--model
ganet_transformer --target-density 0.2` (gated; `top_k` test gates are then
the default) and an auxiliary network:

- `select`: seed 0 of the dense model and of two gated candidates, `--aux
  fnn` and `--aux attention`; the candidate with the higher VALIDATION
  accuracy (`validation_accuracy` of the run summary: the best epoch's
  weights, restored by `train`, on the validation split) is chosen, the
  first on a tie; test scores play no part. A BiLSTM auxiliary network is no candidate: at serving it runs
  512 sequential steps, which would cost more than gathering the open
  tokens saves.
- `seeds`: seeds 1 and 2 of the dense model and of the chosen candidate
  (seed 0 comes from `select`); it needs `select` done.
- `serve`: exports both seed-0 runs (or, where their models are not on this
  machine, since `runs/` is not kept when a session moves to another one,
  the lowest seed whose two models are) with `ganet_tf.export.export_saved_model`,
  loads them with plain `tf.saved_model.load(...).signatures["serving_default"]`
  and times them side by side in one process on the IMDB test texts that
  have at least 512 tokens (counted by the runs' own vectorizers before
  padding), so both models see 512 real tokens: batch 1 p50/p99/mean and
  batch 64 texts/s (`latency` and `throughput` of
  `experiments/bench_serving.py`), each measurement taken for both models
  in turn, the order alternating, over `--rounds` rounds; medians over the
  rounds go to `serving.json`.
- `sparse` (issue 41): seeds 0-2 of the chosen candidate with
  `--sparse-training` (its blocks and pooling train on the open tokens only).
- `epochs` (issue 41): the epoch seconds of dense, the chosen candidate and
  `sparse` side by side: seed 0 of each trained `--epochs-time` epochs, one
  after another in one command (`RESULTS/epoch_time/`).
- `serve_sparse` (issue 41): the SavedModels of the three timed side by side
  as in `serve` (`serving_sparse.json`); dense and the chosen candidate are
  the runs of `epochs` (`top_k` serving costs the same however long a model
  trained), `sparse` is its seed 0.
- `trec` (issue 41): the held-out check of the sparse-training default on
  TREC, `ganet_transformer` with and without `--sparse-training`, seeds 0-2.

Run summaries go to `RESULTS/runs/NAME.json` (with their command and
machine), models to the git-ignored `runs/transformer_check/`; training
keeps a backup, so a killed command resumes where it stopped, and finished
runs are skipped. Two processes started apart share the runs: a run that
the other one is training is skipped. `RESULTS/README.md` is rewritten
after each run and by `python -m experiments table transformer_check`. `--limit` and `--epochs` are for
smoke runs and need their own `--results` and `--out-root`.
"""

import argparse
import json
import math
import os
import shlex
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import REPO
from runner import RunBusy
from runner import attended_density
from runner import exclusive
from runner import load_runs
from runner import machine
from runner import mean_std
from runner import read_json
from runner import run_or_skip
from runner import seed_list
from runner import training_elsewhere
from runner import write_json
from runner import write_results_readme

RESULTS = os.path.join(REPO, "results", "transformer_check")
MODELS = os.path.join("runs", "transformer_check")
EPOCHS = 8
SEQUENCE = ["--sequence-length", "512", "--buckets", "8"]
GATED = ["--model", "ganet_transformer", "--target-density", "0.2"]
# The candidates train with relaxed gates, every token through every block
# (`--no-sparse-training`: `train` defaults to sparse training since issue 41;
# the runs before that default had no flag and trained the same way).
SETTINGS = {
    "dense": ["--model", "transformer"],
    "fnn": [*GATED, "--aux", "fnn", "--no-sparse-training"],
    "attention": [*GATED, "--aux", "attention", "--no-sparse-training"],
}
CANDIDATES = ("fnn", "attention")  # in this order: a tie goes to the first
SEEDS = (0, 1, 2)
# Issue 41: the chosen candidate trained with token dropping (`--sparse-training`).
SPARSE = "sparse"
SPARSE_FLAG = "--sparse-training"
# The side-by-side epoch timing: these settings, seed 0, `--epochs EPOCH_TIME_EPOCHS`.
EPOCH_TIME = ("dense", "chosen", SPARSE)
EPOCH_TIME_EPOCHS = 2
MIN_TRAINING_SPEEDUP = 1.5
# "Serving at least as fast as today's gated model": the two SavedModels run
# the same graph, so the bound allows the rounds' noise.
SAME_SERVING = 0.95
# Held out of the sparse-training default (chosen on IMDB validation): TREC,
# `train`'s TREC defaults with `--model ganet_transformer`, relaxed vs sparse.
HELD_OUT = {"relaxed": ["--no-sparse-training"], SPARSE: ["--sparse-training"]}
PARTS = ("select", "seeds", "serve", "sparse", "epochs", "serve_sparse", "trec")
# The Done-when item's bounds.
MAX_ACCURACY_GAP = 0.01
MAX_DENSITY = 0.25
MIN_SPEEDUP = 1.5
MIN_LENGTH = 512


def run_name(setting, seed):
    return f"imdb_{setting}_seed{seed}"


def setting_flags(setting, chosen=None):
    """The model flags of `setting`; `sparse` is the chosen candidate's with
    `--sparse-training`."""
    if setting == SPARSE:
        return [*(f for f in SETTINGS[chosen] if f != "--no-sparse-training"), SPARSE_FLAG]
    return SETTINGS[setting]


def train(setting, seed, args, chosen=None, epochs=None, runs_dir=None, name=None):
    """One run (skipped when finished or when another process trains it)."""
    epochs = args.epochs if epochs is None else epochs
    flags = ["--dataset", "imdb", "--data-dir", args.data_dir, *SEQUENCE, "--epochs", str(epochs)]
    flags += ["--patience", "2", "--seed", str(seed), *setting_flags(setting, chosen)]
    flags += ["--limit", str(args.limit)] if args.limit else []
    extra = {"setting": setting, **({"gates_of": chosen} if setting == SPARSE else {})}
    run = run_or_skip(
        name or run_name(setting, seed),
        flags,
        runs_dir or os.path.join(args.results, "runs"),
        out_root=args.out_root,
        resumable=True,
        extra=extra,
    )
    write_readme(args.results)
    return run


def find(runs, setting, seed):
    return next((r for r in runs if r.get("setting") == setting and r["seed"] == seed), None)


def choice(runs):
    """The candidate whose seed-0 run has the higher VALIDATION accuracy (the
    first on a tie), or None while a candidate's seed-0 run is missing."""
    chosen = [find(runs, setting, 0) for setting in CANDIDATES]
    if None in chosen:
        return None
    return max(chosen, key=lambda run: run["validation_accuracy"])["setting"]


def chosen_or_wait(results, part):
    """The chosen candidate; None (said once here) while another process
    trains a candidate; exits with one error line when `select` is not done."""
    runs_dir = os.path.join(results, "runs")
    runs = load_runs(runs_dir)
    chosen = choice(runs)
    if chosen:
        return chosen
    missing = [run_name(setting, 0) for setting in CANDIDATES if find(runs, setting, 0) is None]
    busy = training_elsewhere(runs_dir, missing)
    if not busy:
        raise SystemExit(
            f"error: part {part} needs part select done first (missing {', '.join(missing)}): run --parts select"
        )
    print(f"    part {part}: the choice waits for {', '.join(busy)} (another process trains it), skipped", flush=True)
    return None


def part_select(args):
    for setting in ("dense", *CANDIDATES):
        train(setting, 0, args)


def part_seeds(args):
    chosen_or_wait(args.results, "seeds")  # exits here when select is not done
    for seed in SEEDS[1:]:
        train("dense", seed, args)
        chosen = chosen_or_wait(args.results, "seeds")
        if chosen:
            train(chosen, seed, args)


def part_sparse(args):
    """Issue 41: the chosen candidate with `--sparse-training`, every seed."""
    chosen = chosen_or_wait(args.results, "sparse")
    if chosen:
        for seed in SEEDS:
            train(SPARSE, seed, args, chosen=chosen)


def part_trec(args):
    """Issue 41's held-out dataset: `ganet_transformer` on TREC with and
    without sparse training, seeds 0-2 (`RESULTS/trec/`)."""
    for seed in SEEDS:
        for setting, flags in HELD_OUT.items():
            command = ["--dataset", "trec", "--data-dir", args.data_dir, "--model", "ganet_transformer"]
            command += ["--seed", str(seed), *flags, *(["--limit", str(args.limit)] if args.limit else [])]
            command += ["--epochs", str(args.epochs)] if args.epochs != EPOCHS else []
            run_or_skip(
                f"trec_{setting}_seed{seed}",
                command,
                os.path.join(args.results, "trec"),
                out_root=args.out_root,
                extra={"setting": setting},
            )
    write_readme(args.results)


def trec_section(results):
    runs = load_runs(os.path.join(results, "trec"))
    if not runs:
        return []
    lines = [
        "### Held out: TREC (not used in choosing the default)",
        "",
        "`python -m ganet_tf train --dataset trec --model ganet_transformer --seed S` with `--no-sparse-training`",
        "(relaxed) or `--sparse-training`, `train`'s other TREC defaults (target density 0.3, `top_k` test gates).",
        "",
        "| setting | seeds | test accuracy | test attended density | val accuracy | epochs | median epoch s |",
        "|---|---|---|---|---|---|---|",
    ]
    for setting in HELD_OUT:
        group = [r for r in runs if r.get("setting") == setting]
        if group:
            lines.append(
                f"| {setting} | {seed_list(group)} | {_stat(group, lambda r: r['test_accuracy'])} "
                f"| {_stat(group, attended_density)} | {_stat(group, lambda r: r['validation_accuracy'])} "
                f"| {_mean(group, lambda r: r['epochs_trained'])} "
                f"| {np.median([np.median(r['epoch_seconds']) for r in group]):.1f} |"
            )
    return lines


def epoch_time_name(setting, index):
    return f"imdb_{setting}_seed0_round{index}"


def part_epochs(args):
    """Issue 41: epoch seconds of dense, relaxed-gate and sparse training side
    by side: seed 0 of each trained `--epochs-time` epochs (no early stop
    before then), one after another in this process's rounds, the order
    reversed in every other round; runs go to `RESULTS/epoch_time/`."""
    chosen = chosen_or_wait(args.results, "epochs")
    if not chosen:
        return
    runs_dir = os.path.join(args.results, "epoch_time")
    for index in range(args.epoch_rounds):
        order = EPOCH_TIME if index % 2 == 0 else EPOCH_TIME[::-1]
        for setting in order:
            real = chosen if setting == "chosen" else setting
            name = epoch_time_name(real, index)
            train(real, 0, args, chosen=chosen, epochs=args.epochs_time, runs_dir=runs_dir, name=name)


def long_texts(model_dirs, data_dir, limit):
    """The test texts with at least the padded length in tokens under every
    run's vectorizer; returns `(texts, padded length, texts scanned)`."""
    from ganet_tf.data import load_dataset
    from ganet_tf.data.vectorizer import vectorize
    from ganet_tf.training.trained_run import load_preprocessing

    texts = list(load_dataset("imdb", data_dir).test_texts)[: limit or None]
    keep = np.ones(len(texts), dtype=bool)
    lengths = set()
    for model_dir in model_dirs:
        vectorizer, _ = load_preprocessing(model_dir)
        length = vectorizer.get_config()["output_sequence_length"]
        # Truncated at `length`: a text fills every position iff it has >= length tokens.
        keep &= (vectorize(vectorizer, texts) != 0).sum(axis=1) >= length
        lengths.add(length)
    if len(lengths) != 1:
        raise SystemExit(f"error: the runs pad to different lengths: {sorted(lengths)}")
    return [text for text, kept in zip(texts, keep, strict=True) if kept], lengths.pop(), len(texts)


def time_side_by_side(functions, texts, args):
    """Each measurement for every model in turn, the order alternating
    between rounds; returns the rounds' scores."""
    from bench_serving import latency
    from bench_serving import throughput

    # Throughput needs full batches: repeat the texts when there are fewer.
    batch_texts = texts * math.ceil(args.batch_size / len(texts))
    names = list(functions)
    rounds = []
    for index in range(args.rounds):
        order = names if index % 2 == 0 else names[::-1]
        scores = {name: {} for name in names}
        for name in order:
            scores[name]["latency"] = latency(functions[name], texts, args.calls, args.warmup)
        for name in order:
            scores[name]["throughput"] = throughput(functions[name], batch_texts, args.batch_size, args.batches)
        print(f"    round {index + 1}/{args.rounds}: {json.dumps(scores)}", flush=True)
        rounds.append(scores)
    return rounds


def medians(rounds):
    """Per model, the median over the rounds of every timing, and the ratios
    gated / dense of texts/s (batch 64) and of p50 (batch 1)."""
    result = {}
    for name in rounds[0]:
        result[name] = {
            key: round(float(np.median([r[name]["latency"][key] for r in rounds])), 3)
            for key in ("p50_ms", "p99_ms", "mean_ms")
        }
        texts_per_second = np.median([r[name]["throughput"]["texts_per_second"] for r in rounds])
        result[name]["texts_per_second"] = round(float(texts_per_second), 1)
    ratios = {
        key: {
            "texts_per_second": result[key]["texts_per_second"] / result["dense"]["texts_per_second"],
            "p50": result[key]["p50_ms"] / result["dense"]["p50_ms"],
        }
        for key in result
        if key != "dense"
    }
    return result, ratios


def serve_runs(args):
    """`{"dense": run, "gated": run}` of the lowest seed whose two models
    are on this machine (seed 0 where they are), or None (said why) when
    they are not ready."""
    chosen = chosen_or_wait(args.results, "serve")
    if chosen is None:
        return None
    runs_dir = os.path.join(args.results, "runs")
    runs = load_runs(runs_dir)
    names = {run["name"] for run in runs}
    busy = training_elsewhere(runs_dir, [run_name(s, seed) for s in SETTINGS for seed in SEEDS])
    if busy:
        print(f"    part serve: another process is training {', '.join(busy)}; skipped (time when it is done)")
        return None
    if run_name("dense", 0) not in names:
        raise SystemExit(
            "error: part serve needs part select done first (missing imdb_dense_seed0): run --parts select"
        )
    for seed in SEEDS:
        pair = {"dense": find(runs, "dense", seed), "gated": find(runs, chosen, seed)}
        if None not in pair.values() and all(
            os.path.exists(os.path.join(REPO, args.out_root, run["name"], "model.keras")) for run in pair.values()
        ):
            return pair
    raise SystemExit(
        f"error: part serve needs the models of one seed of dense and {chosen} in {args.out_root}, and none has "
        "both here (runs/ is not kept across machines): run --parts seeds on this machine while a seed is "
        "still to train, so that its two models are here"
    )


def part_serve(args):
    path = os.path.join(args.results, "serving.json")
    if os.path.exists(path):
        print(f"    part serve: {path} exists (delete it to measure again), skipped", flush=True)
        return
    pair = serve_runs(args)
    if pair is None:
        return
    try:
        with exclusive(path):
            write_json(path, measure(pair, args))
    except RunBusy:
        print("    part serve: another process is timing the models, skipped", flush=True)
    write_readme(args.results)


def part_serve_sparse(args):
    """Issue 41: the SavedModels of the dense, the relaxed-gate and the
    sparse-trained model timed side by side (`serving_sparse.json`): the
    sparse model is `imdb_sparse_seed0`; the other two are the seed-0 runs of
    part `epochs` (serving cost does not depend on how far a model trained:
    `top_k` opens the same count of tokens)."""
    path = os.path.join(args.results, "serving_sparse.json")
    if os.path.exists(path):
        print(f"    part serve_sparse: {path} exists (delete it to measure again), skipped", flush=True)
        return
    chosen = chosen_or_wait(args.results, "serve_sparse")
    if not chosen:
        return
    folders = {
        "dense": epoch_time_name("dense", 0),
        "gated": epoch_time_name(chosen, 0),
        SPARSE: run_name(SPARSE, 0),
    }
    missing = [n for n in folders.values() if not os.path.exists(os.path.join(REPO, args.out_root, n, "model.keras"))]
    if missing:
        raise SystemExit(
            f"error: part serve_sparse needs the models {', '.join(missing)} in {args.out_root}: "
            "run --parts sparse epochs on this machine first"
        )
    try:
        with exclusive(path):
            write_json(path, measure({key: {"name": name} for key, name in folders.items()}, args))
    except RunBusy:
        print("    part serve_sparse: another process is timing the models, skipped", flush=True)
    write_readme(args.results)


def measure(pair, args):
    """Exports the runs, loads the exports and times them (`serving.json`)."""
    import tensorflow as tf

    from ganet_tf.export import export_saved_model

    model_dirs = {key: os.path.join(REPO, args.out_root, run["name"]) for key, run in pair.items()}
    texts, length, scanned = long_texts(model_dirs.values(), args.data_dir, args.limit)
    if not texts:
        raise SystemExit(f"error: no test text has {length} tokens")
    loads = [list(os.getloadavg())]
    with tempfile.TemporaryDirectory() as scratch:
        signatures = {
            key: tf.saved_model.load(export_saved_model(folder, key, base=scratch)).signatures["serving_default"]
            for key, folder in model_dirs.items()
        }
        functions = {
            key: (lambda batch, serve=serve: serve(text=tf.constant(batch))["probabilities"].numpy())
            for key, serve in signatures.items()
        }
        density = float(np.mean(signatures["gated"](text=tf.constant(texts[: args.batch_size]))["density"].numpy()))
        rounds = time_side_by_side(functions, texts, args)
    loads.append(list(os.getloadavg()))
    timings, ratios = medians(rounds)
    return {
        "command": "python experiments/transformer_check.py " + shlex.join(sys.argv[1:]),
        "machine": machine(gpus=len(tf.config.list_physical_devices("GPU")), software=True),
        "load_average": {"before": loads[0], "after": loads[1]},
        "runs": {key: run["name"] for key, run in pair.items()},
        "sequence_length": length,
        "test_texts_scanned": scanned,
        "texts": len(texts),
        "gated_density_first_batch": density,
        **{key: getattr(args, key) for key in ("calls", "warmup", "batches", "batch_size", "rounds")},
        "median": timings,
        "ratio_gated_to_dense": ratios["gated"],
        **({"ratio_to_dense": ratios} if len(ratios) > 1 else {}),
        "rounds_scores": rounds,
    }


def _stat(group, get):
    return mean_std([get(run) for run in group])


def _mean(group, get, scale=1, digits=1):
    """The mean of the non-None `get(run) / scale`, '-' when there is none."""
    values = [get(run) for run in group if get(run) is not None]
    return f"{np.mean(values) / scale:.{digits}f}" if values else "-"


def selection_table(runs):
    chosen = choice(runs)
    lines = [
        "## Selection (seed 0, validation only)",
        "",
        "| model | setting | val accuracy | val attended density | epochs | best epoch | chosen |",
        "|---|---|---|---|---|---|---|",
    ]
    for setting in ("dense", *CANDIDATES):
        run = find(runs, setting, 0)
        if run is None:
            continue
        density = attended_density(run, "validation")
        lines.append(
            f"| {run['model']} | {setting} | {run['validation_accuracy']:.4f} "
            f"| {'-' if density is None else f'{density:.4f}'} | {run['epochs_trained']} | {run['best_epoch']} "
            f"| {'yes' if setting == chosen else ('-' if setting == 'dense' else 'no')} |"
        )
    return lines if len(lines) > 4 else []


def seeds_table(runs):
    chosen = choice(runs)
    lines = [
        "## Three seeds (test; validation beside it)",
        "",
        "Epochs: mean of the epochs trained. Pooling MFLOPs: the attention pooling's FLOPs per test",
        "text as `train` stores them (`attention_flops_gated`, else `attention_flops_soft`), in",
        "millions, mean over the seeds; the package counts no FLOPs of the encoder blocks.",
        "",
        "| model | setting | seeds | test accuracy | test attended density | val accuracy | epochs | pooling MFLOPs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for setting in ("dense", *([chosen, SPARSE] if chosen else [])):
        group = [r for r in runs if r.get("setting") == setting]
        if not group:
            continue
        lines.append(
            f"| {group[0]['model']} | {setting} | {seed_list(group)} | {_stat(group, lambda r: r['test_accuracy'])} "
            f"| {_stat(group, attended_density) if setting != 'dense' else '1 (all tokens)'} "
            f"| {_stat(group, lambda r: r['validation_accuracy'])} | {_mean(group, lambda r: r['epochs_trained'])} "
            f"| {_mean(group, lambda r: r.get('attention_flops_gated') or r.get('attention_flops_soft'), 1e6, 2)} |"
        )
    return lines if len(lines) > 7 else []


def accuracy_density_checks(setting, group, dense):
    """The Done-when lines on the 3-seed test accuracy of `group` against
    dense and on its attended density."""
    gap = np.mean([r["test_accuracy"] for r in group]) - np.mean([r["test_accuracy"] for r in dense])
    density = np.mean([attended_density(r) for r in group])
    return [
        f"- test accuracy of `{setting}` minus dense, 3-seed means: {gap * 100:+.2f} points "
        f"(>= -{MAX_ACCURACY_GAP * 100:.0f}): {'pass' if gap >= -MAX_ACCURACY_GAP else 'FAIL'}",
        f"- attended test density of `{setting}`, 3-seed mean: {density:.4f} "
        f"(<= {MAX_DENSITY}): {'pass' if density <= MAX_DENSITY else 'FAIL'}",
    ]


def checks(runs, serving):
    """The Done-when checks, computed from the stored runs and timings."""
    chosen = choice(runs)
    dense = [r for r in runs if r.get("setting") == "dense" and r["seed"] in SEEDS]
    gated = [r for r in runs if chosen and r.get("setting") == chosen and r["seed"] in SEEDS]
    lines = ["## Done-when checks", ""]
    if len(dense) < len(SEEDS) or len(gated) < len(SEEDS):
        lines.append(f"- accuracy and density: pending ({len(dense)}/3 dense, {len(gated)}/3 gated seeds)")
    else:
        lines += accuracy_density_checks(chosen, gated, dense)
    if serving is None:
        lines.append("- serving: pending (part serve)")
    else:
        ratio = serving["ratio_gated_to_dense"]["texts_per_second"]
        ok = ratio >= MIN_SPEEDUP and serving["sequence_length"] >= MIN_LENGTH
        lines.append(
            f"- SavedModel texts/s at batch {serving['batch_size']}, gated / dense, at sequence length "
            f"{serving['sequence_length']}: {ratio:.2f}x (>= {MIN_SPEEDUP}x at >= {MIN_LENGTH}): "
            f"{'pass' if ok else 'FAIL'}"
        )
    return lines


def _epochs(run):
    return f"{', '.join(f'{s:.0f}' for s in run['epoch_seconds'])}"


def sparse_section(runs, results):
    """Issue 41: the side-by-side epoch times, the sparse-trained model's
    scores against the dense 3-seed mean, and its serving beside the
    relaxed-gate model's."""
    chosen = choice(runs)
    timed = load_runs(os.path.join(results, "epoch_time"))
    path = os.path.join(results, "serving_sparse.json")
    serving = read_json(path) if os.path.exists(path) else None
    if not chosen or not (timed or serving or find(runs, SPARSE, 0)):
        return []
    lines = [
        "## Sparse training (issue 41)",
        "",
        f"`sparse` is `{chosen}` trained with `--sparse-training`: every block and the pooling train on the",
        "round(0.2 T) tokens of highest relaxed gate only (`results/sparse_training/README.md` states the rule).",
        "",
        f"Epoch seconds side by side (`--parts epochs`): seed 0 of dense, `{chosen}` (relaxed gates, every token",
        f"through every block) and `sparse`, each trained `--epochs {EPOCH_TIME_EPOCHS}` (full IMDB training split,",
        "validation inside the epoch) one after another in one command, the order reversed in every other round;",
        "epoch 1 includes tracing the graph. Speed-up: the dense run's seconds over the other's.",
        "",
        "| round | setting | epoch seconds | mean | dense / this, mean | dense / this, last epoch |",
        "|---|---|---|---|---|---|",
    ]
    speedups = []
    for index in sorted({int(r["name"].rsplit("round", 1)[1]) for r in timed}):
        group = {r["setting"]: r for r in timed if r["name"].endswith(f"round{index}")}
        dense = group.get("dense")
        for setting in ("dense", chosen, SPARSE):
            run = group.get(setting)
            if run is None:
                continue
            mean = float(np.mean(run["epoch_seconds"]))
            ratio = last = "-"
            if dense is not None:
                ratio_value = float(np.mean(dense["epoch_seconds"])) / mean
                ratio, last = f"{ratio_value:.2f}x", f"{dense['epoch_seconds'][-1] / run['epoch_seconds'][-1]:.2f}x"
                if setting == SPARSE:
                    speedups.append(ratio_value)
            lines.append(f"| {index} | {setting} | {_epochs(run)} | {mean:.0f} | {ratio} | {last} |")
    sparse_runs = [r for r in runs if r.get("setting") == SPARSE and r["seed"] in SEEDS]
    dense_runs = [r for r in runs if r.get("setting") == "dense" and r["seed"] in SEEDS]
    if sparse_runs:
        lines += [
            "",
            "Epoch seconds of the 3-seed `sparse` runs themselves (other jobs may have shared the machine): "
            + "; ".join(f"seed {r['seed']}: {_epochs(r)}" for r in sorted(sparse_runs, key=lambda r: r["seed"])),
        ]
    lines += ["", "Done-when checks (issue 41):", ""]
    if speedups:
        speedup = min(speedups)
        lines.append(
            f"- epoch speed-up of `sparse` over dense, side by side (mean epoch, the smallest over rounds): "
            f"{speedup:.2f}x (>= {MIN_TRAINING_SPEEDUP}x): {'pass' if speedup >= MIN_TRAINING_SPEEDUP else 'FAIL'}"
        )
    else:
        lines.append("- epoch speed-up: pending (part epochs)")
    if len(sparse_runs) == len(SEEDS) and len(dense_runs) == len(SEEDS):
        lines += accuracy_density_checks(SPARSE, sparse_runs, dense_runs)
    else:
        lines.append(f"- accuracy and density: pending ({len(sparse_runs)}/3 sparse seeds)")
    if serving is None:
        lines.append("- serving: pending (part serve_sparse)")
    else:
        ratio = serving["median"][SPARSE]["texts_per_second"] / serving["median"]["gated"]["texts_per_second"]
        lines.append(
            f"- SavedModel texts/s at batch {serving['batch_size']}, `sparse` / `{chosen}` (relaxed-gate training; "
            f"both serve the same graph): {ratio:.2f}x (>= {SAME_SERVING}x, the rounds' noise allowed): "
            f"{'pass' if ratio >= SAME_SERVING else 'FAIL'}"
        )
        lines += ["", *serving_table(serving)[2:]]
    return lines


def serving_table(serving):
    if serving is None:
        return []
    median, ratio, load = serving["median"], serving["ratio_gated_to_dense"], serving["load_average"]
    rows = [
        f"| {key} (`{serving['runs'][key]}`) | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} | {m['mean_ms']:.2f} "
        f"| {m['texts_per_second']:.1f} |"
        for key, m in median.items()
    ]
    return [
        "## Serving (SavedModel, `serving_default`, CPU)",
        "",
        f"`{serving['command']}` on {serving['machine']}.",
        f"The {serving['texts']} of {serving['test_texts_scanned']} IMDB test texts with >= "
        f"{serving['sequence_length']} tokens (both models see {serving['sequence_length']} real tokens);",
        f"batch 1: {serving['calls']} calls after {serving['warmup']} warm-up calls; batch {serving['batch_size']}: "
        f"{serving['batches']} batches after 3 warm-up batches; medians over {serving['rounds']} rounds, each",
        "measurement taken for both models in turn, the order alternating between rounds"
        + (" (the texts repeated to fill a batch)." if serving["texts"] < serving["batch_size"] else "."),
        f"Gated density on the first batch of these texts: {serving['gated_density_first_batch']:.4f}.",
        "",
        f"| model | batch 1 p50 (ms) | batch 1 p99 (ms) | batch 1 mean (ms) | batch {serving['batch_size']} texts/s |",
        "|---|---|---|---|---|",
        *rows,
        *(
            f"| {key} / dense | {r['p50']:.2f} | | | {r['texts_per_second']:.2f} |"
            for key, r in serving.get("ratio_to_dense", {"gated": ratio}).items()
        ),
        "",
        f"1-minute load average {load['before'][0]:.2f} before and {load['after'][0]:.2f} after "
        f"({os.cpu_count()} cores; the benchmark itself accounts for about 1).",
    ]


def write_readme(results):
    runs = load_runs(os.path.join(results, "runs"))
    path = os.path.join(results, "serving.json")
    serving = read_json(path) if os.path.exists(path) else None
    design = __doc__.split("\n\n", 2)[2].split("\n\nRun summaries")[0]
    head = [
        "# GA-Net gates on a Transformer, IMDB (issue 17)",
        "",
        "Written by `python experiments/transformer_check.py --data-dir ../shared/data`",
        f"on {runs[0]['machine']}. Seeds {', '.join(map(str, SEEDS))}; mean ± std over the seeds listed.",
        "",
        design,
        "",
    ]
    tables = [*selection_table(runs), "", *seeds_table(runs), "", *checks(runs, serving), "", *serving_table(serving)]
    tables += ["", *sparse_section(runs, results), "", *trec_section(results)]
    os.makedirs(results, exist_ok=True)
    write_results_readme(results, [*head, *tables], runs)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("GANET_DATA_DIR", "../shared/data"))
    parser.add_argument("--parts", choices=PARTS, nargs="+", default=list(PARTS))
    parser.add_argument("--results", default=RESULTS, help="results folder (smoke runs: another one)")
    parser.add_argument("--out-root", default=MODELS, help="folder of the trained models")
    parser.add_argument("--limit", type=int, help="smoke runs: the first N texts of each split")
    parser.add_argument("--epochs", type=int, default=EPOCHS, help="smoke runs: fewer epochs")
    parser.add_argument("--calls", type=int, default=200, help="batch-1 calls per round")
    parser.add_argument("--warmup", type=int, default=20, help="batch-1 warm-up calls per round")
    parser.add_argument("--batches", type=int, default=20, help="batches of --batch-size per round")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--epochs-time", type=int, default=EPOCH_TIME_EPOCHS, help="part epochs: epochs per run")
    parser.add_argument("--epoch-rounds", type=int, default=1, help="part epochs: rounds of the three runs")
    args = parser.parse_args(argv)
    args.results = os.path.abspath(args.results)
    if os.path.normpath(args.out_root) != MODELS:
        args.out_root = os.path.abspath(args.out_root)
    default_models = args.out_root in (MODELS, os.path.join(REPO, MODELS))
    if (args.limit is not None or args.epochs != EPOCHS) and (args.results == RESULTS or default_models):
        parser.error("--limit and --epochs are for smoke runs: give them their own --results and --out-root")
    args.data_dir = os.path.abspath(args.data_dir)
    return args


def main(argv=None):
    args = parse_args(argv)
    parts = {
        "select": part_select,
        "seeds": part_seeds,
        "serve": part_serve,
        "sparse": part_sparse,
        "epochs": part_epochs,
        "serve_sparse": part_serve_sparse,
        "trec": part_trec,
    }
    for part in PARTS:
        if part in args.parts:
            parts[part](args)
    write_readme(args.results)


if __name__ == "__main__":
    main()
