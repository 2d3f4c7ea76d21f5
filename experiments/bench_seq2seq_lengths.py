"""Decoding cost across source lengths: Bahdanau against gated and hierarchical attention (issue 40).

    nice -n 5 python experiments/bench_seq2seq_lengths.py            # the full grid, an idle machine
    nice -n 5 python experiments/bench_seq2seq_lengths.py --quick    # smoke, a few minutes

Untrained `EncoderDecoder`s, one per attention of `MODELS`, decode sources of T random ids; the encoder, each
model's `prepare_memory` and its decoder steps are timed apart by `bench.alternating`. Writes `OUT/bench.json`,
`OUT/README.md` and its plot (`OUT`: `results/seq2seq_lengths`, `.../quick`).
"""

import argparse
import itertools
import os
import shlex
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from experiments import runner
from experiments.bench import alternating
from experiments.bench import machine_line
from experiments.bench import quartiles
from experiments.bench import set_threads
from experiments.runner import REPO
from experiments.runner import portable

THREADS = 2  # intra-op (inter-op: 1)
FULL = {"lengths": [16, 64, 256, 1024, 2048], "batches": [1, 32], "rounds": 10}
QUICK = {"lengths": [16, 64], "batches": [1], "rounds": 3}
# How the models take turns in a round; the committed grids (no `order` stored) were timed `rotating`.
ORDERS = {
    "rotating": "in an order that rotates from round to round.",
    "alternating": "in turn, the order reversed every other round.",
}
# The share of the bound achieved is shown where the bound is at least this.
MIN_BOUND = 0.01
GATED = {"aux": "fnn", "gate_input": "states", "inference_mode": "top_k"}
# Gated: `top_k` test gates at density rho; hierarchies: fixed blocks; ACT: every halting unit at z = 1/3.
MODELS = {
    "bahdanau": {"attention": "bahdanau"},
    "gated-0.2": {"attention": "gated", **GATED, "target_density": 0.2, "inference_density": 0.2},
    "gated-0.5": {"attention": "gated", **GATED, "target_density": 0.5, "inference_density": 0.5},
    "hier-cnn": {"attention": "hier-cnn", "block_size": 3, "levels": 3},
    "hier-rnn": {"attention": "hier-rnn", "block_size": 6, "levels": 2},
    "hier-rnn-keys": {"attention": "hier-rnn", "block_size": 6, "levels": 2, "summary_inputs": "keys"},
    "hier-act": {"attention": "hier-act", "levels": 3, "target_block_size": 3.0},
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T 16 and 64, batch 1, 3 rounds")
    parser.add_argument("--lengths", type=int, nargs="+")
    parser.add_argument("--batches", type=int, nargs="+")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--steps", type=int, default=32, help="decoder steps per sentence")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs per model after tracing")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--embedding-dim", type=int, default=256)
    parser.add_argument("--vocabulary", type=int, default=6000, help="source and target vocabulary sizes")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    for name, value in (QUICK if args.quick else FULL).items():
        setattr(args, name, getattr(args, name) or value)
    args.out = args.out or os.path.join(REPO, "results", "seq2seq_lengths", "quick" if args.quick else "")
    args.order = "alternating"  # the timer (`rotating` before `bench.alternating`)
    return args


def build_models(args):
    import keras

    from ganet_tf.seq2seq.encoder_decoder import EncoderDecoder

    keras.utils.set_random_seed(0)
    models = {}
    for name, config in MODELS.items():
        sizes = {"embedding_dim": args.embedding_dim, "hidden": args.hidden, "seed": 0}
        model = EncoderDecoder(args.vocabulary, args.vocabulary, **sizes, **config)
        model.build()
        if name == "hier-act":  # z = 1/3 for every state: blocks of 3
            for halt in model.attention_layer.halting_units:
                kernel, _ = halt.get_weights()
                halt.set_weights([np.zeros_like(kernel), np.array([-np.log(2.0)], "float32")])
        models[name] = model
    return models


def signature(structure):
    """`tf.TensorSpec`s for a nest of tensors: every axis free but the
    feature axis of float tensors (the layers reshape with it)."""
    import tensorflow as tf

    def spec(tensor):
        shape = [None] * tensor.shape.rank
        if tensor.dtype.is_floating and tensor.shape.rank >= 2:
            shape[-1] = tensor.shape[-1]
        return tf.TensorSpec(shape, tensor.dtype)

    return tf.nest.map_structure(spec, structure)


def model_functions(model, steps, sample):
    """Three `tf.function`s, traced once for every T and batch: `encode(source)
    -> (states, mask, state)`, `prepare(source, states, mask) -> memory` and
    `decode(memory, state) -> tokens`, `steps` greedy steps."""
    import tensorflow as tf

    from ganet_tf.seq2seq.vocabulary import START_ID

    source_spec = tf.TensorSpec([None, None], tf.int32)
    states, mask, state = model.encode_source(sample, training=False)
    memory, _ = model.prepare_memory(sample, states, mask, training=False)
    encode = tf.function(lambda source: model.encode_source(source, training=False), input_signature=[source_spec])
    prepare = tf.function(
        lambda source, states, mask: model.prepare_memory(source, states, mask, training=False)[0],
        input_signature=[source_spec, *signature((states, mask))],
    )

    def decode(memory, state):
        tokens = tf.fill([tf.shape(state[0])[0]], START_ID)
        for _ in tf.range(steps):
            logits, state = model.decode_step(tokens, state, memory, training=False)
            tokens = tf.argmax(logits, -1, output_type=tf.int32)
        return tokens

    decode = tf.function(decode, input_signature=signature((memory, state)))
    return encode, prepare, decode


def step_flops(model, source, steps):
    """FLOPs per decoder step and sentence: attention, LSTM cell, output."""
    target = np.full([source.shape[0], steps], 4, "int32")
    nodes = float(np.mean(model.attended_nodes(source, target).numpy()))
    attention = float(model.attention_flops(nodes))
    units, vocabulary = model.decoder.cell.units, model.target_vocabulary_size
    # The gate matmuls, bias, activations and products; the projection to the vocabulary.
    lstm = float(2 * 4 * units * (model.decoder.cell.kernel.shape[0] + units) + 4 * 4 * units)
    output = float(2 * model.logits.kernel.shape[0] * vocabulary + vocabulary)
    total = attention + lstm + output
    return {"attended_nodes": nodes, "attention": attention, "lstm": lstm, "output": output, "total": total}


def time_cell(models, functions, length, batch, args):
    """The cells of (T, batch): in every round of `bench.alternating`, the
    encoder once (the same network in every model), then each model's
    `prepare` and decoder steps, timed apart."""
    rng = np.random.default_rng(length + batch)
    source = rng.integers(4, args.vocabulary, size=[batch, length]).astype("int32")
    names = list(models)
    encoded = {name: functions[name][0](source) for name in names}
    memories = {}

    def prepare(name):
        memories[name] = functions[name][1](source, *encoded[name][:2])

    def decode(name):
        return functions[name][2](memories[name], encoded[name][2])

    calls = [lambda: functions["bahdanau"][0](source)]
    calls += [call for name in names for call in (lambda n=name: prepare(n), lambda n=name: decode(n))]
    # TensorFlow runs a call on the CPU before it returns: nothing to wait for.
    times = np.asarray(alternating(calls, 1 + args.warmup, args.rounds, block=lambda outputs: outputs))
    encoder, prepare_times, step_times = times[0], times[1::2], times[2::2]
    step_times /= args.steps
    # One sentence's counts (the rows are alike: random ids, no padding); the
    # dense `attended_nodes` of a hierarchy holds (steps, T, T) tensors.
    flops = {name: step_flops(models[name], source[:1], min(args.steps, 4)) for name in names}
    reference = names.index("bahdanau")
    sentence = encoder[None] + prepare_times + args.steps * step_times
    cells = []
    for index, name in enumerate(names):
        cells.append(
            {
                "model": name,
                "length": length,
                "batch": batch,
                "seconds_per_step": float(np.median(step_times[index])),
                "step_ratio_quartiles": quartiles(step_times[index] / step_times[reference]),
                "prepare_seconds": float(np.median(prepare_times[index])),
                "encoder_seconds": float(np.median(encoder)),
                "seconds_per_sentence": float(np.median(sentence[index])),
                "sentence_ratio_quartiles": quartiles(sentence[index] / sentence[reference]),
                "rounds": {
                    "step": [round(float(t), 7) for t in step_times[index]],
                    "prepare": [round(float(t), 6) for t in prepare_times[index]],
                    "encoder": [round(float(t), 6) for t in encoder],
                },
                "flops_per_step": flops[name],
            }
        )
    for cell in cells:
        base = cells[reference]
        bound = (base["flops_per_step"]["total"] - cell["flops_per_step"]["total"]) / base["flops_per_step"]["total"]
        saved = 1.0 - cell["step_ratio_quartiles"][1]  # the median per-round ratio: robust to load
        cell["flops_bound_saving"] = bound
        cell["time_saving"] = saved
        cell["share_of_bound"] = saved / bound if bound >= MIN_BOUND else None
    return cells


def crossovers(cells):
    """Per model and batch: the shortest T of the grid from which on the
    model's median (per step, per sentence) is below Bahdanau's at every
    longer T of the grid; None if not at the longest."""
    found = {}
    for model in sorted({c["model"] for c in cells} - {"bahdanau"}):
        for batch in sorted({c["batch"] for c in cells}):
            rows = sorted((c for c in cells if (c["model"], c["batch"]) == (model, batch)), key=lambda c: c["length"])
            for measure, label in (("step", "step"), ("sentence", "batch of sentences")):
                ratios = [(row["length"], row[f"{measure}_ratio_quartiles"][1]) for row in rows[::-1]]
                below = list(itertools.takewhile(lambda pair: pair[1] < 1.0, ratios))
                found[f"{model}, batch {batch}, per {label}"] = below[-1][0] if below else None
    return found


def readme(command, machine, args, cells, seconds):
    lengths = sorted({c["length"] for c in cells})
    lines = [
        "# Decoding cost across source lengths, untrained models timed side by side",
        "",
        f"Command: `{command}`  ",
        f"Machine: {machine}  ",
        f"Duration: {seconds / 60:.1f} min  ",
        (
            f"Setting: one process, graph mode (one `tf.function` each for the encoder, `prepare` and the decoder "
            f"steps of every model, traced once for all T and batches), hidden {args.hidden}, embeddings "
            f"{args.embedding_dim}, {args.vocabulary} source and target ids, sources of T random ids without "
            f"padding, {args.steps} greedy decoder steps (no end token stops them); {args.warmup} warm-up runs "
            f"per model and cell after tracing, then {args.rounds} rounds. In each round the encoder runs once "
            "(the same BiLSTM in every model) and every model runs its `prepare` on the encoder's outputs and "
            f"then its {args.steps} decoder steps on the prepared memory, timed apart, " + ORDERS[args.order]
        ),
        "",
        (
            f"Per step: the decoder steps' time over {args.steps}, so what the FLOPs per step count: the "
            "attention on the prepared memory, the decoder LSTM cell and the output projection (and the "
            "argmax, the embedding lookup). `prepare` (the key projections; the gates, their top-k and the "
            "gather of the open states; the hierarchy's levels) runs once per sentence and is reported on its "
            "own and inside the time per batch of sentences (encoder + `prepare` + steps, each round's own sum). "
            "Ratios "
            "are to Bahdanau: the median [quartiles] of the per-round ratios (both timed in the same round, so "
            "load that moves a whole round cancels). Bound: `(F_B - F) / F_B`, the share of Bahdanau's FLOPs "
            "per step that a model does not need (multiply-add = 2); saved: `(t_B - t) / t_B`, one minus the "
            "median per-round ratio of the times per step; share of bound: saved / bound (shown where the bound "
            f"is at least {MIN_BOUND}). FLOPs count one sentence (attended nodes: `EncoderDecoder.attended_nodes`, "
            "keys projected by `prepare`)."
        ),
        "",
        "| T | batch | model | ms/step | step ratio: median [quartiles] | FLOPs bound | saved | share of bound "
        "| prepare ms | ms/batch | batch ratio: median [quartiles] |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        low, middle, high = c["step_ratio_quartiles"]
        s_low, s_middle, s_high = c["sentence_ratio_quartiles"]
        share = "-" if c["share_of_bound"] is None else f"{c['share_of_bound']:.2f}"
        lines.append(
            f"| {c['length']} | {c['batch']} | {c['model']} | {1e3 * c['seconds_per_step']:.3f} "
            f"| {middle:.3f}x [{low:.3f}, {high:.3f}] | {c['flops_bound_saving']:.3f} | {c['time_saving']:.3f} "
            f"| {share} | {1e3 * c['prepare_seconds']:.2f} | {1e3 * c['seconds_per_sentence']:.1f} "
            f"| {s_middle:.3f}x [{s_low:.3f}, {s_high:.3f}] |"
        )
    lines += [
        "",
        "FLOPs per decoder step and sentence (independent of the batch):",
        "",
        "| T | model | attended nodes | attention | LSTM | output | total | attention share |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for length in lengths:  # the cells of the smallest batch
        batch = min(c["batch"] for c in cells if c["length"] == length)
        for c, f in ((c, c["flops_per_step"]) for c in cells if (c["length"], c["batch"]) == (length, batch)):
            lines.append(
                f"| {length} | {c['model']} | {f['attended_nodes']:.1f} | {f['attention']:.3g} | {f['lstm']:.3g} "
                f"| {f['output']:.3g} | {f['total']:.3g} | {f['attention'] / f['total']:.3f} |"
            )
    lines += [
        "",
        "Crossover: the shortest T of the grid from which on the model's median per-round ratio to Bahdanau "
        "stays below 1 at every longer T of the grid (`-`: not faster at the longest T).",
        "",
        "| model, batch, measure | crossover T |",
        "|---|---|",
    ]
    for key, value in crossovers(cells).items():
        lines.append(f"| {key} | {'-' if value is None else value} |")
    lines += ["", *checks(cells)]
    if any(c["batch"] == 1 for c in cells) and len(lengths) > 1:
        lines += ["", f"![time per step and per batch over Bahdanau's, by source length]({PLOT})"]
    return "\n".join(lines) + "\n"


# Issue 40's Done-when at the longest T: these models decode faster per step
# than Bahdanau and save at least this share of what their FLOPs bound allows.
CHECKED, CHECK_LENGTH, MIN_SHARE_OF_BOUND = ("hier-cnn", "gated-0.2"), 2048, 0.7
PLOT = "ratios.png"


def checks(cells):
    """The Done-when lines for the cells at `CHECK_LENGTH` (none without it)."""
    rows = [c for c in cells if c["length"] == CHECK_LENGTH and c["model"] in CHECKED]
    if not rows:
        return []
    lines = [
        f"Checks at T = {CHECK_LENGTH} (issue 40): faster per step than Bahdanau (median per-round ratio < 1) "
        f"and saved >= {MIN_SHARE_OF_BOUND} x bound.",
        "",
    ]
    for c in sorted(rows, key=lambda c: (c["model"], c["batch"])):
        ratio = c["step_ratio_quartiles"][1]
        ok = ratio < 1 and c["time_saving"] >= MIN_SHARE_OF_BOUND * c["flops_bound_saving"]
        lines.append(
            f"- {c['model']}, batch {c['batch']}: step ratio {ratio:.3f}x, saved {c['time_saving']:.3f} against "
            f"{MIN_SHARE_OF_BOUND} x bound = {MIN_SHARE_OF_BOUND * c['flops_bound_saving']:.3f}: "
            f"{'pass' if ok else 'FAIL'}"
        )
    return lines


def plot(cells, path):
    """Per batch size, the median per-round ratio to Bahdanau of each model,
    per step and per batch of sentences, against T (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    batches = sorted({c["batch"] for c in cells})
    figure, axes = pyplot.subplots(2, len(batches), figsize=(5 * len(batches), 7), squeeze=False, sharex=True)
    for column, batch in enumerate(batches):
        for row, (measure, title) in enumerate((("step", "per decoder step"), ("sentence", "per batch of sentences"))):
            axis = axes[row][column]
            for model in sorted({c["model"] for c in cells} - {"bahdanau"}):
                points = sorted(
                    (c["length"], c[f"{measure}_ratio_quartiles"][1])
                    for c in cells
                    if (c["model"], c["batch"]) == (model, batch)
                )
                axis.plot(*zip(*points, strict=True), marker="o", label=model)
            axis.axhline(1.0, color="black", linewidth=0.8)
            axis.set_xscale("log", base=2)
            axis.set_title(f"batch {batch}, {title}")
            axis.set_ylabel("time / Bahdanau's")
            if row == 1:
                axis.set_xlabel("source length T")
    axes[0][0].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    pyplot.close(figure)


def write_outputs(out, result, cells, args):
    """`OUT/README.md` and the plot (batch 1 over several T) of the cells."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "README.md"), "w") as handle:
        handle.write(readme(result["command"], result["machine"], args, cells, result["setting"]["seconds"]))
    if any(c["batch"] == 1 for c in cells) and len({c["length"] for c in cells}) > 1:
        plot(cells, os.path.join(out, PLOT))


def rebuild(out):
    """`README.md` and the plot of `out` from its `bench.json` alone (its setting's flags, the others' defaults)."""
    stored = runner.read_json(os.path.join(out, "bench.json"))
    args = parse_args([])
    vars(args).update({"order": "rotating", **stored["setting"]})
    write_outputs(out, stored, stored["cells"], args)


def main():
    args = parse_args()
    set_threads(THREADS)
    models = build_models(args)
    sample = np.full([2, 8], 5, "int32")
    functions = {name: model_functions(model, args.steps, sample) for name, model in models.items()}
    started = time.time()
    cells = []
    for batch in args.batches:
        for length in args.lengths:
            cells += time_cell(models, functions, length, batch, args)
            print(f"T {length}, batch {batch}: done ({time.time() - started:.0f} s)", flush=True)
    seconds = time.time() - started
    niceness = os.nice(0)  # as the command ran
    prefix = f"nice -n {niceness} " if niceness else ""
    command = portable(prefix + "python experiments/bench_seq2seq_lengths.py " + shlex.join(sys.argv[1:]))
    machine = machine_line(THREADS)
    setting = {
        k: getattr(args, k) for k in ("steps", "warmup", "rounds", "hidden", "embedding_dim", "vocabulary", "order")
    }
    setting["seconds"] = seconds
    result = {"command": command, "machine": machine, "setting": setting, "crossovers": crossovers(cells)}
    runner.write_json(os.path.join(args.out, "bench.json"), {**result, "cells": cells})
    write_outputs(args.out, result, cells, args)


if __name__ == "__main__":
    main()
