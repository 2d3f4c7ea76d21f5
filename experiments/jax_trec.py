"""GA-Net trained under JAX, without TensorFlow, on the prepared TREC ids, beside
the TensorFlow main job (`results/main_job/`).

For each seed: `python -m ganet_tf prepare --dataset trec --seed S` writes the
ids, vocabulary and embeddings of `train --dataset trec --seed S` (float32
embeddings, as `train` uses) to `runs/backends/trec_seed_S.npz`; this script
reads the builder arguments and fit settings of `train --dataset trec --seed S`
from `ganet_tf.training.train` (`TrainConfig`, `model_arguments`), then
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
    import keras
    import numpy as np

    from ganet_tf.data.prepared_dataset import load_prepared
    from ganet_tf.models import build_model
    from ganet_tf.models.gate_layers import gate_rule
    from ganet_tf.training.best_epoch_stopping import BestEpochStopping
    from ganet_tf.training.epoch_timer import EpochTimer
    from ganet_tf.training.evaluate import evaluate_model
    from ganet_tf.training.non_finite_guard import NonFiniteGuard

    with open(spec_path) as handle:
        spec = json.load(handle)
    fit = spec["fit"]
    keras.utils.set_random_seed(spec["seed"])
    data = load_prepared(spec["prepared"])
    embeddings = data.embeddings.astype("float32")
    model = build_model(spec["model"], data.num_classes, embeddings=embeddings, **spec["builder"])
    model.compile(
        optimizer=keras.optimizers.Adam(fit["lr"]),
        loss=keras.losses.SparseCategoricalCrossentropy(),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
    )
    timer = EpochTimer()
    stopper = BestEpochStopping(fit["monitor"], fit["mode"], fit["patience"])
    started = time.perf_counter()
    history = model.fit(
        data.ids["train"],
        data.labels["train"],
        batch_size=fit["batch_size"],
        epochs=fit["epochs"],
        validation_data=(data.ids["validation"], data.labels["validation"]),
        validation_batch_size=fit["validation_batch_size"],
        callbacks=[NonFiniteGuard(), stopper, timer],
        verbose=2,
    ).history
    train_seconds = time.perf_counter() - started
    test = evaluate_model(model, data.ids["test"], data.labels["test"], data.class_names)
    assert not [name for name in sys.modules if name.split(".")[0] in tensorflow_blocker.BLOCKED]
    result = {
        "test_accuracy": test["accuracy"],
        "test_density": test["density"],
        "test_attended_density": test["attended_density"],
        "test_all_closed_rate": test["all_closed_rate"],
        "test_gates": gate_rule(model),
        "epochs_trained": len(history["val_loss"]),
        "best_epoch": int(np.argmin(history["val_loss"])) + 1,
        "train_seconds": round(train_seconds, 2),
        "epoch_seconds": [round(s, 2) for s in timer.epoch_seconds],
        "keras_backend": keras.backend.backend(),
        "devices": [str(device) for device in jax.devices()],
        "sequence_length": data.sequence_length,
    }
    print(json.dumps(result), flush=True)


def run_spec(seed):
    """The child's spec for `seed`: `train --dataset trec --seed S`'s builder
    arguments and fit settings, read from `ganet_tf.training.train`."""
    from ganet_tf.training import TrainConfig
    from ganet_tf.training.prepare import load_splits
    from ganet_tf.training.train import MONITORS
    from ganet_tf.training.train import model_arguments
    from runner import train_config

    config = TrainConfig(**train_config(["--dataset", "trec", "--seed", str(seed)]))
    builder = model_arguments(config, load_splits(config), embeddings=None)
    builder.pop("embeddings")
    fit = {name: getattr(config, name) for name in ("lr", "batch_size", "epochs", "patience", "monitor")}
    # `train`'s validation batches (`ganet_tf.training.distribution.training_datasets`).
    fit.update(mode=MONITORS[config.monitor], validation_batch_size=128)
    return {"seed": seed, "model": config.model, "builder": builder, "fit": fit}


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
    from runner import machine

    os.makedirs(RUNS, exist_ok=True)
    prepared = os.path.join(RUNS, f"trec_seed_{seed}.npz")
    log = os.path.join(RUNS, f"jax_trec_seed_{seed}.log")
    prepare = ["-m", "ganet_tf", "prepare", "--dataset", "trec", "--seed", str(seed), "--embedding-dtype", "float32"]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))}
    environment.pop("GANET_DATA_DIR", None)  # the packaged TREC, as the main job
    summary = _run_logged([sys.executable, *prepare, "--out", prepared], environment, log)
    spec_path = os.path.join(RUNS, f"jax_trec_seed_{seed}.spec.json")
    spec = {**run_spec(seed), "prepared": prepared}
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


def write_readme(runs, seeds):
    """`results/backends/README.md`: the JAX seeds beside the main job's files."""
    from runner import _read_json
    from runner import mean_std

    main_runs = [_read_json(os.path.join(MAIN_JOB, f"seed_{run['seed']}.json")) for run in runs]
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
        "wall-clock under whatever load the machine had (the TF seeds ran on another day).",
        f"Test gates: {runs[0]['test_gates']}.",
        "",
        "| backend | seed | test accuracy | attended density | epochs | train seconds |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"Mean ± sample std over seeds {', '.join(str(run['seed']) for run in runs)}: test accuracy JAX "
        f"**{mean_std([run['test_accuracy'] for run in runs])}**, TF "
        f"**{mean_std([run['test_accuracy'] for run in main_runs])}**; attended density JAX "
        f"{mean_std([run['test_attended_density'] for run in runs])}, TF "
        f"{mean_std([run['test_attended_density'] for run in main_runs])}.",
    ]
    with open(os.path.join(RESULTS, "README.md"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child_main(args.child)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from runner import _read_json
    from runner import _write_json

    os.makedirs(RESULTS, exist_ok=True)
    runs = []
    for seed in args.seeds:
        path = os.path.join(RESULTS, f"jax_trec_seed_{seed}.json")
        if not os.path.exists(path):
            _write_json(path, run_seed(seed))
        runs.append(_read_json(path))
    write_readme(runs, args.seeds)
    print(f"JAX test accuracy over seeds {args.seeds}: {[run['test_accuracy'] for run in runs]}")


if __name__ == "__main__":
    main()
