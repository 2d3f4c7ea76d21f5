import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from ganet_tf.data import load_dataset
from ganet_tf.data import load_vectorizer
from ganet_tf.data.vectorizer import vectorize
from ganet_tf.training import TrainConfig
from ganet_tf.training.prepare import prepare
from ganet_tf.tuning.search import main
from tests.conftest import REPO
from tests.run_scores import rescore_run

# A tiny search: 48 examples a split, 1 epoch, widths of 4, no tracing.
LIMIT = 48
TINY = [
    "--dataset",
    "trec",
    "--limit",
    str(LIMIT),
    "--epochs",
    "1",
    "--hidden",
    "4",
    "--fix",
    "aux_hidden=4",
    "--tuner",
    "random",
    "--verbose",
    "2",
    "--run-eagerly",
]
# No subprocess may outlive this many seconds.
PROCESS_TIMEOUT = 240
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}


def _search(data_dir, directory, *flags, tiny=TINY):
    completed = subprocess.run(
        [sys.executable, "-m", "ganet_tf.tuning.search", *tiny, "--data-dir", data_dir, "--directory", str(directory)]
        + list(flags),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=ENV,
        timeout=PROCESS_TIMEOUT,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout, json.loads(completed.stdout.strip().splitlines()[-1])


def _search_in_process(capsys, data_dir, directory, *flags, tiny=TINY):
    """`_search` through `main` in this process: no second TensorFlow import."""
    capsys.readouterr()
    code = main([*tiny, "--data-dir", data_dir, "--directory", str(directory), *flags])
    captured = capsys.readouterr()
    assert code == 0, captured.err[-3000:]
    return captured.out, json.loads(captured.out.strip().splitlines()[-1])


def _trial_files(project):
    return sorted(
        os.path.join(project, name, "trial.json") for name in os.listdir(project) if name.startswith("trial_")
    )


def test_tiny_search_end_to_end_and_resume(data_dir, tmp_path, capsys):
    stdout, first = _search(data_dir, tmp_path, "--max-trials", "1", "--project-name", "p", "--hand-set-first")
    assert "Search space summary" in stdout and "Results summary" in stdout
    assert "lam (Choice)" in stdout and "aux_hidden (Fixed)" in stdout
    assert (first["trials"], first["new_trials"]) == (1, 1)
    assert set(first["hyperparameters"]) == {"lr", "batch_size", "tau", "lam", "aux_hidden", "aux", "target_density"}
    # The one trial is `ganet_tf train`'s setting where the space holds it.
    assert first["hyperparameters"] == {
        "lr": 1e-3,
        "batch_size": 32,
        "tau": 0.5,
        "lam": 1e-3,
        "aux_hidden": 4,
        "aux": "bilstm",
        "target_density": 0.3,
    }
    assert first["test_accuracies"] == [first["test_accuracy"]] and first["final_seeds"] == [0]
    assert first["epochs"] == 1 and first["test_examples"] == LIMIT

    out = first["out"]
    # The scores are those of the saved model on the first LIMIT test questions.
    test = load_dataset("trec", data_dir).subset(LIMIT)
    accuracy, density = rescore_run(out, test.test_texts, test.test_labels)
    assert first["test_accuracy"] == pytest.approx(accuracy, abs=1e-6)
    assert first["test_density"] == pytest.approx(density, abs=1e-6)
    assert sorted(os.listdir(out)) == [".ganet_tf_run", "metrics.json", "model.keras", "preprocessing.json"]
    model = keras.models.load_model(os.path.join(out, "model.keras"))
    vectorizer, class_names = load_vectorizer(os.path.join(out, "preprocessing.json"))
    assert model.predict(vectorize(vectorizer, ["Who wrote Hamlet ?"]), verbose=0).shape == (1, 6)
    assert class_names[0] == "ABBR"
    # The vocabulary and length of `ganet_tf train` with the same data and flags.
    trained = prepare(TrainConfig(dataset="trec", data_dir=data_dir, limit=LIMIT))
    assert vectorizer.get_vocabulary(include_special_tokens=False) == trained.vocabulary
    assert vectorizer.get_config()["output_sequence_length"] == trained.sequence_length

    project = tmp_path / "p"
    (finished,) = _trial_files(project)
    with open(finished) as handle:
        before = handle.read()
    # The same command with a larger budget runs only the missing trial;
    # the final retraining may change its seeds. (In this process: the
    # project folder is all that a resumed search reads.)
    stdout, second = _search_in_process(
        capsys,
        data_dir,
        tmp_path,
        "--max-trials",
        "2",
        "--project-name",
        "p",
        "--hand-set-first",
        "--final-seeds",
        "3",
        "4",
    )
    assert "Reloading Tuner" in stdout
    assert (second["trials"], second["new_trials"]) == (2, 1)
    assert len(_trial_files(project)) == 2
    assert second["final_seeds"] == [3, 4] and len(second["test_accuracies"]) == 2
    assert second["test_accuracy"] == pytest.approx(sum(second["test_accuracies"]) / 2)
    with open(finished) as handle:
        assert handle.read() == before

    # Resuming with another search space is refused before any work.
    code = main(
        [
            *TINY,
            "--data-dir",
            data_dir,
            "--directory",
            str(tmp_path),
            "--project-name",
            "p",
            "--max-trials",
            "3",
            "--fix",
            "tau=2",
            "--hand-set-first",
        ]
    )
    assert code == 2
    assert len(_trial_files(project)) == 2


@pytest.mark.large
def test_tiny_ganet_transformer_search_end_to_end(data_dir, tmp_path, capsys):
    # The Transformers tune their width: a tiny one is fixed in the space
    # instead of --hidden (the later --limit wins).
    index = TINY.index("--hidden")
    tiny = TINY[:index] + TINY[index + 2 :]
    tiny += ["--model", "ganet_transformer", "--fix", "hidden=8", "--fix", "num_layers=1", "--limit", "40"]
    tiny += ["--buckets", "0"]  # fewer, equal batches (the search above keeps the buckets)
    _, result = _search_in_process(capsys, data_dir, tmp_path, "--max-trials", "2", "--hand-set-first", tiny=tiny)
    assert (result["model"], result["trials"], result["new_trials"]) == ("ganet_transformer", 2, 2)
    assert result["test_examples"] == 40 and 0 < result["test_density"] < 1
    (first,) = [t for t in _trial_files(tmp_path / "trec_ganet_transformer_random") if "trial_0" in t]
    with open(first) as handle:
        values = json.load(handle)["hyperparameters"]["values"]
    # The first trial is `ganet_tf train --model ganet_transformer`'s setting.
    assert values == {
        "lr": 1e-3,
        "batch_size": 32,
        "num_layers": 1,
        "hidden": 8,
        "dropout": 0.3,
        "aux": "bilstm",
        "aux_hidden": 4,
        "tau": 0.5,
        "lam": 1e-2,
        "target_density": 0.3,
    }
    test = load_dataset("trec", data_dir).subset(40)
    accuracy, density = rescore_run(result["out"], test.test_texts, test.test_labels)
    assert result["test_accuracy"] == pytest.approx(accuracy, abs=1e-6)
    assert result["test_density"] == pytest.approx(density, abs=1e-6)
    model = keras.models.load_model(os.path.join(result["out"], "model.keras"))
    assert model.name == "ganet_transformer" and model.get_layer("encoder_1").num_heads == 4


def test_sparsemax_is_tuned_as_a_baseline_and_reports_its_attended_density(data_dir, tmp_path, capsys):
    index = TINY.index("--fix")  # no gates: no aux_hidden
    tiny = [*TINY[:index], *TINY[index + 2 :], "--model", "sparsemax", "--limit", "40", "--buckets", "0"]
    _, result = _search_in_process(capsys, data_dir, tmp_path, "--max-trials", "1", tiny=tiny)
    assert (result["model"], result["trials"]) == ("sparsemax", 1)
    assert set(result["hyperparameters"]) == {"lr", "batch_size"} and result["test_density"] is None
    # sparsemax gives exact zeros: the share of tokens it attends, in (0, 1]
    assert 0 < result["test_attended_density"] <= 1
    model = keras.models.load_model(os.path.join(result["out"], "model.keras"))
    assert model.name == "sparsemax"


def _one_error_line(capsys):
    err = capsys.readouterr().err
    assert err.startswith("ganet_tf.tuning.search: error: ") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--tuner", "grid"], "invalid choice: 'grid'"),
        (["--dataset", "mnist"], "invalid choice: 'mnist'"),
        (["--max-trials", "many"], "invalid int value: 'many'"),
        (["--max-trials", "0"], "--max-trials must be a positive integer"),
        (["--folds", "-2"], "--folds must be a positive integer"),
        (["--range", "aux_hidden=100:20:20"], "the minimum 100 is above the maximum 20"),
        (["--range", "aux_hidden=20"], "expected MIN:MAX or MIN:MAX:STEP"),
        (["--fix", "lr=0"], "lr must be positive"),
        (["--values", "batch_size=16,-32"], "batch_size must be positive"),
        (["--penalty-values", "1e-3,oops"], "lam must be a number"),
        (["--penalty-values", "-1,0.01"], "lam must be >= 0, got '-1'"),
        (["--penalty-values", "-0.5"], "lam must be >= 0"),
        (["--fix", "depth=2"], "'depth' is not a hyperparameter of ganet"),
        (["--fix", "lr"], "expected NAME=VALUE"),
        (["--fix", "tau=1", "--values", "tau=1,2"], "give each hyperparameter one domain"),
        (["--model", "soft", "--fix", "tau=1"], "'tau' is not a hyperparameter of soft"),
        (["--model", "bilstm", "--objective", "tradeoff"], "bilstm has no gates"),
        (["--model", "transformer", "--hidden", "64"], "--hidden is a hyperparameter of --model transformer"),
        (["--model", "transformer", "--fix", "hidden=30"], "hidden must be a positive multiple of 4"),
        (["--density-weight", "-1", "--objective", "tradeoff"], "--density-weight must be >= 0"),
        (["--density-weight", "inf", "--objective", "tradeoff"], "--density-weight must be "),
        (["--dropout", "nan"], "--dropout must be "),
        (["--fix", "lr=nan"], "lr must be a number, got 'nan'"),
        (["--fix", "lr=-1e-3"], "lr must be positive"),
        (["--range", "lr=1e-2:1e-4"], "the minimum 0.01 is above the maximum 0.0001"),
        (["--range", "lr=0:1e-2"], "lr must be positive, got '0'"),
        (["--fix", "target_density=1"], "target_density must be in [0, 1)"),
        (["--range", "target_density=0.1:1.5"], "target_density must be in [0, 1)"),
        (["--data-dir", "/nonexistent/ganet"], "Data directory not found"),
    ],
)
def test_bad_input_gives_one_error_line_and_exit_code_2(tmp_path, capsys, flags, message):
    argv = ["--directory", str(tmp_path / "runs"), *flags]
    try:
        code = main(argv)
    except SystemExit as exit:  # argparse
        code = exit.code
    assert code == 2
    assert message in _one_error_line(capsys)
    assert not (tmp_path / "runs").exists()


def test_flag_defaults_are_the_search_configs_defaults():
    from ganet_tf.tuning.search import build_parser
    from ganet_tf.tuning.search import config_from
    from ganet_tf.tuning.search_config import SearchConfig

    assert config_from(build_parser().parse_args([])) == SearchConfig()


def test_tune_help_works_from_any_folder(tmp_path):
    """`python -m ganet_tf tune` needs no repository folder (it runs `ganet_tf.tuning`, installed)."""
    done = subprocess.run(
        [sys.executable, "-m", "ganet_tf", "tune", "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=ENV,
        timeout=PROCESS_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage: python -m ganet_tf tune") and "--max-trials" in done.stdout
    assert list(tmp_path.iterdir()) == []


# Every hyperparameter but lr fixed: 3 batches of 8 a trial. Adam at lr 1e36
# and above moves the weights by about lr in one step, and the loss of the
# tiny model is NaN or infinite within the epoch.
DIVERGING = [
    "--dataset",
    "trec",
    "--limit",
    "24",
    "--epochs",
    "1",
    "--hidden",
    "4",
    "--tuner",
    "random",
    "--verbose",
    "0",
    "--run-eagerly",
    *("--fix", "aux_hidden=4", "--fix", "batch_size=8", "--fix", "tau=0.5", "--fix", "lam=1e-3"),
    *("--fix", "aux=fnn", "--fix", "target_density=0.3"),
]


def _tune(capsys, data_dir, directory, *flags):
    """`python -m ganet_tf tune` in this process: `(exit code, stdout, stderr lines)`."""
    from ganet_tf.cli import main as ganet_tf_main

    capsys.readouterr()
    code = ganet_tf_main(["tune", *DIVERGING, "--data-dir", data_dir, "--directory", str(directory), *flags])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err.splitlines()


def _trial_status(project, trial_id):
    with open(os.path.join(project, f"trial_{trial_id}", "trial.json")) as handle:
        return json.load(handle)["status"]


def test_a_diverged_trial_fails_and_is_never_the_best(data_dir, tmp_path, capsys):
    code, out, err = _tune(capsys, data_dir, tmp_path, "--values", "lr=1e38,1e-3", "--max-trials", "2")
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert (result["trials"], result["failed_trials"], result["new_trials"]) == (1, 1, 2)
    assert result["hyperparameters"]["lr"] == 1e-3
    (warning,) = err
    assert warning.startswith("ganet_tf: warning: trial ") and "training diverged in epoch 1 (loss " in warning
    failed = warning.split()[3]
    project = str(tmp_path / "trec_ganet_random")
    assert _trial_status(project, failed) == "FAILED" and failed != result["best_trial"]
    assert _trial_status(project, result["best_trial"]) == "COMPLETED"
    model = keras.models.load_model(os.path.join(result["out"], "model.keras"))
    assert all(np.all(np.isfinite(keras.ops.convert_to_numpy(weight))) for weight in model.weights)


@pytest.mark.parametrize(
    "flags, message",
    [
        # KerasTuner's oracle stops a search at 3 failed trials in a row.
        (["--values", "lr=1e36,1e37,1e38", "--max-trials", "4"], "KerasTuner stopped the search of "),
        (["--fix", "lr=1e38", "--max-trials", "1"], "completed (1 failed)"),
    ],
)
def test_a_search_without_a_completed_trial_writes_no_model(data_dir, tmp_path, capsys, flags, message):
    out = tmp_path / "best"
    code, stdout, err = _tune(capsys, data_dir, tmp_path / "projects", *flags, "--out", str(out))
    assert code == 2 and stdout == ""
    *warnings, error = err
    assert all(line.startswith("ganet_tf: warning: trial ") for line in warnings) and warnings
    assert error.startswith("ganet_tf: error: ") and message in error
    assert "the last failure: training diverged in epoch 1" in error and "No model was saved" in error
    assert not out.exists()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--fix", "lr=0"], "lr must be positive"),
        (["--range", "tau=2:0.5"], "the minimum 2.0 is above the maximum 0.5"),
        (["--fix", "target_density=-0.1"], "target_density must be in [0, 1)"),
    ],
)
def test_tune_refuses_bad_values_before_the_search(tmp_path, capsys, flags, message):
    from ganet_tf.cli import main as ganet_tf_main

    capsys.readouterr()
    assert ganet_tf_main(["tune", "--directory", str(tmp_path / "runs"), *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ganet_tf: error: ") and err.count("\n") == 1 and message in err
    assert not (tmp_path / "runs").exists()  # no tuner was made
