"""CPU latency and throughput of an exported model (not a test).

    python experiments/bench_serving.py --model runs/core/trec_ganet_seed0 --data-dir ../shared/data

Exports the run in `--model` with `ganet_tf.export.export_saved_model` into
a temporary folder (or uses `--saved-model`), loads it with plain
`tf.saved_model.load` and times, on the same test texts of the run's
dataset, four ways from raw strings to class probabilities:

- `saved_model`: the `serving_default` signature (tokenisation in-graph), as
  TF Serving runs it, minus the server's RPC and batching;
- `keras_predict`: the run's `TextVectorization` layer, then `model.predict`;
- `keras_call`: the same layer, then a direct `model(ids, training=False)`;
- `keras_predict_on_batch`: the same layer, then `model.predict_on_batch`
  (Keras' compiled predict step without `predict`'s per-call set-up).

Latency is per call at batch 1 (p50, p99, mean over `--calls` calls after
`--warmup` calls); throughput is texts per second at batch 64. The numbers
go to `results/serving/latency.json` and `results/serving/README.md`.
"""

import argparse
import json
import os
import shlex
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from experiments.bench import machine  # noqa: E402
from experiments.runner import portable  # noqa: E402

RESULTS = os.path.join(REPO, "results", "serving")


def latency(fn, texts, calls, warmup):
    for index in range(warmup):
        fn(texts[index % len(texts) : index % len(texts) + 1])
    seconds = []
    for index in range(calls):
        batch = texts[index % len(texts) : index % len(texts) + 1]
        started = time.perf_counter()
        fn(batch)
        seconds.append(time.perf_counter() - started)
    milliseconds = np.array(seconds) * 1000
    return {
        "calls": calls,
        "p50_ms": round(float(np.percentile(milliseconds, 50)), 3),
        "p99_ms": round(float(np.percentile(milliseconds, 99)), 3),
        "mean_ms": round(float(milliseconds.mean()), 3),
    }


def throughput(fn, texts, batch_size, batches, warmup=3):
    chunks = [texts[(i * batch_size) % len(texts) :][:batch_size] for i in range(batches + warmup)]
    chunks = [chunk if len(chunk) == batch_size else texts[:batch_size] for chunk in chunks]
    for chunk in chunks[:warmup]:
        fn(chunk)
    started = time.perf_counter()
    for chunk in chunks[warmup:]:
        fn(chunk)
    elapsed = time.perf_counter() - started
    return {
        "batch_size": batch_size,
        "batches": batches,
        "texts_per_second": round(batches * batch_size / elapsed, 1),
    }


def write_readme(result, results=RESULTS):
    rows = []
    for name, scores in result["paths"].items():
        lat, thr = scores["latency"], scores["throughput"]
        rows.append(
            f"| `{name}` | {lat['p50_ms']:.2f} | {lat['p99_ms']:.2f} | "
            f"{lat['mean_ms']:.2f} | {thr['texts_per_second']:.0f} |"
        )
    load = result["load_average_1min"]
    if load[0] > 1.0:
        verdict = "numbers from a machine busy with other work, pessimistic and noisy; rerun on an idle machine before quoting them"  # noqa: E501
    else:
        verdict = "nothing else was running"
    text = f"""# Serving latency on CPU

Measured here with

```bash
{result["command"]}
```

- machine: {result["machine"]}
- model: `{result["model"]["model"]}` on `{result["model"]["dataset"]}`, the run in
  `{result["run"]}`: {result["model"]["epochs_trained"]} epochs, seed
  {result["run_config"]["seed"]} (its whole config is in `latency.json`), test accuracy
  {result["model"]["test_accuracy"]:.3f}, sequence length {result["model"]["sequence_length"]},
  vocabulary {result["model"]["vocabulary_size"]}
- inputs: the {result["texts"]} test texts of the dataset as raw strings;
  every path goes from strings to class probabilities

| path | batch 1 p50 (ms) | batch 1 p99 (ms) | batch 1 mean (ms) | batch {result["batch_size"]} (texts/s) |
|---|---|---|---|---|
{chr(10).join(rows)}

- `saved_model`: `tf.saved_model.load(...).signatures["serving_default"]`
  of the export (tokenisation inside the graph). TF Serving adds its RPC,
  (optional) batching and its own threading on top; no model server runs
  here, so this is the in-process cost of the served graph.
- `keras_predict`: `TextVectorization` then `model.predict(ids)` on the
  in-memory `model.keras`. `predict` has a large fixed cost per call
  (compare its batch-1 latency with its time per batch of 64), so it is
  meant for big arrays, not for single requests.
- `keras_call`: `TextVectorization` then `model(ids, training=False)`,
  eager: the LSTM loops run op by op.
- `keras_predict_on_batch`: `TextVectorization` then
  `model.predict_on_batch(ids)`, Keras' compiled predict step alone; it is
  the fair in-memory counterpart of the exported graph.

Batch 1: {result["calls"]} calls after {result["warmup"]} warm-up calls.
Batch {result["batch_size"]}: {result["batches"]} batches after 3 warm-up batches.

1-minute load average {load[0]:.2f} before and {load[1]:.2f} after the run (2 cores;
the benchmark itself accounts for about 1): {verdict}.
The SavedModel was exported on a
machine without GPU, so its LSTMs are Keras' generic loop, not cuDNN
(Keras picks cuDNN when the graph is traced; see `saved_models/README.md`).
"""
    with open(os.path.join(results, "README.md"), "w", encoding="utf-8") as handle:
        handle.write(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="folder written by `train --out`")
    parser.add_argument("--saved-model", help="an existing export (default: export --model now)")
    parser.add_argument("--data-dir", help="datasets folder (default: the run's data_dir)")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args(argv)
    import tensorflow as tf

    from ganet_tf.data import load_dataset
    from ganet_tf.export import export_saved_model
    from ganet_tf.training.trained_run import load_run
    from ganet_tf.training.trained_run import read_metrics

    metrics = read_metrics(args.model)
    data_dir = args.data_dir or metrics["config"]["data_dir"]
    texts = list(load_dataset(metrics["dataset"], data_dir).test_texts)

    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as scratch:
        saved_model = args.saved_model or export_saved_model(
            args.model, "bench", base=os.path.join(scratch, "saved_models")
        )
        serve = tf.saved_model.load(saved_model).signatures["serving_default"]
        model, vectorizer, _ = load_run(args.model)

        paths = {
            "saved_model": lambda batch: serve(text=tf.constant(batch))["probabilities"].numpy(),
            "keras_predict": lambda batch: model.predict(vectorizer(tf.constant(batch)), verbose=0),
            "keras_call": lambda batch: model(vectorizer(tf.constant(batch)), training=False).numpy(),
            "keras_predict_on_batch": lambda batch: model.predict_on_batch(vectorizer(tf.constant(batch))),
        }
        reference = paths["saved_model"](texts[:64])
        for name, fn in paths.items():
            np.testing.assert_allclose(fn(texts[:64]), reference, atol=1e-5, err_msg=name)
        scores = {}
        for name, fn in paths.items():
            print(f"timing {name} ...", flush=True)
            scores[name] = {
                "latency": latency(fn, texts, args.calls, args.warmup),
                "throughput": throughput(fn, texts, args.batch_size, args.batches),
            }
            print(json.dumps(scores[name]), flush=True)
    loads.append(os.getloadavg()[0])

    result = portable(
        {
            "command": "python experiments/bench_serving.py " + shlex.join(sys.argv[1:] if argv is None else argv),
            "machine": machine(gpus=len(tf.config.list_physical_devices("GPU")), software=True),
            "load_average_1min": loads,
            "model": {
                key: metrics[key]
                for key in ("dataset", "model", "test_accuracy", "epochs_trained", "sequence_length", "vocabulary_size")
            },
            "run": args.model,
            "run_config": metrics["config"],
            "texts": len(texts),
            "calls": args.calls,
            "warmup": args.warmup,
            "batches": args.batches,
            "batch_size": args.batch_size,
            "paths": scores,
        }
    )
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "latency.json"), "w") as handle:
        json.dump(result, handle, indent=2)
    write_readme(result)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
