"""Wall-clock of gated sparse attention vs dense Keras attention (issue 17).

    python experiments/bench_sparse_attention.py            # full grid
    python experiments/bench_sparse_attention.py --quick    # smoke, minutes

Two comparisons, each at sequence length T, gate density d and batch B:

- `layer`: `GatedMultiHeadAttention(sparse_inference=True)` self-attention
  with binary gates (round(d T) open keys per row, at random positions)
  against `keras.layers.MultiHeadAttention` of the same shape (no mask);
  every query is computed, so the FLOPs bound stays under 1/d;
- `layer-queries`: the same with `query_dropping=True`: closed queries are
  not computed either (their output is the output projection of zero), as
  where nothing downstream reads closed positions;
- `encoder`: two `GatedTransformerEncoder(token_dropping=True)` blocks with
  the same gates against two dense blocks (the same class without gates:
  keras-hub's `TransformerEncoder` computation on Keras' attention).

Each function is a compiled `tf.function` (graph mode, as a SavedModel
runs; `--xla` for `jit_compile=True`), traced and run `--warmup` times, then
timed `--runs` times (the output fetched to the host each time), the gated
and the dense function in turn within each run (the order alternating), so
both see the same drift of this virtual machine's speed; the medians are
reported (the dense function is timed again beside each density). Threads
are fixed with `tf.config.threading` (`--threads`).
Beside the time ratio stands the ratio of floating point operations
(multiply-add = 2; projections, scores, weighted sums and feedforward
layers; softmax and layer norms left out) at the bucket size `k` the gated
path really runs. Dense runs whose attention scores would not fit in
`--max-dense-gib` are skipped and listed as skipped.

Results go to `OUT/bench.json` (resumable: measured cells are kept, and
only missing ones run; `--force` re-measures the cells of the grid asked
for and keeps the others), `OUT/README.md` (a table naming
the command and machine) and `OUT/bench.png`. `OUT` is
`results/sparse_attention` (`results/sparse_attention/quick` with
`--quick`). Run the full grid on an otherwise idle machine.
"""

import argparse
import functools
import json
import math
import os
import shlex
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "experiments"))

from bench import encoder_flags  # noqa: E402
from bench import machine_line  # noqa: E402
from bench import median_ms  # noqa: E402
from bench import set_threads  # noqa: E402

from runner import portable  # noqa: E402

FULL = {"lengths": [256, 1024, 4096], "densities": [0.1, 0.2, 0.5], "batches": [1, 32], "runs": 10}
KINDS = ("layer", "layer-queries", "encoder")
QUICK = {"lengths": [256, 1024, 4096], "densities": [0.2], "batches": [1], "runs": 3}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small grid: d 0.2, B 1, 3 runs")
    parser.add_argument("--lengths", type=int, nargs="+")
    parser.add_argument("--densities", type=float, nargs="+")
    parser.add_argument("--batches", type=int, nargs="+")
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--runs", type=int, help="timed runs per cell (median reported)")
    encoder_flags(parser)
    parser.add_argument("--exact-k", action="store_true", help="sparse_buckets=None: k = open count")
    parser.add_argument("--max-dense-gib", type=float, default=6.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out")
    parser.add_argument("--force", action="store_true", help="re-measure cells already in bench.json")
    args = parser.parse_args()
    preset = QUICK if args.quick else FULL
    for name in ("lengths", "densities", "batches", "runs"):
        if getattr(args, name) is None:
            setattr(args, name, preset[name])
    if args.out is None:
        args.out = os.path.join(REPO, "results", "sparse_attention", "quick" if args.quick else "")
    return args


def attention_flops(batch, queries, keys, projected_keys, hidden):
    """Q and output projections over `queries` rows, K and V over
    `projected_keys` rows, scores and weighted sum over queries x keys."""
    projections = 2 * 2 * batch * queries * hidden * hidden
    projections += 2 * 2 * batch * projected_keys * hidden * hidden
    return projections + 2 * 2 * batch * queries * keys * hidden


def encoder_flops(batch, tokens, hidden, intermediate, blocks=2):
    block = attention_flops(batch, tokens, tokens, tokens, hidden)
    block += 2 * 2 * batch * tokens * hidden * intermediate
    return blocks * block


def bucket_k(open_count, steps, buckets):
    if buckets is None:
        return open_count
    sizes = sorted({max(1, math.ceil(f * steps - 1e-9)) for f in buckets})
    return next(size for size in sizes if size >= open_count)


def main():
    args = parse_args()
    import tensorflow as tf

    set_threads(args.threads)
    import keras

    from ganet_tf.layers import GatedMultiHeadAttention
    from ganet_tf.layers import GatedTransformerEncoder
    from ganet_tf.layers.gated_multi_head_attention import DEFAULT_SPARSE_BUCKETS

    buckets = None if args.exact_k else list(DEFAULT_SPARSE_BUCKETS)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "bench.json")
    cells = {}
    if os.path.exists(path):
        with open(path) as handle:
            stored = json.load(handle)
        for cell in stored["cells"]:
            cell.setdefault("command", stored["command"])
            cell.setdefault("machine", stored["machine"])
            cells[(cell["kind"], cell["T"], cell["density"], cell["batch"])] = cell
    command = portable("python experiments/bench_sparse_attention.py " + shlex.join(sys.argv[1:]))
    key_dim = args.hidden // args.heads
    rng = np.random.default_rng(args.seed)

    def compile_(function):
        return tf.function(function, jit_compile=args.xla)

    for kind in args.kinds:
        for length in args.lengths:
            for batch in args.batches:
                todo = [d for d in args.densities if args.force or (kind, length, d, batch) not in cells]
                if not todo:
                    continue
                keras.utils.set_random_seed(args.seed)
                x = tf.constant(rng.normal(size=[batch, length, args.hidden]).astype("float32"))
                if kind.startswith("layer"):
                    dense_layer = keras.layers.MultiHeadAttention(args.heads, key_dim)
                    gated_layer = GatedMultiHeadAttention(
                        args.heads,
                        key_dim,
                        sparse_inference=True,
                        sparse_buckets=buckets,
                        query_dropping=kind == "layer-queries",
                    )
                    dense_layer(x[:1, :8], x[:1, :8])
                    gated_layer(x[:1, :8], x[:1, :8])
                    gated_layer.set_weights(dense_layer.get_weights())
                    dense = compile_(lambda a, layer=dense_layer: layer(a, a))
                    gated = compile_(lambda a, g, layer=gated_layer: layer(a, a, gates=g))
                    dense_flops = attention_flops(batch, length, length, length, args.hidden)
                else:
                    dense_blocks = [GatedTransformerEncoder(args.intermediate, args.heads) for _ in range(2)]
                    gated_blocks = [
                        GatedTransformerEncoder(
                            args.intermediate, args.heads, token_dropping=True, sparse_buckets=buckets
                        )
                        for _ in range(2)
                    ]
                    for dense_block, gated_block in zip(dense_blocks, gated_blocks, strict=True):
                        dense_block(x[:1, :8])
                        gated_block(x[:1, :8])
                        gated_block.set_weights(dense_block.get_weights())

                    def run_dense(a, dense_blocks=dense_blocks):
                        for block in dense_blocks:
                            a = block(a)
                        return a

                    def run_gated(a, g, gated_blocks=gated_blocks):
                        for block in gated_blocks:
                            a = block(a, gates=g)
                        return a

                    dense, gated = compile_(run_dense), compile_(run_gated)
                    dense_flops = encoder_flops(batch, length, args.hidden, args.intermediate)
                # float32 scores (batch, heads, T, T): the softmax keeps ~3 copies.
                score_gib = 3 * 4 * batch * args.heads * length * length / 2**30
                skipped = None
                if score_gib > args.max_dense_gib:
                    skipped = f"dense scores need ~{score_gib:.0f} GiB > --max-dense-gib {args.max_dense_gib}"
                    print(f"{kind} T={length} B={batch}: dense skipped ({skipped})", flush=True)
                for density in todo:
                    open_count = round(density * length)
                    gates = np.zeros([batch, length], "float32")
                    for row in gates:
                        row[rng.choice(length, open_count, replace=False)] = 1.0
                    k = bucket_k(open_count, length, buckets)
                    calls = [functools.partial(gated, x, tf.constant(gates))] + (
                        [] if skipped else [functools.partial(dense, x)]
                    )
                    timed = median_ms(calls, args.warmup, args.runs)
                    gated_ms, gated_runs = timed[0]
                    dense_ms, dense_runs = timed[1] if len(timed) > 1 else (None, None)
                    if kind == "layer":
                        gated_flops = attention_flops(batch, length, k, k, args.hidden)
                    elif kind == "layer-queries":
                        gated_flops = attention_flops(batch, k, k, k, args.hidden)
                    else:
                        gated_flops = encoder_flops(batch, k, args.hidden, args.intermediate)
                    cell = {
                        "kind": kind,
                        "T": length,
                        "density": density,
                        "batch": batch,
                        "open": open_count,
                        "k": k,
                        "dense_ms": dense_ms,
                        "gated_ms": gated_ms,
                        "speedup": None if dense_ms is None else dense_ms / gated_ms,
                        "flops_ratio": dense_flops / gated_flops,
                        "dense_runs_ms": dense_runs,
                        "gated_runs_ms": gated_runs,
                        "skipped": skipped,
                        "command": command,
                    }
                    cells[(kind, length, density, batch)] = cell
                    shown = "skipped" if dense_ms is None else f"{dense_ms:.1f} ms"
                    print(
                        f"{kind} T={length} d={density} B={batch} k={k}: dense {shown}, "
                        f"gated {gated_ms:.1f} ms, speedup "
                        f"{'-' if dense_ms is None else f'{dense_ms / gated_ms:.2f}x'}, "
                        f"FLOPs ratio {cell['flops_ratio']:.2f}x",
                        flush=True,
                    )
                    write(args, path, cells, command)
    write(args, path, cells, command)


def write(args, path, cells, command):
    """`bench.json` (the cells this command measured name this machine),
    then `readme`."""
    ordered = sorted(cells.values(), key=lambda c: (c["kind"], c["T"], c["batch"], c["density"]))
    machine = machine_line(args.threads, getattr(args, "xla", False))
    for cell in ordered:  # the cells this command measured
        if cell["command"] == command:
            cell["machine"] = machine
    keys = ("hidden", "heads", "intermediate", "threads", "xla", "exact_k", "warmup", "runs")
    setting = {key: getattr(args, key) for key in keys}
    with open(path, "w") as handle:
        json.dump({"command": command, "machine": machine, "setting": setting, "cells": ordered}, handle, indent=1)
    readme(os.path.dirname(path))


def readme(out):
    """`README.md` and `bench.png` of `out` from its `bench.json` alone."""
    with open(os.path.join(out, "bench.json")) as handle:
        saved = json.load(handle)
    ordered, setting = saved["cells"], saved["setting"]
    lines = [
        "# Gated sparse attention vs dense attention: wall-clock",
        "",
        *(
            f"Command: `{command_}` ({', '.join(sorted({c['kind'] for c in ordered if c['command'] == command_}))}), "
            f"machine: {machine_}  "
            for command_, machine_ in sorted({(c["command"], c["machine"]) for c in ordered})
        ),
        (
            f"Setting: hidden {setting['hidden']}, {setting['heads']} heads, feedforward {setting['intermediate']}; "
            f"median of {setting['runs']} runs after {setting['warmup']} warm-up runs, gated and dense timed in turn "
            "within each run; "
            "gates: round(d T) open keys per row at random positions."
        ),
        "",
        (
            "`layer`: `GatedMultiHeadAttention(sparse_inference=True)` vs "
            "`keras.layers.MultiHeadAttention` (self-attention; every query computed). `layer-queries`: "
            "the same with `query_dropping=True` (closed queries not computed). `encoder`: 2 "
            "`GatedTransformerEncoder(token_dropping=True)` blocks vs 2 dense blocks. `k`: the "
            "bucket size the gated path runs (open keys rounded up). FLOPs ratio: dense / gated, "
            "counted at `k`."
        ),
        "",
        "| kind | T | density | batch | k | dense ms | gated ms | speedup | FLOPs ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in ordered:
        dense = "skipped (memory)" if c["dense_ms"] is None else f"{c['dense_ms']:.1f}"
        speedup = "-" if c["speedup"] is None else f"{c['speedup']:.2f}x"
        lines.append(
            f"| {c['kind']} | {c['T']} | {c['density']} | {c['batch']} | {c['k']} | {dense} | "
            f"{c['gated_ms']:.1f} | {speedup} | {c['flops_ratio']:.2f}x |"
        )
    with open(os.path.join(out, "README.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    plot(ordered, os.path.join(out, "bench.png"))


def plot(cells, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = sorted({c["kind"] for c in cells})
    figure, axes = plt.subplots(1, len(kinds), figsize=(5.5 * len(kinds), 4), squeeze=False)
    for axis, kind in zip(axes[0], kinds, strict=True):
        for batch in sorted({c["batch"] for c in cells if c["kind"] == kind}):
            for density in sorted({c["density"] for c in cells if c["kind"] == kind}):
                rows = [
                    c
                    for c in cells
                    if c["kind"] == kind
                    and c["batch"] == batch
                    and c["density"] == density
                    and c["speedup"] is not None
                ]
                if not rows:
                    continue
                (line,) = axis.plot(
                    [c["T"] for c in rows],
                    [c["speedup"] for c in rows],
                    marker="o",
                    label=f"d={density}, B={batch}",
                )
                axis.plot(
                    [c["T"] for c in rows],
                    [c["flops_ratio"] for c in rows],
                    linestyle=":",
                    color=line.get_color(),
                )
        axis.set_xscale("log", base=2)
        axis.set_xlabel("sequence length T")
        axis.set_ylabel("dense time / gated time (dotted: FLOPs ratio)")
        axis.set_title(kind)
        axis.axhline(1.0, color="grey", linewidth=0.5)
        axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


if __name__ == "__main__":
    main()
