"""Training steps, memory and served inference of the LRA Text models, gated against dense (issue 77).

    python -m experiments.bench_long_documents --data-dir ../shared/data [--lengths 1000 2000 3000 4000]
        [--batches 8 32] [--layouts padded bucketed] [--runs 5] [--out results/lra_text/bench]
        [--gated SETTING] [--models dense gated linear conv]

The models exactly as `lra_text` trains them: its flags (`experiments/studies.py`) go through `train`'s parser,
`TrainConfig` and `model_arguments`. The gated one is `--gated`, by default the recommended setting
(`LRA_RECOMMENDED`); a cell is kept per gated setting. `conv` (the convolutions alone) joins on request. Data: IMDB
training reviews read as bytes. Two layouts per length T: `padded`, every review cut or padded to T bytes (LRA's
protocol), and `bucketed`, reviews of similar length padded to the longest of their batch, cut at T (the fair case,
`train`'s `--buckets 8`; a round is the same few batches for both models). One training step is `train_on_batch`; the
dense and the gated step run side by side in this process, in alternating order, medians of `--runs` rounds. Peak memory
is the maximum resident set of a process of its own per model and cell that runs the same steps (`--memory-of`; one
killed for memory is reported as such, and its model is then not timed there). Inference: each model's SavedModel
(`build_serving_archive`, raw strings in) on the same reviews. Writes `OUT/bench.json` (resumable) and its README's
blocks.
"""

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from experiments import bench
from experiments import runner
from experiments import tables
from experiments.protocol import LRA_BENCH_MODELS
from experiments.protocol import LRA_RECOMMENDED
from experiments.protocol import LRA_SETTINGS
from experiments.protocol import LRA_TEXT

# The settings `--gated` takes: those of the gated Transformer.
GATED_SETTINGS = tuple(name for name, flags in LRA_SETTINGS.items() if "ganet_transformer" in flags)
KEYS = ("T", "batch", "layout", "gated")  # a cell
ROUND_BATCHES = 4  # bucketed: batches per round


def _config(setting, data_dir, batch):
    """The `TrainConfig` of `lra_text`'s `setting` at `batch` reviews a step (IMDB's first 2,000 training reviews)."""
    flags = [*LRA_TEXT, *LRA_SETTINGS[setting], "--data-dir", data_dir, "--batch-size", str(batch)]
    config = runner.parse_train([*flags, "--limit", "2000"])
    config.gradient_accumulation_steps = None  # one step is one batch here
    return config


def _model(config, train_examples):
    import types

    from ganet_tf.models import build_model
    from ganet_tf.training.train import compile_model
    from ganet_tf.training.train import model_arguments

    splits = types.SimpleNamespace(train_texts=range(train_examples), name="imdb")
    model = build_model(config.model, 2, **model_arguments(config, splits, None))
    compile_model(model, config.lr)
    return model


def _batches(ids, labels, layout, length, batch):
    """The batches of one round: `padded`, the first `batch` reviews at `length`; `bucketed`, `ROUND_BATCHES`
    batches of `train`'s length buckets (seed 0), cut at `length`."""
    from ganet_tf.data.vectorizer import make_dataset

    ids = ids[:, :length]
    if layout == "padded":
        return [(ids[:batch], labels[:batch])]
    dataset = make_dataset(ids, labels, batch_size=batch, shuffle=True, seed=0, buckets=8)
    return [(x.numpy(), y.numpy()) for x, y in dataset.take(ROUND_BATCHES)]


def _prepared(data_dir):
    from ganet_tf.training.prepare import prepare

    data = prepare(_config("dense", data_dir, 8))
    return data.ids["train"], np.asarray(data.splits.train_labels), data.splits.train_texts


def _step(model, batches):
    def call():
        for x, y in batches:
            loss = model.train_on_batch(x, y)
        return loss

    return call


def memory_of(args):
    """`--memory-of`: in this process alone, the steps of one model and cell; prints its peak resident set."""
    with open("/proc/self/oom_score_adj", "w") as handle:
        handle.write("1000")  # under memory pressure the kernel stops this process, not a training beside it
    length, batch, layout = args.cell
    with np.load(args.ids) as saved:
        ids, labels = saved["ids"], saved["labels"]
    batches = _batches(ids, labels, layout, int(length), int(batch))
    model = _model(_config(_setting(args, args.memory_of), args.data_dir, int(batch)), len(ids))
    before, peak, done = _resident_mb(), [0.0], threading.Event()

    def watch():  # the resident set, every 2 ms, while the steps run
        while not done.is_set():
            peak[0] = max(peak[0], _resident_mb())
            time.sleep(0.002)

    watcher = threading.Thread(target=watch)
    watcher.start()
    for _ in range(2):  # the first traces the step and makes the optimizer's variables
        _step(model, batches)()
    done.set()
    watcher.join()
    # Sampled, not `getrusage`: a child's ru_maxrss keeps the high-water mark of the parent it was forked from.
    peak = max(peak[0], before)
    print(json.dumps({"peak_mb": peak, "step_mb": peak - before, "before_mb": before}))


def _resident_mb():
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize() / 2**20


def _memory(args, model, cell):
    command = [sys.executable, "-m", "experiments.bench_long_documents", "--data-dir", args.data_dir]
    command += ["--memory-of", model, "--ids", args.ids, "--gated", args.gated]
    done = subprocess.run([*command, "--cell", *map(str, cell)], capture_output=True, text=True)
    if done.returncode != 0:
        return {"killed": done.returncode < 0, "error": (done.stderr.strip().splitlines() or ["?"])[-1][:200]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _serving_ms(args, models, texts, length):
    """Median ms of each model's SavedModel on `texts` (raw strings), side by side."""
    import tensorflow as tf

    from ganet_tf.data.vectorizer import byte_vectorizer
    from ganet_tf.export.serving_archive import build_serving_archive

    served = []
    with tempfile.TemporaryDirectory() as folder:
        for name, model in models.items():
            path = os.path.join(folder, name)
            build_serving_archive(model, byte_vectorizer(length), ["neg", "pos"]).write_out(path, verbose=False)
            served.append(tf.saved_model.load(path).signatures["serving_default"])
        batch = tf.constant(texts)
        calls = [lambda serve=serve: serve(text=batch)["probabilities"] for serve in served]
        return [ms for ms, _ in bench.median_ms(calls, args.warmup, args.runs)]


def _flops(batches, density, config):
    """Encoder FLOPs of a round: dense, with the gated model's kept tokens (each row's real bytes x density), and
    with linear attention."""
    from ganet_tf.layers.sparse_gather import kept_count

    width, feed_forward = config.hidden, config.intermediate_dim
    dense = sum(bench.encoder_flops(len(x), x.shape[1], width, feed_forward) for x, _ in batches)
    linear = sum(
        bench.linear_encoder_flops(len(x), x.shape[1], width, feed_forward, config.num_heads) for x, _ in batches
    )
    gated = 0
    for x, _ in batches:
        kept = max(kept_count(density, int(n)) for n in np.sum(x != 0, axis=1))
        gated += bench.encoder_flops(len(x), kept, width, feed_forward)
    return dense, gated, linear


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--lengths", type=int, nargs="+", default=[1000, 2000, 3000, 4000])
    parser.add_argument("--batches", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--layouts", nargs="+", choices=("padded", "bucketed"), default=["padded", "bucketed"])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default=os.path.join(bench.RESULTS, "lra_text", "bench"))
    parser.add_argument("--force", action="store_true", help="measure again the cells bench.json has")
    parser.add_argument("--models", nargs="+", choices=tuple(LRA_BENCH_MODELS), default=["dense", "gated", "linear"])
    parser.add_argument("--gated", choices=GATED_SETTINGS, default=LRA_RECOMMENDED, help="the gated model's setting")
    parser.add_argument("--memory-of", choices=tuple(LRA_BENCH_MODELS), help=argparse.SUPPRESS)
    parser.add_argument("--cell", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--ids", help=argparse.SUPPRESS)  # the parent's prepared reviews
    parser.set_defaults(threads=2, warmup=1)
    args = parser.parse_args()
    if args.memory_of:
        return memory_of(args)
    if "dense" not in args.models:
        parser.error("--models: the ratios are to the dense model; give dense too")
    path, cells, command = bench.resumed(args, "bench_long_documents.py", KEYS)
    ids, labels, texts = _prepared(args.data_dir)
    scratch = tempfile.mkdtemp(prefix="bench_long_documents_")
    args.ids = os.path.join(scratch, "ids.npz")
    np.savez(args.ids, ids=ids, labels=labels)
    for length, batch, layout in itertools.product(args.lengths, args.batches, args.layouts):
        if (length, batch, layout, args.gated) in cells and not args.force:
            continue
        batches = _batches(ids, labels, layout, length, batch)
        configs = {name: _config(_setting(args, name), args.data_dir, batch) for name in args.models}
        memory = {name: _memory(args, name, (length, batch, layout)) for name in args.models}
        fits = [name for name in args.models if "peak_mb" in memory[name]]
        models = {name: _model(configs[name], len(ids)) for name in fits}
        seconds = bench.alternating([_step(models[name], batches) for name in fits], args.warmup, args.runs)
        medians = dict(zip(fits, (float(np.median(s)) for s in seconds), strict=True))
        gated_config = _config(args.gated, args.data_dir, batch)
        dense_flops, gated_flops, linear_flops = _flops(batches, gated_config.target_density, gated_config)
        cell = dict(T=length, batch=batch, layout=layout, gated=args.gated, steps_per_round=len(batches), memory=memory)
        cell.update({f"{name}_step_ms": 1e3 * medians[name] / len(batches) for name in fits})
        cell.update(flops_ratio=dense_flops / gated_flops, runs=args.runs, command=command)
        if "linear" in args.models:
            cell["linear_flops_ratio"] = dense_flops / linear_flops
        if "dense" in fits and "gated" in fits:
            cell["speedup"] = medians["dense"] / medians["gated"]
            dense_seconds, gated_seconds = seconds[fits.index("dense")], seconds[fits.index("gated")]
            cell["round_ratio_quartiles"] = bench.quartiles(np.array(dense_seconds) / np.array(gated_seconds))
        for name in ("linear", "conv"):
            if "dense" in fits and name in fits:
                cell[f"{name}_speedup"] = medians["dense"] / medians[name]
        if layout == "padded":
            served = _serving_ms(args, models, [text.encode()[:length] for text in texts[:batch]], length)
            cell.update({f"{name}_served_ms": ms for name, ms in zip(fits, served, strict=True)})
        cell["machine"] = bench.machine_line(args.threads)
        print(json.dumps(cell), flush=True)
        cells[length, batch, layout, args.gated] = cell
        runner.write_json(
            path, {"cells": sorted(cells.values(), key=lambda c: (c["layout"], c["batch"], c["T"], c["gated"]))}
        )
        readme(args.out)


def _setting(args, name):
    """The `lra_text` setting of the bench's model `name`."""
    return args.gated if name == "gated" else LRA_BENCH_MODELS[name]


def _cell_row(c):
    def ms(name, key="step_ms"):
        value = c.get(f"{name}_{key}")
        return "-" if value is None else f"{value:,.0f}"

    def peak(name):
        memory = c["memory"].get(name)
        if memory is None:
            return "-"
        if "peak_mb" not in memory:
            return "out of memory"
        return f"{memory['peak_mb'] / 1024:.1f} ({memory['step_mb'] / 1024:.1f})"

    def ratio(key, spec):
        return f"{c[key]:{spec}}x" if key in c else "-"

    served = f"{ms('dense', 'served_ms')} / {ms('gated', 'served_ms')}" if c["layout"] == "padded" else "-"
    steps = [ms("dense"), ms("gated"), ms("linear"), ms("conv")]
    ratios = [ratio("speedup", ".2f"), ratio("linear_speedup", ".2f"), ratio("conv_speedup", ".2f")]
    flops = [ratio("flops_ratio", ".1f"), ratio("linear_flops_ratio", ".1f")]
    peaks = [peak("dense"), peak("gated"), peak("linear"), peak("conv")]
    return [c["layout"], str(c["batch"]), str(c["T"]), f"`{c['gated']}`", *steps, *ratios, *flops, *peaks, served]


def readme(out):
    """The blocks of `out/README.md` (its prose is written by hand) from its `bench.json`."""
    saved = runner.read_json(os.path.join(out, "bench.json"))
    headers = [
        "layout",
        "batch",
        "T",
        "gated",
        "dense step ms",
        "gated step ms",
        "linear step ms",
        "conv step ms",
        "speedup",
        "linear speedup",
        "conv speedup",
        "FLOPs ratio",
        "linear FLOPs ratio",
        "dense peak GB (steps)",
        "gated peak GB (steps)",
        "linear peak GB (steps)",
        "conv peak GB (steps)",
        "served ms dense / gated",
    ]
    commands = {}
    for c in saved["cells"]:
        commands.setdefault(c["command"], c["machine"])  # each command, the machine of its first cell
    made = [f"- `{command}` on {machine}" for command, machine in commands.items()]
    committed = os.path.join(bench.RESULTS, "lra_text", "bench", "README.md")
    rows = [_cell_row(c) for c in saved["cells"]]
    tables.fill_copy(os.path.join(out, "README.md"), committed, {"made": made, "table": tables.grid(headers, rows)})


if __name__ == "__main__":
    main()
