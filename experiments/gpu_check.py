"""The GPU check of issue 53: under JAX with TensorFlow unimportable, in one process (docs/devices.md).

    sh experiments/gpu_check.sh                                         # on the device: results to $OUT/gpu
    KERAS_BACKEND=jax python -m experiments.gpu_check --smoke --prepared runs/backends/trec_seed_0.npz  # a CPU
    python -m experiments.gpu_check --write-specs --prepared runs/backends/imdb512.npz      # TensorFlow side, once

Parts (`--parts`): `tests`, the layer tests marked `backends`; `bench`, 2 gated encoder blocks (token dropping,
sparse training, gathered lengths a multiple of 64) against 2 dense fused-attention blocks, bf16, inference and an SGD
step, jitted and timed by `bench.alternating`; `train`, the IMDB Transformers with `train`'s settings
(`gpu_check_specs.json`). Writes `OUT/gpu_check.json` and `OUT/README.md` after each part, cell and run.
"""

import argparse
import dataclasses
import functools
import itertools
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time

from experiments import bench
from experiments import provenance
from experiments import runner
from experiments import tables
from experiments.provenance import REPO

SPECS = os.path.join(REPO, "experiments", "gpu_check_specs.json")
FULL = dict(lengths=[1024, 4096, 16384], batches=[1, 8, 32], densities=[0.1, 0.2, 0.5], width=512, heads=8)
FULL.update(intermediate=2048, warmup=3, runs=10, seeds=[0, 1, 2], epochs=None, limit=None)
# Tiny sizes: the whole check runs on a CPU in a few minutes (a smoke check, not results).
SMOKE = dict(FULL, lengths=[128], batches=[2], densities=[0.2], width=64, heads=2, intermediate=128, warmup=1)
SMOKE.update(runs=3, seeds=[0], epochs=1, limit=400)
MODELS = ("ganet_transformer", "transformer")
STEPS = ("infer", "train")
TRAIN_HEADERS = "model | seed | test accuracy | attended density | epochs | median epoch seconds | train seconds"
BUCKET_MULTIPLE = 64  # the fused attention kernels' tile: every gathered length a multiple of it


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prepared", help="the .npz of `python -m ganet_tf prepare` the `train` part trains on")
    parser.add_argument("--parts", nargs="+", default=["tests", "bench", "train"], choices=["tests", "bench", "train"])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes for a CPU")
    parser.add_argument("--out", help="results folder (default results/gpu, with --smoke results/gpu/cpu_smoke)")
    parser.add_argument("--write-specs", action="store_true", help="TensorFlow side: write " + SPECS)
    for name, value in FULL.items():
        kind = float if name == "densities" else int
        parser.add_argument("--" + name, type=kind, nargs="+" if isinstance(value, list) else None)
    args = parser.parse_args()
    for name, value in (SMOKE if args.smoke else FULL).items():
        setattr(args, name, value if getattr(args, name) is None else getattr(args, name))
    args.out = args.out or os.path.join(REPO, "results", "gpu", "cpu_smoke" if args.smoke else "")
    args.command = provenance.command("gpu_check.py")
    return args


def fail(message):
    """One error line and exit code 2."""
    print(f"gpu_check: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def first_line(error, width=300):
    return (str(error).splitlines() or [type(error).__name__])[0][:width]


def read_prepared(path):
    """`load_prepared(path)`; a missing or damaged file is one error line, before any part runs or writes."""
    from ganet_tf.data.prepared_dataset import PREPARE_COMMAND
    from ganet_tf.data.prepared_dataset import load_prepared
    from ganet_tf.errors import GANetInputError

    if path is None:
        fail(f"The train part needs --prepared FILE.npz: write one with {PREPARE_COMMAND}.")
    try:
        return load_prepared(path)
    except GANetInputError as error:
        fail(error)


def write_specs(args):
    """TensorFlow side: `train`'s builder arguments and fit settings of the IMDB models, each seed, to `SPECS`."""
    from experiments.jax_training import train_spec

    examples = len(read_prepared(args.prepared).labels["train"])
    flags = ["--dataset", "imdb", "--sequence-length", "512", "--model"]
    specs = {
        m: {str(s): train_spec([*flags, m, "--seed", str(s)], examples, "imdb") for s in FULL["seeds"]} for m in MODELS
    }
    tables.write_text(SPECS, [json.dumps(specs, indent=1)])
    print(f"wrote {SPECS}")


def run_tests():
    """The layer tests marked `backends` under JAX, TensorFlow unimportable: summary line, failures, exit code."""
    environment = dict(os.environ, KERAS_BACKEND="jax", GANET_BLOCK_TENSORFLOW="1")
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))
    command = ["-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:randomly", "-m", "backends", "tests/layers"]
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *command], cwd=REPO, env=environment, capture_output=True, text=True)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    tests = {"command": "KERAS_BACKEND=jax GANET_BLOCK_TENSORFLOW=1 python " + shlex.join(command)}
    tests.update(returncode=done.returncode, summary=lines[-1] if lines else "")
    failures = [line for line in lines if line.startswith(("FAILED", "ERROR"))][:20]
    return {**tests, "failures": failures, "seconds": round(time.perf_counter() - started, 1)}


def flash_attention():
    """`(flash_attention, note)` of the dense blocks: True where the fused kernel runs a tiny bf16 input, else None."""
    import jax.numpy as jnp
    from keras import ops

    x = jnp.ones((1, 128, 2, 64), jnp.bfloat16)
    try:
        ops.dot_product_attention(x, x, x, flash_attention=True).block_until_ready()
        return True, "on (the flash kernel ran)"
    except Exception as error:
        return None, f"unavailable here, XLA attention instead ({first_line(error, 200)})"


def build_pair(args, length, density, flash):
    """`{"gated": model, "dense": model}`, 2 post-norm encoder blocks each, on `(None, length, width)`."""
    import keras
    from keras import ops

    from ganet_tf.layers import GatedTransformerEncoder
    from ganet_tf.layers import GateSampler
    from ganet_tf.layers.sparse_gather import kept_count

    class FusedEncoderBlock(keras.layers.Layer):
        """Self-attention by `keras.ops.dot_product_attention`, residual, norm, feedforward, residual, norm."""

        def __init__(self, width):
            super().__init__()
            self.qkv, self.out = keras.layers.Dense(3 * width), keras.layers.Dense(width)
            self.feedforward = [keras.layers.Dense(args.intermediate, activation="relu"), keras.layers.Dense(width)]
            self.norms = [keras.layers.LayerNormalization(epsilon=1e-5) for _ in range(2)]

        def call(self, x):
            batch, steps, width = ops.shape(x)
            qkv = ops.reshape(self.qkv(x), (batch, steps, 3, args.heads, width // args.heads))
            attended = ops.dot_product_attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], flash_attention=flash)
            x = self.norms[0](x + self.out(ops.reshape(attended, (batch, steps, width))))
            return self.norms[1](x + self.feedforward[1](self.feedforward[0](x)))

    inputs = keras.Input((length, args.width))
    logits = keras.layers.Reshape((length,))(keras.layers.Dense(1, name="gate_network")(inputs))
    gates = GateSampler(temperature=0.5, inference_mode="top_k", inference_density=density, seed=0)(logits)
    # One bucket, the kept count's share (and the whole length): every row is full, so both paths gather `k` tokens.
    options = dict(token_dropping=True, sparse_training=True, training_density=density)
    options.update(sparse_buckets=[kept_count(density, length) / length], sparse_bucket_multiple=BUCKET_MULTIPLE)
    gated = dense = inputs
    for _ in range(2):
        gated = GatedTransformerEncoder(args.intermediate, args.heads, **options)(gated, gates=gates)
        dense = FusedEncoderBlock(args.width)(dense)
    return {"gated": keras.Model(inputs, gated), "dense": keras.Model(inputs, dense)}


def compiled_calls(model, x, readout):
    """`{"infer": call, "train": call}`: jitted inference and SGD step of `model` through `stateless_call`."""
    import jax

    def infer(trainable, non_trainable):
        return model.stateless_call(trainable, non_trainable, x, training=False)[0]

    def loss(trainable, non_trainable):
        outputs, non_trainable = model.stateless_call(trainable, non_trainable, x, training=True)
        return (outputs.astype("float32") * readout).mean(), non_trainable

    def train(trainable, non_trainable):
        (value, non_trainable), grads = jax.value_and_grad(loss, has_aux=True)(trainable, non_trainable)
        return value, [w - 1e-4 * g.astype(w.dtype) for w, g in zip(trainable, grads, strict=True)], non_trainable

    state = [v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables]
    return {name: functools.partial(jax.jit(step), *state) for name, step in (("infer", infer), ("train", train))}


def measure_cell(args, length, batch, density, flash):
    """One cell of the grid: median ms and compile seconds of each path's inference and training step, FLOPs."""
    import jax
    import jax.numpy as jnp
    import keras
    import numpy as np

    from ganet_tf.layers.sparse_gather import kept_count

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(batch, length, args.width)), jnp.bfloat16)
    readout = jnp.asarray(rng.normal(size=(batch, length, args.width)), jnp.float32)
    models = build_pair(args, length, density, flash)
    calls = {f"{p}_{s}": call for p, model in models.items() for s, call in compiled_calls(model, x, readout).items()}
    times, firsts = bench.alternating(list(calls.values()), args.warmup, args.runs, jax.block_until_ready, first=True)
    # The length the gated blocks gather full rows to: the kept count rounded up to a multiple of 64, at most T.
    k = min(length, BUCKET_MULTIPLE * math.ceil(kept_count(density, length) / BUCKET_MULTIPLE))
    flops = [bench.encoder_flops(batch, size, args.width, args.intermediate) for size in (length, k)]
    cell = {"T": length, "batch": batch, "density": density, "k": k, "dense_flops": flops[0], "gated_flops": flops[1]}
    for name, runs, first in zip(calls, times, firsts, strict=True):
        cell.update({f"{name}_ms": 1e3 * statistics.median(runs), f"{name}_compile_s": round(first, 2)})
    speedups = {f"{step}_speedup": cell[f"dense_{step}_ms"] / cell[f"gated_{step}_ms"] for step in STEPS}
    cell.update(speedups, flops_ratio=flops[0] / flops[1])
    return cell


def run_bench(args, record):
    """Every cell of `args`' grid in bf16 (a failing one, out of memory, keeps its error); `record` after each."""
    import keras

    keras.config.set_dtype_policy("mixed_bfloat16")
    flash, note = flash_attention()
    summary = {"dense_attention": note, "cells": []}
    for length, batch, density in itertools.product(args.lengths, args.batches, args.densities):
        try:
            cell = measure_cell(args, length, batch, density, flash)
        except Exception as error:
            cell = {"T": length, "batch": batch, "density": density, "error": first_line(error)}
        summary["cells"].append(cell)
        print(f"bench {cell}", flush=True)
        record(summary)


def run_training(args, data, record):
    """Each model of `MODELS` and seed on the prepared `data` (`--limit` examples per split); `record` after each."""
    import keras

    from experiments.jax_training import fit_and_evaluate

    keras.config.set_dtype_policy("float32")  # `train`'s precision (the bench part leaves bf16)
    specs = runner.read_json(SPECS)
    if args.limit:
        cut = {field: {s: v[: args.limit] for s, v in getattr(data, field).items()} for field in ("ids", "labels")}
        data = dataclasses.replace(data, **cut)
    examples = {split: len(labels) for split, labels in data.labels.items()}
    prepared = os.path.relpath(os.path.abspath(args.prepared), REPO)
    summary = {"prepared": prepared, "dataset": data.dataset, "examples": examples, "runs": []}
    for model, seed in itertools.product(MODELS, args.seeds):
        spec = specs[model][str(seed)]
        result = fit_and_evaluate(spec, data, epochs=args.epochs, verbose=2)
        steady = result["epoch_seconds"][1:] or result["epoch_seconds"]  # after the first (which compiles)
        run = {"model": model, "seed": seed, "flags": spec["flags"], **result}
        summary["runs"].append({**run, "median_epoch_seconds": statistics.median(steady)})
        print(f"train {model} seed {seed}: test accuracy {result['test_accuracy']:.4f}", flush=True)
        record(summary)


def report(results):
    """The README's lines: the header, then each part that ran."""
    kind = "CPU SMOKE CHECK at tiny sizes: not results" if results["smoke"] else "results"
    lines = [
        f"# GPU check under JAX, without TensorFlow ({kind})",
        "",
        f"`{results['command']}` (`experiments/gpu_check.py`), {results['date']}.",
        f"Devices (`jax.devices()`): {', '.join(results['devices'])}. Machine: {results['machine']}.",
        f"Versions: {', '.join(f'{k} {v}' for k, v in results['versions'].items())}.",
        f"Settings: {', '.join(f'{k} {v}' for k, v in results['settings'].items())}.",
        "",
    ]
    if "tests" in results:
        tests = results["tests"]
        lines += ["## Layer tests marked `backends`", "", f"`{tests['command']}`: exit code {tests['returncode']},"]
        lines += [f"`{tests['summary']}` ({tests['seconds']} s).", "", *(f"- {line}" for line in tests["failures"])]
        lines += [""] if tests["failures"] else []
    if "bench" in results:
        lines += [
            "## Gated vs dense 2-block encoder, bf16",
            "",
            f"Dense attention: `keras.ops.dot_product_attention`, fused kernel {results['bench']['dense_attention']}.",
            "The gated blocks' attention is `GatedMultiHeadAttention`, through the same fused call. Medians in ms;",
            "k: the slots the gated path gathers (the round(rho T) kept tokens rounded up to a multiple of 64), in",
            "inference and training alike; FLOPs ratio: dense / gated forward FLOPs at those sizes.",
            "",
            "| T | batch | density | k | infer dense | infer gated | speedup | train dense | train gated | speedup "
            "| FLOPs ratio |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for c in results["bench"]["cells"]:
            key = f"| {c['T']} | {c['batch']} | {c['density']} |"
            if "error" in c:
                lines.append(f"{key} failed: {c['error']} |" + " |" * 7)
                continue
            steps = [
                f" {c[f'dense_{s}_ms']:.2f} | {c[f'gated_{s}_ms']:.2f} | {c[f'{s}_speedup']:.2f}x |" for s in STEPS
            ]
            lines.append(f"{key} {c['k']} |{''.join(steps)} {c['flops_ratio']:.2f}x |")
        lines.append("")
    if "train" in results:
        train = results["train"]
        rows = [
            [run["model"], run["seed"], tables.number(run["test_accuracy"], 4)]
            + [tables.number(run["test_attended_density"], 3), run["epochs_trained"]]
            + [f"{run['median_epoch_seconds']:.1f}", f"{run['train_seconds']:.0f}"]
            for run in train["runs"]
        ]
        flags = " ".join(train["runs"][0]["flags"][:-4])
        lines += [
            f"## Training on `{train['prepared']}` ({train['dataset']}, examples {train['examples']})",
            "",
            f"`train`'s builder arguments and fit settings (`experiments/gpu_check_specs.json`: `train {flags} --model "
            "M --seed S`),",
            "early stopping on validation loss with the best weights restored, `train`'s test evaluation.",
            "",
            *tables.grid(TRAIN_HEADERS, rows),
            "",
        ]
    return lines


def main():
    args = parse_args()
    if args.write_specs:
        return write_specs(args)
    os.environ.setdefault("KERAS_BACKEND", "jax")
    from tests import tensorflow_blocker

    tensorflow_blocker.install()
    import jax
    import keras

    if keras.backend.backend() != "jax":
        fail(f"gpu_check runs under JAX: set KERAS_BACKEND=jax (Keras runs on {keras.backend.backend()}).")
    if not args.smoke and not any(device.platform == "gpu" for device in jax.devices()):
        fail(f"no GPU visible to JAX (devices: {jax.devices()}); --smoke checks at tiny sizes on a CPU.")
    data = read_prepared(args.prepared) if "train" in args.parts else None
    devices = [f"{device} ({getattr(device, 'device_kind', device.platform)})" for device in jax.devices()]
    machine = provenance.machine(gpus=None)
    results = {"command": args.command, "smoke": args.smoke, "devices": devices, "machine": machine}
    results["versions"] = {"python": platform.python_version(), "jax": jax.__version__, "keras": keras.__version__}
    date, settings = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), {n: getattr(args, n) for n in FULL}
    results.update(date=date, settings=settings)

    def record(part, value):
        results[part] = value
        runner.write_json(os.path.join(args.out, "gpu_check.json"), results)
        tables.write_text(os.path.join(args.out, "README.md"), report(results))

    if "tests" in args.parts:
        record("tests", run_tests())
        print("tests:", results["tests"]["summary"], flush=True)
    if "bench" in args.parts:
        run_bench(args, lambda summary: record("bench", summary))
    if "train" in args.parts:
        run_training(args, data, lambda summary: record("train", summary))
    print(f"wrote {os.path.relpath(args.out, REPO)}/gpu_check.json and README.md")


if __name__ == "__main__":
    sys.exit(main())
