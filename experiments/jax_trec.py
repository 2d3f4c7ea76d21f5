"""GA-Net trained under JAX, without TensorFlow, on the prepared TREC ids, beside
the TensorFlow main job (`results/main_job/`).

For each seed: `python -m ganet_tf prepare --dataset trec --seed S` writes the
ids, vocabulary and embeddings of `train --dataset trec --seed S` (float32
embeddings, as `train` uses) to `runs/backends/trec_seed_S.npz`; this script
reads the builder arguments and fit settings of `train --dataset trec --seed S`
from `ganet_tf.training.train` (`TrainConfig`, `model_arguments`, through
`experiments/jax_training.py`), then
trains in a subprocess with `KERAS_BACKEND=jax` and TensorFlow unimportable
(`tests/tensorflow_blocker.py`): the same `build_model`, Adam and
cross-entropy, `model.fit` with `train`'s early stopping (`BestEpochStopping`
on validation loss, best weights restored), and `train`'s test evaluation
(`evaluate_model`: the gates' density read in NumPy from the model's test
gates, `nucleus` at the target density). Writes
`results/backends/jax_trec_seed_S.json` (resumable: a seed with its JSON is
skipped) and `results/backends/README.md`.

    python experiments/jax_trec.py --seeds 0 1 2
"""

import argparse
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(REPO, "results", "backends")
RUNS = os.path.join(REPO, "runs", "backends")
MAIN_JOB = os.path.join(REPO, "results", "main_job")
SHOWN = "python experiments/jax_trec.py --seeds {seeds}"


def child_main(spec_path):
    """In the JAX subprocess: trains and evaluates one seed; prints its JSON."""
    sys.path.append(REPO)  # tests/ (after the ganet_tf on PYTHONPATH)
    from tests import tensorflow_blocker

    tensorflow_blocker.install()
    import jax
    from jax_training import fit_and_evaluate

    from ganet_tf.data.prepared_dataset import load_prepared

    with open(spec_path) as handle:
        spec = json.load(handle)
    result = fit_and_evaluate(spec, load_prepared(spec["prepared"]))
    assert not [name for name in sys.modules if name.split(".")[0] in tensorflow_blocker.BLOCKED]
    print(json.dumps({**result, "devices": [str(device) for device in jax.devices()]}), flush=True)


def _run_logged(command, environment, log):
    """Runs `command`, its output appended to `log`; its last stdout line as JSON."""
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {' '.join(command)}\n")
        handle.flush()
        done = subprocess.run(command, env=environment, cwd=REPO, stdout=subprocess.PIPE, stderr=handle, text=True)
        handle.write(done.stdout)
    if done.returncode != 0:
        with open(log, encoding="utf-8") as handle:
            print(handle.read()[-3000:], file=sys.stderr)
        raise SystemExit(f"failed: {' '.join(command)} (log: {log})")
    return json.loads([line for line in done.stdout.splitlines() if line.strip()][-1])


def run_seed(seed):
    """Prepares TREC for `seed` under TensorFlow, trains it under JAX; its summary."""
    from jax_training import train_spec

    from runner import machine

    os.makedirs(RUNS, exist_ok=True)
    prepared = os.path.join(RUNS, f"trec_seed_{seed}.npz")
    log = os.path.join(RUNS, f"jax_trec_seed_{seed}.log")
    prepare = ["-m", "ganet_tf", "prepare", "--dataset", "trec", "--seed", str(seed), "--embedding-dtype", "float32"]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))}
    environment.pop("GANET_DATA_DIR", None)  # the packaged TREC, as the main job
    summary = _run_logged([sys.executable, *prepare, "--out", prepared], environment, log)
    spec_path = os.path.join(RUNS, f"jax_trec_seed_{seed}.spec.json")
    flags = ["--dataset", "trec", "--seed", str(seed)]
    spec = {**train_spec(flags, summary["examples"]["train"], summary["dataset"]), "prepared": prepared}
    with open(spec_path, "w") as handle:
        json.dump(spec, handle, indent=1)
    jax_environment = {**environment, "KERAS_BACKEND": "jax", "GANET_BLOCK_TENSORFLOW": "1"}
    result = _run_logged([sys.executable, __file__, "--child", spec_path], jax_environment, log)
    return {
        "seed": seed,
        **result,
        "command": f"python experiments/jax_trec.py --seeds {seed}",
        "prepare_command": "python -m ganet_tf " + " ".join(prepare[2:]) + f" --out runs/backends/trec_seed_{seed}.npz",
        "prepared_bytes": summary["bytes"],
        "builder": spec["builder"],
        "fit": spec["fit"],
        "machine": machine(),
    }


def _row(label, run):
    return (
        f"| {label} | {run['seed']} | {run['test_accuracy']:.4f} | {run['test_attended_density']:.3f} | "
        f"{run['epochs_trained']} | {run['train_seconds']:.0f} |"
    )


def _mean(runs):
    return sum(run["test_accuracy"] for run in runs) / len(runs)


def write_readme(runs, seeds, results=RESULTS, main_job=MAIN_JOB):
    """`results/backends/README.md`: the JAX seeds beside the main job's files."""
    from experiments.main_job import rule_text
    from experiments.runner import mean_std
    from experiments.runner import read_json
    from experiments.runner import write_text

    main_runs = [read_json(os.path.join(main_job, f"seed_{run['seed']}.json")) for run in runs]
    rows = [
        row
        for jax_run, tf_run in zip(runs, main_runs, strict=True)
        for row in (_row("JAX", jax_run), _row("TF", tf_run))
    ]
    lines = [
        "# GA-Net under JAX (no TensorFlow) beside the TensorFlow main job, TREC",
        "",
        f"`{SHOWN.format(seeds=' '.join(map(str, seeds)))}` (`experiments/jax_trec.py`): per seed,",
        "`python -m ganet_tf prepare --dataset trec --seed S --embedding-dtype float32` writes the ids of",
        "`train --dataset trec --seed S` to a `.npz`; a subprocess with `KERAS_BACKEND=jax` and TensorFlow",
        "unimportable reads it with NumPy (`ganet_tf.data.prepared_dataset.load_prepared`) and trains",
        "the model `train` builds (builder arguments and fit settings read from `ganet_tf.training.train`),",
        "with `model.fit`, `train`'s early stopping on validation loss (best weights restored) and",
        "`train`'s test evaluation. TF rows: `results/main_job/seed_S.json` (`python -m ganet_tf train",
        "--dataset trec --out runs/trec --seed S`). What differs: the JAX run feeds dense arrays padded",
        f"to {runs[0].get('sequence_length', 'the sequence length')} tokens, shuffled by Keras, where `train`",
        "batches by length buckets through `tf.data`; gate noise and dropout come from another generator.",
        f"Machine: {runs[0]['machine']} (JAX devices: {', '.join(runs[0]['devices'])}); seconds are",
        "wall-clock under whatever load the machine had (the TF seeds ran at another time).",
        f"Test gates: JAX {rule_text(runs[0]['test_gates'])}, TF {rule_text(main_runs[0].get('test_gates'))}.",
        "",
        "| backend | seed | test accuracy | attended density | epochs | train seconds |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"Mean ± sample std over seeds {', '.join(str(run['seed']) for run in runs)}: test accuracy JAX "
        f"**{mean_std([run['test_accuracy'] for run in runs])}**, TF "
        f"**{mean_std([run['test_accuracy'] for run in main_runs])}**; attended density JAX "
        f"{mean_std([run['test_attended_density'] for run in runs])}, TF "
        f"{mean_std([run['test_attended_density'] for run in main_runs])}. Difference of the mean test accuracies "
        f"(JAX - TF): {100 * (_mean(runs) - _mean(main_runs)):+.2f} points.",
    ]
    write_text(os.path.join(results, "README.md"), lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)  # the JAX process: one seed's spec
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    if args.child:
        return child_main(args.child)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from runner import seed_results

    runs = seed_results(args.seeds, lambda seed: os.path.join(RESULTS, f"jax_trec_seed_{seed}.json"), run_seed)
    write_readme(runs, args.seeds)
    print(f"JAX test accuracy over seeds {args.seeds}: {[run['test_accuracy'] for run in runs]}")


if __name__ == "__main__":
    main()
