"""The study runner copies a seq2seq run of another study only where that
run's model folder records the very config the wanted run would train with."""

import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from experiments import runner  # noqa: E402
from experiments.studies import STUDIES  # noqa: E402

FLAGS = ["--task", "copy", "--attention", "gated", "--seed", "0", "--epochs", "2", "--target-density", "0.6"]


def _finished(tmp_path, flags, name="other_seed0"):
    """A summary in `tmp_path/runs` whose command's `--out` folder records the config of `seq2seq FLAGS`."""
    folder = tmp_path / "models" / name
    folder.mkdir(parents=True)
    config = {**runner.seq2seq_config(flags), "out": str(folder), "backup_dir": None, "data_dir": None, "verbose": 2}
    (folder / "metrics.json").write_text(json.dumps({"config": config}))
    runs = tmp_path / "runs"
    runs.mkdir(exist_ok=True)
    command = f"python -m ganet_tf seq2seq {' '.join(flags)} --verbose 2 --out {folder}"
    (runs / f"{name}.json").write_text(json.dumps({"name": name, "command": command, "test_bleu": 1.0}))
    return str(runs), str(folder)


def test_a_seq2seq_run_of_the_same_config_is_found(tmp_path):
    runs, folder = _finished(tmp_path, FLAGS)
    assert runner.same_run(FLAGS, [runs], "seq2seq") == os.path.join(runs, "other_seed0.json")
    # The resolved defaults count: --inference-density 0.6 is what --target-density 0.6 implies.
    implied = [*FLAGS, "--inference-mode", "top_k", "--inference-density", "0.6"]
    assert runner.same_run(implied, [runs], "seq2seq") == os.path.join(runs, "other_seed0.json")
    assert runner.model_folder(runner.load_runs(runs)[0]) == folder


def test_a_model_folder_of_the_older_option_names_is_the_same_run(tmp_path):
    runs, folder = _finished(tmp_path, FLAGS)
    path = os.path.join(folder, "metrics.json")
    with open(path) as handle:
        config = json.load(handle)["config"]
    older = {
        "auxiliary": "aux",
        "auxiliary_hidden_dim": "aux_hidden",
        "penalty": "gate_penalty",
        "initial_gate_logit": "gate_bias",
    }
    with open(path, "w") as handle:
        json.dump({"config": {older.get(name, name): value for name, value in config.items()}}, handle)
    assert runner.same_run(FLAGS, [runs], "seq2seq") == os.path.join(runs, "other_seed0.json")
    assert runner.same_run([*FLAGS, "--auxiliary", "lstm"], [runs], "seq2seq") is None


def test_another_seed_or_flag_is_not_the_same_run(tmp_path):
    runs, _ = _finished(tmp_path, FLAGS)
    assert runner.same_run([*FLAGS[:5], "1", *FLAGS[6:]], [runs], "seq2seq") is None
    assert runner.same_run([*FLAGS, "--gate-distribution", "relaxed_bernoulli"], [runs], "seq2seq") is None


def test_a_run_without_its_model_folder_is_not_copied(tmp_path):
    runs, folder = _finished(tmp_path, FLAGS)
    os.remove(os.path.join(folder, "metrics.json"))
    assert runner.same_run(FLAGS, [runs], "seq2seq") is None


def test_the_subword_gated_row_resolves_as_the_recipe_it_copies():
    """gated-hc's seed 0 in the translation table is seq2seq_recipes' chosen run: both declare one config."""
    table, recipes = STUDIES["seq2seq"], STUDIES["seq2seq_recipes"]
    point = next(table.points(["multi30k-subwords_gated-hc_seed0"]))
    chosen = next(recipes.points(["multi30k-subwords_gated-td0.6-hc_seed0"]))
    assert table.reuse(point) == ("seq2seq_recipes",)
    wanted = runner.seq2seq_config(table.run_flags(point))
    assert wanted == runner.seq2seq_config(recipes.run_flags(chosen))
    assert wanted["gate_distribution"] == "hard_concrete" and wanted["inference_density"] == 0.6


def test_a_run_imports_ganet_tf_and_its_tuning_from_the_copy_taken_at_its_start():
    # The editable install maps `ganet_tf` to the live tree: a run started before a change must not read it.
    code = "import json, ganet_tf, ganet_tf.tuning; print(json.dumps([ganet_tf.__file__, ganet_tf.tuning.__file__]))"
    files = runner.run_command([sys.executable, "-P", "-c", code], "imports")
    copy = os.path.dirname(os.path.dirname(files[0]))
    assert os.path.basename(copy).startswith("ganet_tf-code-")
    assert files[1] == os.path.join(copy, "ganet_tf", "tuning", "__init__.py")
