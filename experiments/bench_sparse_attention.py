"""Wall-clock of gated sparse attention against dense Keras attention (issue 17).

    python -m experiments.bench_sparse_attention [--kinds layer] [--lengths 256] [--force]

`layer`: `GatedMultiHeadAttention(sparse_inference=True)` self-attention against `keras.layers.MultiHeadAttention`;
`layer-queries`: the same with `query_dropping=True`; `encoder`: 2 `GatedTransformerEncoder(token_dropping=True)`
blocks against 2 dense ones; round(d T) open keys per row. Writes `OUT/bench.json` (resumable; `--force` measures
again), the blocks of `OUT/README.md` and `bench.png`.
"""

import functools
import itertools
import os

import numpy as np

from experiments import bench
from experiments import runner
from experiments import tables

KINDS = ("layer", "layer-queries", "encoder")
MAX_DENSE_GIB = 6.0  # dense cells whose scores need more are skipped


def pair(kind, args, x):
    """`(dense, gated)` compiled functions of `kind` with the same weights: `dense(x)`, `gated(x, gates=g)`."""
    import keras
    import tensorflow as tf

    from ganet_tf.layers import GatedMultiHeadAttention
    from ganet_tf.layers import GatedTransformerEncoder

    if kind == "encoder":
        dense = [GatedTransformerEncoder(args.intermediate, args.heads) for _ in range(2)]
        gated = [GatedTransformerEncoder(args.intermediate, args.heads, token_dropping=True) for _ in range(2)]
    else:
        key_dim = args.hidden // args.heads
        dense = [keras.layers.MultiHeadAttention(args.heads, key_dim)]
        gated = [GatedMultiHeadAttention(args.heads, key_dim, sparse_inference=True, query_dropping=kind != "layer")]

    def run(layers, a, **gates):
        for layer in layers:
            a = layer(a, **gates) if kind == "encoder" else layer(a, a, **gates)
        return a

    run(dense, x[:1, :8]), run(gated, x[:1, :8])
    for dense_layer, gated_layer in zip(dense, gated, strict=True):
        gated_layer.set_weights(dense_layer.get_weights())
    return [tf.function(functools.partial(run, layers)) for layers in (dense, gated)]


def forward_flops(kind, batch, length, k, args):
    """Forward FLOPs of the gated path at bucket size `k` (of the dense path at `k = length`)."""
    if kind == "encoder":
        return bench.encoder_flops(batch, k, args.hidden, args.intermediate)
    return bench.attention_flops(batch, length if kind == "layer" else k, k, k, args.hidden)


def main():
    parser = bench.grid_parser(__doc__, "sparse_attention", runs=10)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--force", action="store_true", help="measure again the cells bench.json has")
    args = parser.parse_args()
    import keras
    import tensorflow as tf

    from ganet_tf.layers.sparse_gather import DEFAULT_SPARSE_BUCKETS

    path, cells, command = bench.resumed(args, "bench_sparse_attention.py", ("kind", "T", "density", "batch"))
    machine, rng = bench.machine_line(args.threads), np.random.default_rng(0)
    setting = {key: getattr(args, key) for key in ("hidden", "heads", "intermediate", "threads", "warmup", "runs")}
    for kind, length, batch in itertools.product(args.kinds, args.lengths, args.batches):
        todo = [d for d in args.densities if args.force or (kind, length, d, batch) not in cells]
        if not todo:
            continue
        keras.utils.set_random_seed(0)
        x = tf.constant(rng.normal(size=[batch, length, args.hidden]).astype("float32"))
        dense, gated = pair(kind, args, x)
        score_gib = 3 * 4 * batch * args.heads * length**2 / 2**30  # float32 scores, ~3 copies in the softmax
        skipped = f"dense scores need ~{score_gib:.0f} GiB > {MAX_DENSE_GIB} GiB" if score_gib > MAX_DENSE_GIB else None
        for density in todo:
            gates = tf.constant(bench.random_gates(rng, batch, length, density))
            k = bench.bucket_k(round(density * length), length, DEFAULT_SPARSE_BUCKETS)
            calls = [functools.partial(gated, x, gates=gates), *([] if skipped else [functools.partial(dense, x)])]
            timed = bench.median_ms(calls, args.warmup, args.runs) + [(None, None)]
            (gated_ms, gated_runs), (dense_ms, dense_runs) = timed[:2]
            flops = [forward_flops(kind, batch, length, size, args) for size in (length, k)]
            cell = dict(kind=kind, T=length, density=density, batch=batch, open=round(density * length), k=k)
            cell.update(dense_ms=dense_ms, gated_ms=gated_ms, speedup=None if skipped else dense_ms / gated_ms)
            cell.update(flops_ratio=flops[0] / flops[1], dense_runs_ms=dense_runs, gated_runs_ms=gated_runs)
            cells[kind, length, density, batch] = {**cell, "skipped": skipped, "command": command, "machine": machine}
            print(f"{kind} T={length} d={density} B={batch} k={k}: speedup {cell['speedup']} ({skipped})", flush=True)
            ordered = sorted(cells.values(), key=lambda c: (c["kind"], c["T"], c["batch"], c["density"]))
            runner.write_json(path, {"command": command, "machine": machine, "setting": setting, "cells": ordered})
            rebuild(args.out)


def rebuild(out):
    """The blocks of `out/README.md` (its prose is written by hand) and `bench.png` from its `bench.json` alone."""
    saved = runner.read_json(os.path.join(out, "bench.json"))
    cells, setting = saved["cells"], saved["setting"]
    made = [
        f"Command: `{command}` ({', '.join(sorted({c['kind'] for c in cells if c['command'] == command}))}), "
        f"machine: {machine}  "
        for command, machine in sorted({(c["command"], c["machine"]) for c in cells})
    ]
    made.append(
        f"Setting: hidden {setting['hidden']}, {setting['heads']} heads, feedforward {setting['intermediate']}; "
        f"median of {setting['runs']} runs after {setting['warmup']} warm-up runs, gated and dense timed in turn "
        "within each run; gates: round(d T) open keys per row at random positions."
    )
    rows = [
        [c["kind"], c["T"], c["density"], c["batch"], c["k"]]
        + ["skipped (memory)" if c["dense_ms"] is None else f"{c['dense_ms']:.1f}", f"{c['gated_ms']:.1f}"]
        + ["-" if c["speedup"] is None else f"{c['speedup']:.2f}x", f"{c['flops_ratio']:.2f}x"]
        for c in cells
    ]
    headers = "kind | T | density | batch | k | dense ms | gated ms | speedup | FLOPs ratio"
    committed = os.path.join(bench.RESULTS, "sparse_attention", "README.md")
    tables.fill_copy(os.path.join(out, "README.md"), committed, {"setting": made, "table": tables.grid(headers, rows)})
    plot(cells, os.path.join(out, "bench.png"))


def plot(cells, path):
    """Speedup (solid) and FLOPs ratio (dotted) against T, a panel per kind, a line per density and batch."""
    kinds = sorted({c["kind"] for c in cells})
    with bench.figure(path, 1, len(kinds), dpi=120, figsize=(5.5 * len(kinds), 4)) as axes:
        for axis, kind in zip(axes[0], kinds, strict=True):
            mine = [c for c in cells if c["kind"] == kind]
            for batch, density in itertools.product(*(sorted({c[key] for c in mine}) for key in ("batch", "density"))):
                rows = [c for c in mine if (c["batch"], c["density"]) == (batch, density) and c["speedup"] is not None]
                if rows:
                    lengths, label = [c["T"] for c in rows], f"d={density}, B={batch}"
                    (line,) = axis.plot(lengths, [c["speedup"] for c in rows], marker="o", label=label)
                    axis.plot(lengths, [c["flops_ratio"] for c in rows], linestyle=":", color=line.get_color())
            axis.set_xscale("log", base=2)
            axis.set(xlabel="sequence length T", ylabel="dense time / gated time (dotted: FLOPs ratio)", title=kind)
            axis.axhline(1.0, color="grey", linewidth=0.5)
            axis.legend(fontsize=7)


if __name__ == "__main__":
    main()
