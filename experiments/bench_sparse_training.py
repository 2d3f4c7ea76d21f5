"""Wall-clock of a training step with token dropping vs dense gated training (issue 41).

    python experiments/bench_sparse_training.py                 # full grid
    python experiments/bench_sparse_training.py --lengths 4096 --densities 0.2 --batches 1

One training step (forward, backward, Adam update) of two
`GatedTransformerEncoder` blocks on `(batch, T, hidden)` inputs, whose gates
come from a trainable gate network (one logit per token, a variable) through
`GateSampler` (relaxed Bernoulli gates, as GA-Net trains), and whose loss is
a fixed random readout of the output:

- `dense`: the blocks as GA-Net trains them without sparse training: every
  token goes through every block, the relaxed gates bias the attention by
  `log g`;
- `sparse`: the same blocks with `sparse_training=True,
  training_density=d`: each row keeps its round(d T) tokens of highest
  relaxed gate, only they go through the blocks (forward and backward), and
  the gate logits still get gradients (straight-through gates).

Both start from the same weights. Conventions of
`experiments/bench_sparse_attention.py`: one process, threads fixed
(`--threads`), each step a `tf.function` (`--xla` for `jit_compile=True`),
`--warmup` untimed steps, then `--runs` rounds in which the two steps are
timed in turn (the order alternating), so both see the same drift of the
machine's speed. Reported: the medians, the median and quartiles of the
per-round ratios dense / sparse, and the ratio of floating point operations
of the forward pass at the size `k` the sparse path really runs (the
backward pass costs about twice the forward pass on both paths; gathers,
softmax and layer norms left out). Cells whose dense step would exceed
`--max-dense-gflop` (forward + backward) are skipped and listed as skipped.

Results go to `OUT/bench.json` (resumable: measured cells are kept, only
missing ones run; `--force` re-measures) and `OUT/README.md`, `OUT` being
`results/sparse_training`.
"""

import argparse
import functools
import json
import os
import shlex
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "experiments"))

from bench import alternating  # noqa: E402
from bench import encoder_flags  # noqa: E402
from bench import machine_line  # noqa: E402
from bench import quartiles  # noqa: E402
from bench import set_threads  # noqa: E402
from bench_sparse_attention import encoder_flops  # noqa: E402

from runner import portable  # noqa: E402

FULL = {"lengths": [256, 1024, 4096], "densities": [0.1, 0.2, 0.5], "batches": [1, 32], "runs": 7}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=FULL["lengths"])
    parser.add_argument("--densities", type=float, nargs="+", default=FULL["densities"])
    parser.add_argument("--batches", type=int, nargs="+", default=FULL["batches"])
    parser.add_argument("--runs", type=int, default=FULL["runs"], help="timed rounds per cell")
    encoder_flags(parser)
    parser.add_argument(
        "--max-dense-gflop",
        type=float,
        default=1000.0,
        help="skip cells whose dense training step needs more (forward + backward)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--note", default="", help="a word on the machine, e.g. other jobs running")
    parser.add_argument("--out", default=os.path.join(REPO, "results", "sparse_training"))
    parser.add_argument("--force", action="store_true", help="re-measure cells already in bench.json")
    return parser.parse_args()


def kept_k(density, length):
    from ganet_tf.layers.sparse_gather import DEFAULT_SPARSE_BUCKETS
    from ganet_tf.layers.sparse_gather import bucket_sizes
    from ganet_tf.layers.sparse_gather import kept_count
    from ganet_tf.layers.sparse_gather import training_buckets

    # Every row has T real tokens, so every row keeps kept_count and the
    # sparse path runs the largest size of its training buckets.
    needed = kept_count(density, length)
    sizes, _ = bucket_sizes(training_buckets(list(DEFAULT_SPARSE_BUCKETS), length, density), length)
    return needed, next(size for size in sizes if size >= needed)


def training_step(args, blocks, sampler, logits, readout, compile_):
    """A compiled training step of `blocks` (with their own Adam)."""
    import keras
    import tensorflow as tf

    variables = [w for block in blocks for w in block.trainable_variables] + [logits]
    optimizer = keras.optimizers.Adam(1e-4)
    optimizer.build(variables)

    def step(x):
        with tf.GradientTape() as tape:
            gates = sampler(logits, training=True)
            a = x
            for block in blocks:
                a = block(a, gates=gates, training=True)
            loss = tf.reduce_mean(a * readout)
        optimizer.apply(tape.gradient(loss, variables), variables)
        return loss

    return compile_(step)


def main():
    args = parse_args()
    import tensorflow as tf

    set_threads(args.threads)
    import keras

    from ganet_tf.layers import GatedTransformerEncoder
    from ganet_tf.layers import GateSampler

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "bench.json")
    cells = {}
    if os.path.exists(path):
        with open(path) as handle:
            for cell in json.load(handle)["cells"]:
                cells[(cell["T"], cell["density"], cell["batch"], cell["xla"])] = cell
    command = portable("python experiments/bench_sparse_training.py " + shlex.join(sys.argv[1:]))
    rng = np.random.default_rng(args.seed)

    def compile_(function):
        return tf.function(function, jit_compile=args.xla)

    for length in args.lengths:
        for batch in args.batches:
            dense_flops = encoder_flops(batch, length, args.hidden, args.intermediate)
            for density in args.densities:
                key = (length, density, batch, args.xla)
                if key in cells and not args.force:
                    continue
                needed, k = kept_k(density, length)
                sparse_flops = encoder_flops(batch, k, args.hidden, args.intermediate)
                cell = {
                    "T": length,
                    "density": density,
                    "batch": batch,
                    "xla": args.xla,
                    "kept": needed,
                    "k": k,
                    "flops_ratio": dense_flops / sparse_flops,
                    "dense_step_gflop": 3 * dense_flops / 1e9,
                    "command": command,
                    "machine": machine_line(args.threads) + (f"; {args.note}" if args.note else ""),
                }
                if cell["dense_step_gflop"] > args.max_dense_gflop:
                    cell["skipped"] = (
                        f"the dense step needs ~{cell['dense_step_gflop']:.0f} GFLOP > --max-dense-gflop "
                        f"{args.max_dense_gflop:g} (too slow for this machine)"
                    )
                    print(f"T={length} d={density} B={batch}: skipped ({cell['skipped']})", flush=True)
                    cells[key] = cell
                    write(args, path, cells)
                    continue
                keras.utils.set_random_seed(args.seed)
                x = tf.constant(rng.normal(size=[batch, length, args.hidden]).astype("float32"))
                readout = tf.constant(rng.normal(size=[batch, length, args.hidden]).astype("float32"))
                steps = []
                for sparse in (False, True):
                    blocks = [
                        GatedTransformerEncoder(
                            args.intermediate,
                            args.heads,
                            sparse_training=sparse,
                            training_density=density if sparse else None,
                        )
                        for _ in range(2)
                    ]
                    for block in blocks:
                        block(x[:1, :8])
                    steps.append(blocks)
                for dense_block, sparse_block in zip(*steps, strict=True):
                    sparse_block.set_weights(dense_block.get_weights())
                initial_logits = rng.normal(size=[batch, length]).astype("float32")
                calls = []
                for blocks in steps:
                    sampler = GateSampler(temperature=0.5, seed=args.seed)
                    logits = tf.Variable(initial_logits)
                    calls.append((training_step(args, blocks, sampler, logits, readout, compile_), x))
                dense_s, sparse_s = alternating(
                    [functools.partial(step, x) for step, x in calls], args.warmup, args.runs
                )
                ratios = [d / s for d, s in zip(dense_s, sparse_s, strict=True)]
                cell.update(
                    dense_ms=1e3 * float(np.median(dense_s)),
                    sparse_ms=1e3 * float(np.median(sparse_s)),
                    speedup=float(np.median(dense_s) / np.median(sparse_s)),
                    round_ratio_quartiles=quartiles(ratios),
                    dense_runs_ms=[round(1e3 * t, 2) for t in dense_s],
                    sparse_runs_ms=[round(1e3 * t, 2) for t in sparse_s],
                    warmup=args.warmup,
                    runs=args.runs,
                )
                cells[key] = cell
                low, mid, high = cell["round_ratio_quartiles"]
                print(
                    f"T={length} d={density} B={batch} k={k}: dense {cell['dense_ms']:.1f} ms, "
                    f"sparse {cell['sparse_ms']:.1f} ms, speedup {cell['speedup']:.2f}x "
                    f"(rounds {low:.2f}/{mid:.2f}/{high:.2f}), FLOPs ratio {cell['flops_ratio']:.2f}x",
                    flush=True,
                )
                write(args, path, cells)
    write(args, path, cells)


def write(args, path, cells):
    """`bench.json`, then `readme`."""
    ordered = sorted(cells.values(), key=lambda c: (c["xla"], c["T"], c["batch"], c["density"]))
    setting = {"hidden": args.hidden, "heads": args.heads, "intermediate": args.intermediate, "threads": args.threads}
    with open(path, "w") as handle:
        json.dump({"setting": setting, "cells": ordered}, handle, indent=1)
    readme(os.path.dirname(path))


def readme(out):
    """The table of `README.md` in `out` from its `bench.json` alone."""
    with open(os.path.join(out, "bench.json")) as handle:
        saved = json.load(handle)
    ordered, setting = saved["cells"], saved["setting"]
    commands = {}  # each command, the machine when its first cell was measured
    for c in ordered:
        commands.setdefault(c["command"], c["machine"])
    lines = [
        "# Training with token dropping vs dense gated training: wall-clock of a step",
        "",
        "Written by `experiments/bench_sparse_training.py` (see its docstring for the method). Cells measured:",
        "",
        *(f"- `{command}` on {machine}" for command, machine in commands.items()),
        "",
        (
            f"Setting: 2 `GatedTransformerEncoder` blocks, hidden {setting['hidden']}, {setting['heads']} heads, "
            f"feedforward {setting['intermediate']}; one step = forward, backward and an Adam update of the blocks and "
            "of a gate logit per token (relaxed Bernoulli gates of `GateSampler`, temperature 0.5). `dense`: "
            "today's training (every token in every block, log-gate bias); `sparse`: "
            "`sparse_training=True, training_density=d`. `k`: the compacted length the sparse path runs. "
            "Speedup: median dense step / median sparse step; rounds: quartiles of the per-round ratios. "
            "FLOPs ratio: dense / sparse forward FLOPs at `k`."
        ),
        "",
        "| T | density | batch | XLA | k | dense ms | sparse ms | speedup | rounds (25/50/75 %) | FLOPs ratio |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in ordered:
        if "skipped" in c:
            lines.append(
                f"| {c['T']} | {c['density']} | {c['batch']} | {'yes' if c['xla'] else 'no'} | {c['k']} | "
                f"skipped: {c['skipped']} | | | | {c['flops_ratio']:.2f}x |"
            )
            continue
        low, mid, high = c["round_ratio_quartiles"]
        lines.append(
            f"| {c['T']} | {c['density']} | {c['batch']} | {'yes' if c['xla'] else 'no'} | {c['k']} | "
            f"{c['dense_ms']:.1f} | {c['sparse_ms']:.1f} | {c['speedup']:.2f}x | "
            f"{low:.2f} / {mid:.2f} / {high:.2f} | {c['flops_ratio']:.2f}x |"
        )
    table = "\n".join(lines) + "\n"
    readme_path = os.path.join(out, "README.md")
    # The hand-written part of the README (the rule, the reading) stays
    # above the marker; the table below it is rewritten.
    marker = "<!-- bench table: written by experiments/bench_sparse_training.py -->"
    head = ""
    if os.path.exists(readme_path):
        with open(readme_path) as handle:
            text = handle.read()
        if marker in text:
            head = text.split(marker)[0]
    with open(readme_path, "w") as handle:
        handle.write(head + marker + "\n\n" + table)


if __name__ == "__main__":
    main()
