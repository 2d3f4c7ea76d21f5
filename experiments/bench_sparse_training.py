"""Wall-clock of a training step with token dropping against dense gated training (issue 41).

    python -m experiments.bench_sparse_training [--lengths 4096 --densities 0.2 --batches 1] [--xla]

One step (forward, backward, Adam) of 2 `GatedTransformerEncoder` blocks and a gate logit per token, loss a fixed
random readout: `dense` runs every token, `sparse` (`sparse_training=True, training_density=d`) the kept ones; same
weights, timed in turn by `bench.alternating`. Writes `OUT/bench.json` (resumable) and the tables of its README.
"""

import itertools
import os

import numpy as np

from experiments import bench
from experiments import runner
from experiments import tables


def training_step(args, blocks, logits, x, readout):
    """A compiled training step of `blocks` and the gate `logits` (a variable) on `x`, with its own Adam."""
    import keras
    import tensorflow as tf

    from ganet_tf.layers import GateSampler

    sampler = GateSampler(temperature=0.5, seed=0)
    variables = [w for block in blocks for w in block.trainable_variables] + [logits]
    optimizer = keras.optimizers.Adam(1e-4)
    optimizer.build(variables)

    def step():
        with tf.GradientTape() as tape:
            a, gates = x, sampler(logits, training=True)
            for block in blocks:
                a = block(a, gates=gates, training=True)
            loss = tf.reduce_mean(a * readout)
        optimizer.apply(tape.gradient(loss, variables), variables)
        return loss

    return tf.function(step, jit_compile=args.xla)


def training_steps(args, density, rng, batch, length):
    """The dense and the sparse training step, from the same weights and gate logits."""
    import tensorflow as tf

    from ganet_tf.layers import GatedTransformerEncoder

    x, readout = (tf.constant(rng.normal(size=[batch, length, args.hidden]).astype("float32")) for _ in range(2))
    logits = rng.normal(size=[batch, length]).astype("float32")
    options = ({}, {"sparse_training": True, "training_density": density})
    dense, sparse = ([GatedTransformerEncoder(args.intermediate, args.heads, **o) for _ in range(2)] for o in options)
    for dense_block, sparse_block in zip(dense, sparse, strict=True):
        dense_block(x[:1, :8]), sparse_block(x[:1, :8])
        sparse_block.set_weights(dense_block.get_weights())
    return [training_step(args, layers, tf.Variable(logits), x, readout) for layers in (dense, sparse)]


def main():
    parser = bench.grid_parser(__doc__, "sparse_training", runs=7)
    parser.add_argument("--xla", action="store_true", help="`jit_compile=True`")
    parser.add_argument("--force", action="store_true", help="measure again the cells bench.json has")
    parser.add_argument("--max-dense-gflop", type=float, default=1000.0, help="skip slower dense steps")
    parser.add_argument("--note", default="", help="a word on the machine, e.g. other jobs running")
    args = parser.parse_args()
    import keras

    from ganet_tf.layers.sparse_gather import kept_count

    path, cells, command = bench.resumed(args, "bench_sparse_training.py", ("T", "density", "batch", "xla"))
    machine, rng = bench.machine_line(args.threads) + (f"; {args.note}" if args.note else ""), np.random.default_rng(0)
    setting = {key: getattr(args, key) for key in ("hidden", "heads", "intermediate", "threads")}
    for length, batch, density in itertools.product(args.lengths, args.batches, args.densities):
        if (length, density, batch, args.xla) in cells and not args.force:
            continue
        k = kept_count(density, length)  # every row has T real tokens: the sparse path runs exactly the kept count
        flops = [bench.encoder_flops(batch, size, args.hidden, args.intermediate) for size in (length, k)]
        cell = dict(T=length, density=density, batch=batch, xla=args.xla, kept=k, k=k, flops_ratio=flops[0] / flops[1])
        cell.update(dense_step_gflop=3 * flops[0] / 1e9, command=command, machine=machine)
        if cell["dense_step_gflop"] > args.max_dense_gflop:
            needs = f"the dense step needs ~{cell['dense_step_gflop']:.0f} GFLOP"
            cell["skipped"] = f"{needs} > --max-dense-gflop {args.max_dense_gflop:g} (too slow for this machine)"
        else:
            keras.utils.set_random_seed(0)
            steps = training_steps(args, density, rng, batch, length)
            dense_s, sparse_s = np.array(bench.alternating(steps, args.warmup, args.runs))
            cell.update(dense_ms=1e3 * float(np.median(dense_s)), sparse_ms=1e3 * float(np.median(sparse_s)))
            cell["speedup"] = float(np.median(dense_s) / np.median(sparse_s))
            cell["round_ratio_quartiles"] = bench.quartiles(dense_s / sparse_s)
            cell.update(dense_runs_ms=np.round(1e3 * dense_s, 2).tolist(), warmup=args.warmup, runs=args.runs)
            cell["sparse_runs_ms"] = np.round(1e3 * sparse_s, 2).tolist()
        print(cell, flush=True)
        cells[length, density, batch, args.xla] = cell
        ordered = sorted(cells.values(), key=lambda c: (c["xla"], c["T"], c["batch"], c["density"]))
        runner.write_json(path, {"setting": setting, "cells": ordered})
        rebuild(args.out)


def rebuild(out):
    """The blocks of `out/README.md` (its prose, the setting included, is written by hand) from its `bench.json`."""
    saved = runner.read_json(os.path.join(out, "bench.json"))
    commands, rows = {}, []
    for c in saved["cells"]:
        commands.setdefault(c["command"], c["machine"])  # each command, the machine of its first cell
        if "skipped" in c:  # one cell across four columns
            measured = [f"skipped: {c['skipped']} | | |"]
        else:
            measured = [f"{c['dense_ms']:.1f}", f"{c['sparse_ms']:.1f}", f"{c['speedup']:.2f}x"]
            measured.append(" / ".join(f"{q:.2f}" for q in c["round_ratio_quartiles"]))
        flags = [c["T"], c["density"], c["batch"], "yes" if c["xla"] else "no", c["k"]]
        rows.append("| " + " | ".join(map(str, [*flags, *measured, f"{c['flops_ratio']:.2f}x"])) + " |")
    headers = "T | density | batch | XLA | k | dense ms | sparse ms | speedup | rounds (25/50/75 %) | FLOPs ratio"
    made = [f"- `{command}` on {machine}" for command, machine in commands.items()]
    committed = os.path.join(bench.RESULTS, "sparse_training", "README.md")
    tables.fill_copy(
        os.path.join(out, "README.md"), committed, {"made": made, "table": tables.grid(headers, []) + rows}
    )


if __name__ == "__main__":
    main()
