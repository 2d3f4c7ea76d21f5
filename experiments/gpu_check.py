"""The GPU check of issue 53, under JAX with TensorFlow unimportable, in one process.

    # on the device (docs/devices.md, "Keras backends": what to carry)
    KERAS_BACKEND=jax python experiments/gpu_check.py --prepared runs/backends/imdb512.npz
    # a smoke run on this machine's CPU, tiny sizes (not results)
    KERAS_BACKEND=jax python experiments/gpu_check.py --smoke --prepared runs/backends/trec_seed_0.npz
    # on the TensorFlow side, once: the IMDB models' specs (`train`'s builder arguments)
    python experiments/gpu_check.py --write-specs --prepared runs/backends/imdb512.npz

Three parts (`--parts`, default all):

- `tests`: the layer tests marked `backends` under JAX
  (`python -m pytest -q -p no:xdist -m backends tests/layers`, TensorFlow
  made unimportable), their summary line and exit code.
- `bench`: two stacked encoder blocks of width `--width`, `--heads` heads,
  feedforward `--intermediate`, in bf16 (`mixed_bfloat16`), on random
  `(batch, T, width)` inputs: `gated` is `GatedTransformerEncoder` with its
  gate network (a `Dense(1)` of the inputs, `GateSampler`: relaxed gates in
  training, the `top_k` rule at the density at inference), token dropping at
  inference and sparse training (each row keeps its round(rho T) tokens of
  highest gate, forward and backward), both gathered into a length rounded up
  to a multiple of 64 (`sparse_bucket_multiple=64`, the fused kernels' tile);
  `dense` is the same post-norm block with fused attention
  (`keras.ops.dot_product_attention`, the cuDNN flash kernel where JAX has
  it), the call `GatedMultiHeadAttention` makes too. For each
  T, batch and density: inference (forward) and one training step (forward,
  backward, SGD), each compiled with `jax.jit`, `--warmup` untimed calls,
  then `--runs` rounds timed in turn; medians, compile seconds, and the
  forward FLOPs of the sizes each path runs (`encoder_flops` of
  `experiments/bench_sparse_attention.py`; a training step costs about 3
  forward passes; the gate network, gathers, softmax and norms left out).
  A cell that fails (out of memory) is recorded with its error line.
- `train`: `build_ganet_transformer` (sparse training, `train`'s default)
  and `build_transformer` on the prepared `.npz` (IMDB at 512 tokens on the
  device), each seed, with `train`'s builder arguments and fit settings
  (`experiments/gpu_check_specs.json`, written by `--write-specs` from
  `ganet_tf.training.train`), early stopping and test evaluation
  (`experiments/jax_training.py`): test accuracy, attended density, epoch
  seconds.

Writes `OUT/gpu_check.json` and `OUT/README.md` (`OUT`: `results/gpu`, or
`results/gpu/cpu_smoke` with `--smoke`), naming the device of
`jax.devices()`, after each part.
"""

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPERIMENTS = os.path.join(REPO, "experiments")
SPECS = os.path.join(EXPERIMENTS, "gpu_check_specs.json")
FULL = {
    "lengths": [1024, 4096, 16384],
    "batches": [1, 8, 32],
    "densities": [0.1, 0.2, 0.5],
    "width": 512,
    "heads": 8,
    "intermediate": 2048,
    "warmup": 3,
    "runs": 10,
    "seeds": [0, 1, 2],
    "epochs": None,
    "limit": None,
}
# Tiny sizes: the whole check runs on a CPU in a few minutes (a smoke check).
SMOKE = {
    **FULL,
    "lengths": [128],
    "batches": [2],
    "densities": [0.2],
    "width": 64,
    "heads": 2,
    "intermediate": 128,
    "warmup": 1,
    "runs": 3,
    "seeds": [0],
    "epochs": 1,
    "limit": 400,
}
MODELS = ("ganet_transformer", "transformer")
# `train` flags of the IMDB models (`--write-specs`), beside `--seed S`.
IMDB_FLAGS = ["--dataset", "imdb", "--sequence-length", "512"]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prepared", help="the .npz of `python -m ganet_tf prepare` the `train` part trains on")
    parser.add_argument("--parts", nargs="+", default=["tests", "bench", "train"], choices=["tests", "bench", "train"])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes for a CPU (the defaults below change)")
    parser.add_argument("--out", help="results folder (default results/gpu, with --smoke results/gpu/cpu_smoke)")
    parser.add_argument("--write-specs", action="store_true", help="TensorFlow side: write " + SPECS)
    for name in ("lengths", "batches", "seeds"):
        parser.add_argument("--" + name, type=int, nargs="+")
    parser.add_argument("--densities", type=float, nargs="+")
    for name in ("width", "heads", "intermediate", "warmup", "runs", "epochs", "limit"):
        parser.add_argument("--" + name, type=int)
    parser.add_argument("--flash", choices=["auto", "on", "off"], default="auto", help="the dense block's kernel")
    args = parser.parse_args(argv)
    for name, value in (SMOKE if args.smoke else FULL).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    args.out = args.out or os.path.join(REPO, "results", "gpu", "cpu_smoke" if args.smoke else "")
    args.command = "python experiments/gpu_check.py " + shlex.join(
        [os.path.relpath(a, REPO) if os.path.isabs(a) else a for a in (argv if argv is not None else sys.argv[1:])]
    )
    return args


def write_specs(args):
    """TensorFlow side: `train`'s builder arguments and fit settings of the
    IMDB models for each seed, to `experiments/gpu_check_specs.json`."""
    sys.path.insert(0, EXPERIMENTS)
    from jax_training import train_spec

    data = read_prepared(args.prepared)
    specs = {
        model: {
            str(seed): train_spec(
                [*IMDB_FLAGS, "--model", model, "--seed", str(seed)], len(data.labels["train"]), "imdb"
            )
            for seed in FULL["seeds"]
        }
        for model in MODELS
    }
    with open(SPECS, "w", encoding="utf-8") as handle:
        json.dump(specs, handle, indent=1)
        handle.write("\n")
    print(f"wrote {SPECS}")


def read_prepared(path):
    """`load_prepared(path)`; a missing or damaged file is one error line and
    exit code 2, before any part runs or writes."""
    from ganet_tf.data.prepared_dataset import PREPARE_COMMAND
    from ganet_tf.data.prepared_dataset import load_prepared
    from ganet_tf.errors import GANetInputError

    try:
        if path is None:
            raise GANetInputError(f"The train part needs --prepared FILE.npz: write one with {PREPARE_COMMAND}.")
        return load_prepared(path)
    except GANetInputError as error:
        print(f"gpu_check: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


def run_tests():
    """The layer tests marked `backends` under JAX, TensorFlow unimportable."""
    environment = dict(os.environ, KERAS_BACKEND="jax", GANET_BLOCK_TENSORFLOW="1")
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:randomly", "-m", "backends"]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "tests/layers"], cwd=REPO, env=environment, capture_output=True, text=True, check=False
    )
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    return {
        "command": "KERAS_BACKEND=jax GANET_BLOCK_TENSORFLOW=1 python " + shlex.join([*command[1:], "tests/layers"]),
        "returncode": done.returncode,
        "summary": lines[-1] if lines else "",
        "failures": [line for line in lines if line.startswith(("FAILED", "ERROR"))][:20],
        "seconds": round(time.perf_counter() - started, 1),
    }


def device_names():
    import jax

    return [f"{device} ({getattr(device, 'device_kind', device.platform)})" for device in jax.devices()]


def write_results(args, results):
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "gpu_check.json"), "w", encoding="utf-8") as handle:
        json.dump(results, handle, indent=1)
    from gpu_check_report import report_lines

    with open(os.path.join(args.out, "README.md"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(report_lines(results)) + "\n")


def _record(args, results, part, value):
    results[part] = value
    write_results(args, results)


def main(argv=None):
    args = parse_args(argv)
    sys.path.insert(0, EXPERIMENTS)
    if args.write_specs:
        return write_specs(args)
    os.environ.setdefault("KERAS_BACKEND", "jax")
    sys.path.append(REPO)  # tests/ (after the ganet_tf on PYTHONPATH)
    from tests import tensorflow_blocker

    tensorflow_blocker.install()
    import bench
    import jax
    import keras

    if keras.backend.backend() != "jax":
        raise SystemExit(f"gpu_check runs under JAX: set KERAS_BACKEND=jax (Keras runs on {keras.backend.backend()}).")
    data = read_prepared(args.prepared) if "train" in args.parts else None
    results = {
        "command": args.command,
        "smoke": args.smoke,
        "devices": device_names(),
        "machine": bench.machine(gpus=None),
        "versions": {"python": platform.python_version(), "jax": jax.__version__, "keras": keras.__version__},
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "settings": {name: getattr(args, name) for name in (*FULL, "flash")},
    }
    if "tests" in args.parts:
        results["tests"] = run_tests()
        print("tests:", results["tests"]["summary"], flush=True)
        write_results(args, results)
    if "bench" in args.parts:
        from gpu_check_bench import run_bench

        run_bench(args, lambda cells: _record(args, results, "bench", cells))
    if "train" in args.parts:
        run_training(args, data, lambda summary: _record(args, results, "train", summary))
    write_results(args, results)
    print(f"wrote {os.path.relpath(args.out, REPO)}/gpu_check.json and README.md")
    return 0


def _subset(data, limit):
    """`data` with the first `limit` examples of each split (None: all)."""
    import dataclasses

    if not limit:
        return data
    ids = {split: value[:limit] for split, value in data.ids.items()}
    return dataclasses.replace(data, ids=ids, labels={split: value[:limit] for split, value in data.labels.items()})


def run_training(args, data, record):
    """The `train` part: each model of `MODELS` and seed on `data`, the
    prepared dataset of `args.prepared`; `record(partial)` is called with
    the summary so far after each run."""
    import keras
    from jax_training import fit_and_evaluate

    keras.config.set_dtype_policy("float32")  # `train`'s precision
    with open(SPECS, encoding="utf-8") as handle:
        specs = json.load(handle)
    data = _subset(data, args.limit)
    summary = {
        "prepared": os.path.relpath(os.path.abspath(args.prepared), REPO),
        "dataset": data.dataset,
        "examples": {split: len(labels) for split, labels in data.labels.items()},
        "runs": [],
    }
    for model in MODELS:
        for seed in args.seeds:
            spec = specs[model][str(seed)]
            result = fit_and_evaluate(spec, data, epochs=args.epochs, verbose=2)
            # An epoch after the first (which compiles), or the first alone.
            steady = result["epoch_seconds"][1:] or result["epoch_seconds"]
            run = {"model": model, "seed": seed, "flags": spec["flags"], **result}
            summary["runs"].append({**run, "median_epoch_seconds": statistics.median(steady)})
            print(f"train {model} seed {seed}: test accuracy {result['test_accuracy']:.4f}", flush=True)
            record(summary)
    return summary


if __name__ == "__main__":
    sys.exit(main())
