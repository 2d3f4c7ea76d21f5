"""GA-Net trained under JAX, without TensorFlow, on the prepared TREC ids,
beside the TensorFlow main job (`results/main_job/`).

Per seed: `python -m ganet_tf prepare --dataset trec --seed S` writes the ids
of `train --dataset trec --seed S` to `runs/backends/trec_seed_S.npz`; a
subprocess with `KERAS_BACKEND=jax` and TensorFlow unimportable
(`tests/tensorflow_blocker.py`) trains and evaluates the model as `train` does
(`experiments/jax_training.py`). Writes `results/backends/jax_trec_seed_S.json`
(resumable: a seed with its JSON is skipped) and `README.md`.

    python experiments/jax_trec.py --seeds 0 1 2
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from experiments import runner
from experiments.tables import mean_std

RESULTS = os.path.join(runner.REPO, "results", "backends")
RUNS = os.path.join("runs", "backends")


def child_main(spec_path):
    """In the JAX subprocess: trains and evaluates one seed; prints its JSON."""
    sys.path.append(runner.REPO)  # tests/ (after the ganet_tf snapshot on PYTHONPATH)
    from tests import tensorflow_blocker

    tensorflow_blocker.install()
    import jax

    from experiments.jax_training import fit_and_evaluate
    from ganet_tf.data.prepared_dataset import load_prepared

    spec = runner.read_json(spec_path)
    result = fit_and_evaluate(spec, load_prepared(spec["prepared"]))
    assert not [name for name in sys.modules if name.split(".")[0] in tensorflow_blocker.BLOCKED]
    print(json.dumps({**result, "devices": [str(device) for device in jax.devices()]}), flush=True)


def run_seed(seed):
    """Prepares TREC for `seed` under TensorFlow, trains it under JAX; its summary."""
    from experiments.jax_training import train_spec

    prepared = os.path.join(RUNS, f"trec_seed_{seed}.npz")
    log = os.path.join(runner.REPO, RUNS, f"jax_trec_seed_{seed}.log")
    prepare = ["prepare", "--dataset", "trec", "--seed", str(seed), "--embedding-dtype", "float32", "--out", prepared]
    shown = "python -m ganet_tf " + " ".join(prepare)
    # The packaged TREC, as the main job reads it.
    summary = runner.run_command([sys.executable, "-m", "ganet_tf", *prepare], shown, log, unset=("GANET_DATA_DIR",))
    spec = {**train_spec(["--dataset", "trec", "--seed", str(seed)], summary["examples"]["train"], summary["dataset"])}
    spec_path = os.path.join(runner.REPO, RUNS, f"jax_trec_seed_{seed}.spec.json")
    runner.write_json(spec_path, {**spec, "prepared": prepared})
    child = [sys.executable, os.path.abspath(__file__), "--child", spec_path]
    jax = {"KERAS_BACKEND": "jax", "GANET_BLOCK_TENSORFLOW": "1"}
    result = runner.run_command(child, f"JAX: {shown}", log, unset=("GANET_DATA_DIR",), environment=jax)
    return {
        "seed": seed,
        **result,
        "command": f"python experiments/jax_trec.py --seeds {seed}",
        "prepare_command": shown,
        "prepared_bytes": summary["bytes"],
        "builder": spec["builder"],
        "fit": spec["fit"],
        **runner.provenance(),
    }


def _row(label, run):
    return (
        f"| {label} | {run['seed']} | {run['test_accuracy']:.4f} | {run['test_attended_density']:.3f} | "
        f"{run['epochs_trained']} | {run['train_seconds']:.0f} |"
    )


def write_readme(results=RESULTS):
    """`README.md` of the folder `results`: its JAX seeds beside the main job's (`../main_job/`)."""
    from experiments.main_job import rule_text
    from experiments.main_job import seed_files

    runs = seed_files(results, "jax_trec_seed_")
    main = [runner.read_json(os.path.join(results, "..", "main_job", f"seed_{run['seed']}.json")) for run in runs]
    seeds = [run["seed"] for run in runs]

    def means(key):
        return mean_std([run[key] for run in runs]), mean_std([run[key] for run in main])

    (jax_accuracy, tf_accuracy), (jax_density, tf_density) = means("test_accuracy"), means("test_attended_density")
    gap = 100 * (sum(r["test_accuracy"] for r in runs) / len(runs) - sum(r["test_accuracy"] for r in main) / len(main))
    lines = [
        "# GA-Net under JAX (no TensorFlow) beside the TensorFlow main job, TREC",
        "",
        f"`python experiments/jax_trec.py --seeds {' '.join(map(str, seeds))}` (`experiments/jax_trec.py`): per seed,",
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
        f"Test gates: JAX {rule_text(runs[0]['test_gates'])}, TF {rule_text(main[0].get('test_gates'))}.",
        "",
        "| backend | seed | test accuracy | attended density | epochs | train seconds |",
        "|---|---|---|---|---|---|",
        *(row for pair in zip(runs, main, strict=True) for row in (_row("JAX", pair[0]), _row("TF", pair[1]))),
        "",
        f"Mean ± sample std over seeds {', '.join(map(str, seeds))}: test accuracy JAX **{jax_accuracy}**, TF "
        f"**{tf_accuracy}**; attended density JAX {jax_density}, TF {tf_density}. Difference of the mean test "
        f"accuracies (JAX - TF): {gap:+.2f} points.",
    ]
    runner.write_text(os.path.join(results, "README.md"), lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)  # the JAX process: one seed's spec
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    if args.child:
        return child_main(args.child)
    runner.seed_results(args.seeds, lambda seed: os.path.join(RESULTS, f"jax_trec_seed_{seed}.json"), run_seed)
    write_readme()


if __name__ == "__main__":
    main()
