"""Decoding cost across source lengths: Bahdanau vs gated vs hierarchies (issue 40).

    nice -n 5 python experiments/bench_seq2seq_lengths.py                 # full grid, an idle machine
    nice -n 5 python experiments/bench_seq2seq_lengths.py --quick         # smoke, a few minutes

Untrained `EncoderDecoder`s of one size (`--hidden`, `--embedding-dim`,
`--vocabulary` source and target ids), one per attention:

- `bahdanau`: every source state at every step;
- `gated-0.2`, `gated-0.5`: the `gated-states` recipe with test gates
  `top_k` at density rho (round(rho T) states kept, gathered once per
  sentence);
- `hier-cnn` (k 3, L 3), `hier-rnn` (k 6, L 2): fixed blocks, the gathered
  hard descent;
- `hier-act` (L 3): the halting units set to z = 1/3 for every state
  (blocks of 3, the size `--target-block-size 3` trains to), the gathered
  descent.

A source of T random token ids (no padding) is encoded once and decoded for
exactly `--steps` greedy steps (no end token stops it): one `tf.function` per
model (graph mode), traced and run `--warmup` times, then `--rounds` rounds
in which every model decodes the same batch once, in an order that rotates
from round to round. Reported per cell (T, batch): the median seconds per
decoded step, its ratio to Bahdanau's median, and the quartiles of the
per-round ratios (each round's time over Bahdanau's in that round, so load
that moves a whole round cancels out). Beside them, FLOPs per decoder step
and sentence (multiply-add = 2): attention (the query projection plus the
nodes the model attends, as `EncoderDecoder.attended_nodes` counts them,
keys projected once per sentence), the decoder LSTM cell and the output
projection to the vocabulary; the once-per-sentence encoder and `prepare`
are timed but not counted.

Writes `OUT/bench.json` and `OUT/README.md` (`OUT`: `results/seq2seq_lengths`,
`results/seq2seq_lengths/quick` with `--quick`).
"""

import argparse
import json
import os
import shlex
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "experiments"))

from bench_seq2seq_decode import paired_quartiles  # noqa: E402
from bench_sparse_attention import machine_line  # noqa: E402

from runner import portable  # noqa: E402

FULL = {"lengths": [16, 64, 256, 1024, 2048], "batches": [1, 32], "rounds": 10}
QUICK = {"lengths": [16, 64], "batches": [1], "rounds": 3}
GATED = {"aux": "fnn", "gate_input": "states", "inference_mode": "top_k"}
MODELS = {
    "bahdanau": {"attention": "bahdanau"},
    "gated-0.2": {"attention": "gated", **GATED, "target_density": 0.2, "inference_density": 0.2},
    "gated-0.5": {"attention": "gated", **GATED, "target_density": 0.5, "inference_density": 0.5},
    "hier-cnn": {"attention": "hier-cnn", "block_size": 3, "levels": 3},
    "hier-rnn": {"attention": "hier-rnn", "block_size": 6, "levels": 2},
    "hier-act": {"attention": "hier-act", "levels": 3, "target_block_size": 3.0},
}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T 16 and 64, batch 1, 3 rounds")
    parser.add_argument("--lengths", type=int, nargs="+")
    parser.add_argument("--batches", type=int, nargs="+")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--steps", type=int, default=32, help="decoder steps per sentence")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs per model after tracing")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--embedding-dim", type=int, default=256)
    parser.add_argument("--vocabulary", type=int, default=6000, help="source and target vocabulary sizes")
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads (inter-op: 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out")
    args = parser.parse_args()
    grid = QUICK if args.quick else FULL
    for name in grid:
        if getattr(args, name) is None:
            setattr(args, name, grid[name])
    if "bahdanau" not in args.models:
        parser.error("--models must include bahdanau (the reference of the ratios)")
    for name in ("steps", "warmup", "rounds", "hidden", "embedding_dim", "vocabulary", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if min(args.lengths) < 1 or min(args.batches) < 1:
        parser.error("--lengths and --batches must be positive")
    default_out = os.path.join("results", "seq2seq_lengths", "quick" if args.quick else "")
    args.out = args.out or os.path.join(REPO, default_out)
    args.xla = False  # read by machine_line
    return args


def build_models(args):
    import keras

    from ganet_tf.seq2seq.encoder_decoder import EncoderDecoder

    keras.utils.set_random_seed(args.seed)
    models = {}
    for name in args.models:
        model = EncoderDecoder(
            args.vocabulary,
            args.vocabulary,
            embedding_dim=args.embedding_dim,
            hidden=args.hidden,
            seed=args.seed,
            **MODELS[name],
        )
        model.build()
        if name == "hier-act":  # z = 1/3 for every state: blocks of 3
            for halt in model.attention_layer.halting_units:
                kernel, _ = halt.get_weights()
                halt.set_weights([np.zeros_like(kernel), np.array([-np.log(2.0)], "float32")])
        models[name] = model
    return models


def decoder(model, steps):
    """A `tf.function` `source -> tokens`: encode once, `steps` greedy steps."""
    import tensorflow as tf

    from ganet_tf.seq2seq.vocabulary import START_ID

    @tf.function
    def decode(source):
        memory, state, _ = model.encode(source, training=False)
        tokens = tf.fill([tf.shape(source)[0]], START_ID)
        for _ in tf.range(steps):
            logits, state = model.decode_step(tokens, state, memory, training=False)
            tokens = tf.argmax(logits, -1, output_type=tf.int32)
        return tokens

    return decode


def step_flops(model, source, steps):
    """FLOPs per decoder step and sentence: attention, LSTM cell, output."""
    target = np.full([source.shape[0], steps], 4, "int32")
    nodes = float(np.mean(model.attended_nodes(source, target).numpy()))
    attention = float(model.attention_flops(nodes))
    cell = model.decoder.cell
    inputs = cell.kernel.shape[0]
    units = cell.units
    lstm = 2 * 4 * units * (inputs + units) + 4 * 4 * units  # gate matmuls, bias, activations and products
    features = model.logits.kernel.shape[0]
    output = 2 * features * model.target_vocabulary_size + model.target_vocabulary_size
    return {"attended_nodes": nodes, "attention": attention, "lstm": float(lstm), "output": float(output)}


def time_cell(models, length, batch, args):
    """Median seconds per decoded step of each model over the rounds, and every round's time."""
    rng = np.random.default_rng(args.seed + length + batch)
    source = rng.integers(4, args.vocabulary, size=[batch, length]).astype("int32")
    names = list(models)
    functions = [decoder(models[name], args.steps) for name in names]
    for function in functions:
        for _ in range(1 + args.warmup):  # tracing, then warm-up
            function(source).numpy()
    times = np.zeros([len(names), args.rounds])
    for round_number in range(args.rounds):
        for index in np.roll(np.arange(len(names)), round_number):
            started = time.perf_counter()
            functions[index](source).numpy()
            times[index, round_number] = (time.perf_counter() - started) / args.steps
    # One sentence's counts (the rows are alike: random ids, no padding); the
    # dense `attended_nodes` of a hierarchy holds (steps, T, T) tensors.
    flops = {name: step_flops(models[name], source[:1], min(args.steps, 4)) for name in names}
    reference = names.index("bahdanau")
    cells = []
    for index, name in enumerate(names):
        median = float(np.median(times[index]))
        cells.append(
            {
                "model": name,
                "length": length,
                "batch": batch,
                "seconds_per_step": median,
                "rounds": [round(float(t), 7) for t in times[index]],
                "ratio_to_bahdanau": median / float(np.median(times[reference])),
                "round_ratio_quartiles": paired_quartiles(times[index], times[reference]),
                "flops_per_step": flops[name],
            }
        )
    return cells


def readme(command, machine, args, cells):
    lines = [
        "# Decoding cost across source lengths, untrained models timed side by side",
        "",
        f"Command: `{command}`  ",
        f"Machine: {machine}  ",
        (
            f"Setting: one process, graph mode (`tf.function`), hidden {args.hidden}, embeddings "
            f"{args.embedding_dim}, {args.vocabulary} source and target ids; each sentence encoded once and "
            f"decoded for {args.steps} greedy steps; tracing plus {args.warmup} warm-up runs per model, then "
            f"{args.rounds} rounds in which every model decodes the same batch once (order rotating). "
            "Time: median seconds per decoder step (the encoder and `prepare` included, spread over the steps); "
            "ratio to Bahdanau's median, and the median [quartiles] of the per-round ratios. FLOPs per step and "
            "sentence (multiply-add = 2): attention (query projection plus the attended nodes), the decoder LSTM "
            "cell, the output projection; the attention share is of their sum."
        ),
        "",
        "| T | batch | model | s/step | time ratio | round ratios: median [quartiles] | attended nodes "
        "| attention FLOPs | LSTM FLOPs | output FLOPs | attention share | attention FLOPs ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        f = c["flops_per_step"]
        reference = next(
            r for r in cells if r["model"] == "bahdanau" and (r["length"], r["batch"]) == (c["length"], c["batch"])
        )
        share = f["attention"] / (f["attention"] + f["lstm"] + f["output"])
        low, middle, high = c["round_ratio_quartiles"]
        lines.append(
            f"| {c['length']} | {c['batch']} | {c['model']} | {c['seconds_per_step']:.6f} "
            f"| {c['ratio_to_bahdanau']:.2f}x | {middle:.3f}x [{low:.3f}, {high:.3f}] | {f['attended_nodes']:.1f} "
            f"| {f['attention']:.3g} | {f['lstm']:.3g} | {f['output']:.3g} | {share:.3f} "
            f"| {f['attention'] / reference['flops_per_step']['attention']:.2f}x |"
        )
    return "\n".join(lines) + "\n"


def main():
    args = parse_args()
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    models = build_models(args)
    started = time.time()
    cells = []
    for batch in args.batches:
        for length in args.lengths:
            cells += time_cell(models, length, batch, args)
            print(f"T {length}, batch {batch}: done ({time.time() - started:.0f} s)", flush=True)
    command = portable("nice -n 5 python experiments/bench_seq2seq_lengths.py " + shlex.join(sys.argv[1:]))
    machine = machine_line(args)
    setting = {k: getattr(args, k) for k in ("steps", "warmup", "rounds", "hidden", "embedding_dim", "vocabulary")}
    setting["seconds"] = time.time() - started
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench.json"), "w") as handle:
        json.dump({"command": command, "machine": machine, "setting": setting, "cells": cells}, handle, indent=1)
    with open(os.path.join(args.out, "README.md"), "w") as handle:
        handle.write(readme(command, machine, args, cells))


if __name__ == "__main__":
    main()
