"""CPU latency (batch 1) and throughput (batch 64) of an exported model, from raw strings to class probabilities.

    python -m experiments.bench_serving --model runs/core/trec_ganet_seed0 --data-dir ../shared/data

Paths: the export's `serving_default` against the run's `TextVectorization` then Keras' `predict`, call and
`predict_on_batch`. Writes `results/serving/latency.json` and the tables of its README.
"""

import argparse
import itertools
import math
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np

from experiments import bench
from experiments import provenance
from experiments import runner
from experiments import tables

RESULTS = os.path.join(runner.REPO, "results", "serving")
BUSY = (
    "numbers from a machine busy with other work, pessimistic and noisy; rerun on an idle machine before quoting them"
)
TIMING = {"calls": 200, "warmup": 20, "batches": 30, "batch_size": 64}
STATISTICS = {"p50": lambda ms: np.percentile(ms, 50), "p99": lambda ms: np.percentile(ms, 99), "mean": np.mean}


def latency(fn, texts):
    """p50, p99 and mean milliseconds of `fn` on one text at a time (`TIMING`'s calls after its warm-up calls)."""
    singles = itertools.cycle([text] for text in texts)
    ms = 1000 * np.array(bench.alternating([lambda: fn(next(singles))], TIMING["warmup"], TIMING["calls"])[0])
    return {"calls": TIMING["calls"], **{f"{name}_ms": round(float(f(ms)), 3) for name, f in STATISTICS.items()}}


def throughput(fn, texts, warmup=3):
    """Texts per second of `fn` on `TIMING`'s batches of `texts` (full batches, in turn), after `warmup`."""
    batch_size, batches = TIMING["batch_size"], TIMING["batches"]
    texts = texts * math.ceil(batch_size / len(texts))
    starts = itertools.cycle(range(0, len(texts) - batch_size + 1, batch_size))
    chunks = (texts[start : start + batch_size] for start in starts)
    seconds = bench.alternating([lambda: fn(next(chunks))], warmup, batches)[0]
    texts_per_second = round(batches * batch_size / sum(seconds), 1)
    return {"batch_size": batch_size, "batches": batches, "texts_per_second": texts_per_second}


def rebuild(out):
    """The tables of `out/README.md` (its prose is written by hand) from its `latency.json`."""
    result = runner.read_json(os.path.join(out, "latency.json"))
    model, load = result["model"], result["load_average_1min"]
    verdict = "nothing else was running" if load[0] <= 1.0 else BUSY
    rows = [
        [f"`{name}`", *(f"{path['latency'][f'{key}_ms']:.2f}" for key in STATISTICS)]
        + [f"{path['throughput']['texts_per_second']:.0f}"]
        for name, path in result["paths"].items()
    ]
    headers = [*(f"batch 1 {key} (ms)" for key in STATISTICS), f"batch {result['batch_size']} (texts/s)"]
    blocks = {
        "command": ["```bash", result["command"], "```"],
        "setup": [
            f"- machine: {result['machine']}",
            f"- model: `{model['model']}` on `{model['dataset']}`, the run in",
            f"  `{result['run']}`: {model['epochs_trained']} epochs, seed",
            f"  {result['run_config']['seed']} (its whole config is in `latency.json`), test accuracy",
            f"  {model['test_accuracy']:.3f}, sequence length {model['sequence_length']},",
            f"  vocabulary {model['vocabulary_size']}",
            f"- inputs: the {result['texts']} test texts of the dataset as raw strings;",
            "  every path goes from strings to class probabilities",
            "",
            *tables.grid(["path", *headers], rows),
        ],
        "timing": [
            f"Batch 1: {result['calls']} calls after {result['warmup']} warm-up calls.",
            f"Batch {result['batch_size']}: {result['batches']} batches after 3 warm-up batches.",
            "",
            f"1-minute load average {load[0]:.2f} before and {load[1]:.2f} after the run (2 cores;",
            f"the benchmark itself accounts for about 1): {verdict}.",
        ],
    }
    tables.fill_copy(os.path.join(out, "README.md"), os.path.join(RESULTS, "README.md"), blocks)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="folder written by `train --out`")
    parser.add_argument("--data-dir", help="datasets folder (default: the run's data_dir)")
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args()
    import tensorflow as tf

    from ganet_tf.data import load_dataset
    from ganet_tf.export import export_saved_model
    from ganet_tf.policy.trained_run import load_run
    from ganet_tf.policy.trained_run import read_metrics

    metrics = read_metrics(args.model)
    texts = list(load_dataset(metrics["dataset"], args.data_dir or metrics["config"]["data_dir"]).test_texts)
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as scratch:
        exported = export_saved_model(args.model, "bench", base=os.path.join(scratch, "saved_models"))
        serve = tf.saved_model.load(exported).signatures["serving_default"]
        model, vectorizer, _ = load_run(args.model)
        paths = {
            "saved_model": lambda batch: serve(text=tf.constant(batch))["probabilities"].numpy(),
            "keras_predict": lambda batch: model.predict(vectorizer(tf.constant(batch)), verbose=0),
            "keras_call": lambda batch: model(vectorizer(tf.constant(batch)), training=False).numpy(),
            "keras_predict_on_batch": lambda batch: model.predict_on_batch(vectorizer(tf.constant(batch))),
        }
        for name, fn in paths.items():
            np.testing.assert_allclose(fn(texts[:64]), paths["saved_model"](texts[:64]), atol=1e-5, err_msg=name)
        latencies = {name: latency(fn, texts) for name, fn in paths.items()}  # every path's, then throughputs
        scores = {name: {"latency": latencies[name], "throughput": throughput(fn, texts)} for name, fn in paths.items()}
    loads.append(os.getloadavg()[0])
    keys = ("dataset", "model", "test_accuracy", "epochs_trained", "sequence_length", "vocabulary_size")
    machine = provenance.machine(gpus=len(tf.config.list_physical_devices("GPU")), software=True)
    result = {"command": provenance.command("bench_serving.py"), "machine": machine, "load_average_1min": loads}
    result.update(model={key: metrics[key] for key in keys}, run=args.model, run_config=metrics["config"])
    result.update(texts=len(texts), **TIMING, paths=scores)
    runner.write_json(os.path.join(args.out, "latency.json"), result)
    rebuild(args.out)


if __name__ == "__main__":
    main()
