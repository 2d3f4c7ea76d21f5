"""Decoding cost across source lengths: Bahdanau against gated and hierarchical attention (issue 40).

    nice -n 5 python -m experiments.bench_seq2seq_lengths [--quick]    # --quick: a few minutes' smoke
    python -m experiments.bench_seq2seq_lengths --models gated-0.6 --vocabulary 8000 --out DIR    # Bahdanau and some

Untrained `EncoderDecoder`s (`MODELS`) decode sources of T random ids; the encoder, each model's `prepare_memory`
and its decoder steps are timed apart by `bench.alternating`. Writes `OUT/bench.json`, the blocks of `OUT/README.md`
and its plot.
"""

import argparse
import itertools
import os
import time

import numpy as np

from experiments import bench
from experiments import provenance
from experiments import runner
from experiments import tables

THREADS, MIN_BOUND, PLOT = 2, 0.01, "ratios.png"  # the share of bound is shown where the bound is >= MIN_BOUND
FULL = {"lengths": [16, 64, 256, 1024, 2048], "batches": [1, 32], "rounds": 10}
QUICK = {"lengths": [16, 64], "batches": [1], "rounds": 3}
GATED = {"auxiliary": "fnn", "gate_input": "states", "inference_mode": "top_k"}
# Gated: `top_k` test gates at density rho; hierarchies: fixed blocks; ACT: every halting unit at z = 1/3.
MODELS = {
    "bahdanau": {"attention": "bahdanau"},
    "gated-0.2": {"attention": "gated", **GATED, "target_density": 0.2, "inference_density": 0.2},
    "gated-0.5": {"attention": "gated", **GATED, "target_density": 0.5, "inference_density": 0.5},
    # `--attention gated`'s default since issue 63 (its hard concrete training gates do not change decoding).
    "gated-0.6": {"attention": "gated", **GATED, "target_density": 0.6, "inference_density": 0.6},
    "hier-cnn": {"attention": "hier-cnn", "block_size": 3, "levels": 3},
    "hier-rnn": {"attention": "hier-rnn", "block_size": 6, "levels": 2},
    "hier-rnn-keys": {"attention": "hier-rnn", "block_size": 6, "levels": 2, "summary_inputs": "keys"},
    "hier-act": {"attention": "hier-act", "levels": 3, "target_block_size": 3.0},
}
# Issue 40's Done-when at the longest T: these models decode faster per step than Bahdanau and save at least
# this share of what their FLOPs bound allows.
FLOPS = ("attention", "lstm", "output", "total")
TIMES = (
    "T | batch | model | ms/step | step ratio: median [quartiles] | FLOPs bound | saved | share of bound | prepare ms "
    "| ms/batch | batch ratio: median [quartiles]"
)
CHECKED, CHECK_LENGTH, MIN_SHARE_OF_BOUND = ("hier-cnn", "gated-0.2"), 2048, 0.7


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T 16 and 64, batch 1, 3 rounds")
    for flag in ("lengths", "batches", "rounds", "steps", "vocabulary"):
        parser.add_argument("--" + flag, type=int, nargs="+" if flag in ("lengths", "batches") else None)
    parser.add_argument("--models", nargs="+", choices=list(MODELS), help="beside bahdanau (default: all)")
    parser.add_argument("--out")
    args = parser.parse_args()
    args.models = list(MODELS) if not args.models else ["bahdanau", *(m for m in args.models if m != "bahdanau")]
    for name, value in {**(QUICK if args.quick else FULL), "steps": 32, "vocabulary": 6000}.items():
        setattr(args, name, getattr(args, name) or value)
    args.out = args.out or os.path.join(bench.RESULTS, "seq2seq_lengths", "quick" if args.quick else "")
    return args


def build_models(setting, names=tuple(MODELS)):
    """An untrained `EncoderDecoder` per entry of `MODELS` in `names`, hier-act's halting units at z = 1/3 (blocks
    of 3)."""
    import keras

    from ganet_tf.seq2seq.encoder_decoder import EncoderDecoder

    keras.utils.set_random_seed(0)
    sizes = {"embedding_dim": setting["embedding_dim"], "hidden": setting["hidden"], "seed": 0}
    models = {}
    for name in names:
        models[name] = EncoderDecoder(setting["vocabulary"], setting["vocabulary"], **sizes, **MODELS[name])
        models[name].build()
    for halt in models["hier-act"].attention_layer.halting_units if "hier-act" in models else ():
        halt.set_weights([np.zeros_like(halt.get_weights()[0]), np.array([-np.log(2.0)], "float32")])
    return models


def signature(structure):
    """`tf.TensorSpec`s for a nest of tensors: every axis free but the feature axis of float tensors."""
    import tensorflow as tf

    def spec(tensor):
        shape = [None] * tensor.shape.rank
        if tensor.dtype.is_floating and tensor.shape.rank >= 2:
            shape[-1] = tensor.shape[-1]
        return tf.TensorSpec(shape, tensor.dtype)

    return tf.nest.map_structure(spec, structure)


def model_functions(model, steps, sample):
    """`tf.function`s traced once for every T and batch: `encode(source) -> (states, mask, state)`,
    `prepare(source, states, mask) -> memory` and `decode(memory, state) -> tokens` (`steps` greedy steps)."""
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

    return encode, prepare, tf.function(decode, input_signature=signature((memory, state)))


def step_flops(model, source, steps):
    """FLOPs per decoder step and sentence: attention, LSTM cell (gate matmuls, bias, products), output."""
    target = np.full([source.shape[0], steps], 4, "int32")
    nodes = float(np.mean(model.attended_nodes(source, target).numpy()))
    attention = float(model.attention_flops(nodes))
    units, vocabulary = model.decoder.cell.units, model.target_vocabulary_size
    lstm = float(2 * 4 * units * (model.decoder.cell.kernel.shape[0] + units) + 4 * 4 * units)
    output = float(2 * model.logits.kernel.shape[0] * vocabulary + vocabulary)
    total = attention + lstm + output
    return {"attended_nodes": nodes, "attention": attention, "lstm": lstm, "output": output, "total": total}


def time_cell(models, functions, length, batch, setting):
    """The cells of (T, batch): each round of `bench.alternating` runs the encoder once (the same network in every
    model), then each model's `prepare` and decoder steps, timed apart."""
    source = np.random.default_rng(length + batch).integers(4, setting["vocabulary"], size=[batch, length])
    source, names, memories = source.astype("int32"), list(models), {}
    encoded = {name: functions[name][0](source) for name in names}

    def prepare(name):
        memories[name] = functions[name][1](source, *encoded[name][:2])

    calls = [lambda: functions["bahdanau"][0](source)]
    for name in names:
        calls += [lambda n=name: prepare(n), lambda n=name: functions[n][2](memories[n], encoded[n][2])]
    # TensorFlow runs a call on the CPU before it returns: nothing to wait for.
    times = np.asarray(bench.alternating(calls, 1 + setting["warmup"], setting["rounds"], block=lambda out: out))
    encoder, prepare_times, step_times = times[0], times[1::2], times[2::2] / setting["steps"]
    # One sentence's counts (random ids, no padding); a hierarchy's dense `attended_nodes` holds (steps, T, T).
    flops = {name: step_flops(models[name], source[:1], min(setting["steps"], 4)) for name in names}
    sentence = encoder[None] + prepare_times + setting["steps"] * step_times
    base, reference, cells = flops["bahdanau"]["total"], names.index("bahdanau"), []
    for index, name in enumerate(names):
        steps, prepared, whole = step_times[index], prepare_times[index], sentence[index]
        ratios = bench.quartiles(steps / step_times[reference])
        bound, saved = (base - flops[name]["total"]) / base, 1.0 - ratios[1]  # the median ratio: robust to load
        cell = dict(model=name, length=length, batch=batch, seconds_per_step=float(np.median(steps)))
        cell.update(step_ratio_quartiles=ratios, prepare_seconds=float(np.median(prepared)))
        cell.update(encoder_seconds=float(np.median(encoder)), seconds_per_sentence=float(np.median(whole)))
        cell["sentence_ratio_quartiles"] = bench.quartiles(whole / sentence[reference])
        rounds = {"step": (steps, 7), "prepare": (prepared, 6), "encoder": (encoder, 6)}
        cell["rounds"] = {key: [round(float(t), digits) for t in values] for key, (values, digits) in rounds.items()}
        cell.update(flops_per_step=flops[name], flops_bound_saving=bound, time_saving=saved)
        cell["share_of_bound"] = saved / bound if bound >= MIN_BOUND else None
        cells.append(cell)
    return cells


def crossovers(cells):
    """Per model and batch: the shortest T of the grid from which on the model's median (per step, per sentence) is
    below Bahdanau's at every longer T of the grid; None if not at the longest."""
    found = {}
    for model in sorted({c["model"] for c in cells} - {"bahdanau"}):
        for batch in sorted({c["batch"] for c in cells}):
            rows = sorted((c for c in cells if (c["model"], c["batch"]) == (model, batch)), key=lambda c: c["length"])
            for measure, label in (("step", "step"), ("sentence", "batch of sentences")):
                ratios = [(row["length"], row[f"{measure}_ratio_quartiles"][1]) for row in rows[::-1]]
                below = list(itertools.takewhile(lambda pair: pair[1] < 1.0, ratios))
                found[f"{model}, batch {batch}, per {label}"] = below[-1][0] if below else None
    return found


def readme(saved):
    """The blocks of `README.md` (its prose is written by hand) of a `bench.json`: the setting, the times, the FLOPs
    per step (the cells of each T's smallest batch), the crossovers and the checks."""
    cells, s = saved["cells"], saved["setting"]
    times = [
        [
            c["length"],
            c["batch"],
            c["model"],
            f"{1e3 * c['seconds_per_step']:.3f}",
            bench.ratio(c["step_ratio_quartiles"]),
        ]
        + [f"{c['flops_bound_saving']:.3f}", f"{c['time_saving']:.3f}", tables.number(c["share_of_bound"])]
        + [f"{1e3 * c['prepare_seconds']:.2f}", f"{1e3 * c['seconds_per_sentence']:.1f}"]
        + [bench.ratio(c["sentence_ratio_quartiles"])]
        for c in cells
    ]
    least = {length: min(c["batch"] for c in cells if c["length"] == length) for length in {c["length"] for c in cells}}
    flops = [
        [c["length"], c["model"], f"{f['attended_nodes']:.1f}", *(f"{f[key]:.3g}" for key in FLOPS)]
        + [f"{f['attention'] / f['total']:.3f}"]
        for c in sorted(cells, key=lambda c: c["length"])
        if c["batch"] == least[c["length"]]
        for f in [c["flops_per_step"]]
    ]
    order = "in turn, the order reversed every other round." if s.get("order") == "alternating" else None
    setting = [
        f"Command: `{saved['command']}`  ",
        f"Machine: {saved['machine']}  ",
        f"Duration: {s['seconds'] / 60:.1f} min  ",
        f"Setting: one process, graph mode (one `tf.function` each for the encoder, `prepare` and the decoder steps of "
        f"every model, traced once for all T and batches), hidden {s['hidden']}, embeddings {s['embedding_dim']}, "
        f"{s['vocabulary']} source and target ids, sources of T random ids without padding, {s['steps']} greedy "
        f"decoder steps (no end token stops them); {s['warmup']} warm-up runs per model and cell after tracing, then "
        f"{s['rounds']} rounds. In each round the encoder runs once (the same BiLSTM in every model) and every model "
        f"runs its `prepare` on the encoder's outputs and then its {s['steps']} decoder steps on the prepared memory, "
        f"timed apart, {order or 'in an order that rotates from round to round.'}",  # committed grids: no `order`
    ]
    crossover = [[k, v or "-"] for k, v in crossovers(cells).items()]
    return {
        "setting": setting,
        "times": tables.grid(TIMES, times),
        "flops": tables.grid("T | model | attended nodes | attention | LSTM | output | total | attention share", flops),
        "crossovers": tables.grid("model, batch, measure | crossover T", crossover),
        "checks": checks(cells),
    }


def checks(cells):
    """The Done-when lines for the cells at `CHECK_LENGTH` (none without it)."""
    lines = []
    for c in sorted(cells, key=lambda c: (c["model"], c["batch"])):
        if c["length"] == CHECK_LENGTH and c["model"] in CHECKED:
            step, least = c["step_ratio_quartiles"][1], MIN_SHARE_OF_BOUND * c["flops_bound_saving"]
            verdict = "pass" if step < 1 and c["time_saving"] >= least else "FAIL"
            lines.append(
                f"- {c['model']}, batch {c['batch']}: step ratio {step:.3f}x, saved {c['time_saving']:.3f} against "
                f"{MIN_SHARE_OF_BOUND} x bound = {least:.3f}: {verdict}"
            )
    return lines


def plot(cells, path):
    """Per batch size, each model's median per-round ratio to Bahdanau per step and per batch of sentences,
    against T (log scale)."""
    batches = sorted({c["batch"] for c in cells})
    with bench.figure(path, 2, len(batches), dpi=90, figsize=(5 * len(batches), 7), sharex=True) as axes:
        for column, batch in enumerate(batches):
            for row, (measure, title) in enumerate(
                (("step", "per decoder step"), ("sentence", "per batch of sentences"))
            ):
                axis = axes[row][column]
                for model in sorted({c["model"] for c in cells} - {"bahdanau"}):
                    mine = [c for c in cells if (c["model"], c["batch"]) == (model, batch)]
                    points = sorted((c["length"], c[f"{measure}_ratio_quartiles"][1]) for c in mine)
                    axis.plot(*zip(*points, strict=True), marker="o", label=model)
                axis.axhline(1.0, color="black", linewidth=0.8)
                axis.set_xscale("log", base=2)
                axis.set(title=f"batch {batch}, {title}", ylabel="time / Bahdanau's")
                if row == 1:
                    axis.set_xlabel("source length T")
        axes[0][0].legend(fontsize=8)


def rebuild(out):
    """The blocks of `out/README.md` and the plot from its `bench.json` alone."""
    saved = runner.read_json(os.path.join(out, "bench.json"))
    committed = os.path.join(bench.RESULTS, "seq2seq_lengths", "README.md")
    tables.fill_copy(os.path.join(out, "README.md"), committed, readme(saved))
    cells = saved["cells"]
    if any(c["batch"] == 1 for c in cells) and len({c["length"] for c in cells}) > 1:  # batch 1 over several T
        plot(cells, os.path.join(out, PLOT))


def main():
    args = parse_args()
    bench.set_threads(THREADS)
    setting = {"steps": args.steps, "warmup": 2, "rounds": args.rounds, "hidden": 256, "embedding_dim": 256}
    setting.update(vocabulary=args.vocabulary, order="alternating")
    models = build_models(setting, args.models)
    sample = np.full([2, 8], 5, "int32")
    functions = {name: model_functions(model, args.steps, sample) for name, model in models.items()}
    started, cells = time.time(), []
    for batch, length in itertools.product(args.batches, args.lengths):
        cells += time_cell(models, functions, length, batch, setting)
        print(f"T {length}, batch {batch}: done ({time.time() - started:.0f} s)", flush=True)
    setting["seconds"] = time.time() - started
    command = provenance.command("bench_seq2seq_lengths.py")
    saved = {"command": command, "machine": bench.machine_line(THREADS), "setting": setting}
    runner.write_json(os.path.join(args.out, "bench.json"), {**saved, "crossovers": crossovers(cells), "cells": cells})
    rebuild(args.out)


if __name__ == "__main__":
    main()
