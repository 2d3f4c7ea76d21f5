"""GA-Net trained under JAX, TensorFlow unimportable, on the TREC ids `python -m ganet_tf prepare` writes, beside
the TensorFlow main job. Writes `results/backends/jax_trec_seed_S.json` (resumable) and fills `README.md`.

    python -m experiments.jax_trec --seeds 0 1 2
"""

import argparse
import json
import os
import sys

from experiments import runner
from experiments import tables

RESULTS = os.path.join(runner.REPO, "results", "backends")
RUNS = os.path.join("runs", "backends")


def child_main(spec_path):
    """In the JAX subprocess: trains and evaluates one seed; prints its JSON."""
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
    """Prepares the packaged TREC for `seed` under TensorFlow, as the main job reads it, trains it under JAX."""
    from experiments.jax_training import train_spec

    prepared = os.path.join(RUNS, f"trec_seed_{seed}.npz")
    log = os.path.join(runner.REPO, RUNS, f"jax_trec_seed_{seed}")
    prepare = ["prepare", "--dataset", "trec", "--seed", str(seed), "--embedding-dtype", "float32", "--out", prepared]
    shown, unset = "python -m ganet_tf " + " ".join(prepare), ("GANET_DATA_DIR",)
    summary = runner.run_command([sys.executable, "-m", "ganet_tf", *prepare], shown, log + ".log", unset=unset)
    spec = train_spec(["--dataset", "trec", "--seed", str(seed)], summary["examples"]["train"], summary["dataset"])
    runner.write_json(log + ".spec.json", {**spec, "prepared": prepared})
    child = [sys.executable, "-m", "experiments.jax_trec", "--child", log + ".spec.json"]
    jax = {"KERAS_BACKEND": "jax", "GANET_BLOCK_TENSORFLOW": "1"}
    result = runner.run_command(child, f"JAX: {shown}", log + ".log", unset=unset, environment=jax)
    made = {"command": f"python -m experiments.jax_trec --seeds {seed}", "prepare_command": shown}
    made.update(prepared_bytes=summary["bytes"], builder=spec["builder"], fit=spec["fit"], **runner.provenance())
    return {"seed": seed, **result, **made}


def rebuild(results=RESULTS):
    """Fills the blocks of `README.md` in the folder `results`: its JAX seeds beside the main job's."""
    from experiments.main_job import cells
    from experiments.main_job import rule_text
    from experiments.main_job import seed_files

    runs = seed_files(results, "jax_trec_seed_")
    main = [runner.read_json(os.path.join(results, "..", "main_job", f"seed_{run['seed']}.json")) for run in runs]
    keys = ("seed", "test_accuracy", "test_attended_density", "epochs_trained", "train_seconds")
    columns = list(zip(keys, ("", ".4f", ".3f", "", ".0f"), strict=True))
    pairs = zip(runs, main, strict=True)
    rows = [row for jax, tf in pairs for row in (["JAX", *cells(jax, columns)], ["TF", *cells(tf, columns)])]
    (jax_accuracy, tf_accuracy), (jax_density, tf_density) = [
        [tables.mean_std([run[key] for run in group]) for group in (runs, main)] for key in keys[1:3]
    ]
    gap = 100 * (sum(r["test_accuracy"] for r in runs) / len(runs) - sum(r["test_accuracy"] for r in main) / len(main))
    machine = [
        f"Machine: {runs[0]['machine']} (JAX devices: {', '.join(runs[0]['devices'])}); seconds are",
        "wall-clock under whatever load the machine had (the TF seeds ran at another time).",
        f"Test gates: JAX {rule_text(runs[0]['test_gates'])}, TF {rule_text(main[0]['test_gates'])}.",
    ]
    headers = "backend | seed | test accuracy | attended density | epochs | train seconds"
    table = tables.grid(headers, rows) + [
        "",
        f"Mean ± sample std over seeds {', '.join(str(run['seed']) for run in runs)}: test accuracy JAX "
        f"**{jax_accuracy}**, TF **{tf_accuracy}**; attended density JAX {jax_density}, TF {tf_density}. Difference "
        f"of the mean test accuracies (JAX - TF): {gap:+.2f} points.",
    ]
    tables.fill(os.path.join(results, "README.md"), {"machine": machine, "table": table})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)  # the JAX process: one seed's spec
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    if args.child:
        return child_main(args.child)
    runner.seed_results(args.seeds, lambda seed: os.path.join(RESULTS, f"jax_trec_seed_{seed}.json"), run_seed)
    rebuild()


if __name__ == "__main__":
    main()
