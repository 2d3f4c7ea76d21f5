import csv
import dataclasses
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from ganet_tf.cli import main
from ganet_tf.data import load_dataset
from ganet_tf.data import load_vectorizer
from ganet_tf.data.vectorizer import vectorize
from tests.eager import functions_run_eagerly
from tests.run_scores import rescore_run

REQUIRED = {
    "dataset",
    "model",
    "test_accuracy",
    "test_density",
    "attention_flops_soft",
    "attention_flops_gated",
    "epochs_trained",
    "train_seconds",
}


def test_train_smoke_run_on_a_trec_subset(data_dir, tmp_path):
    out = tmp_path / "run"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "ganet_tf",
            "train",
            "--dataset",
            "trec",
            "--data-dir",
            data_dir,
            "--limit",
            "160",
            "--epochs",
            "2",
            "--batch-size",
            "32",
            "--auxiliary-hidden-dim",
            "4",
            "--hidden",
            "8",
            "--verbose",
            "2",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    lines = completed.stdout.strip().splitlines()
    assert "Epoch 1/2" in completed.stdout
    result = json.loads(lines[-1])
    assert REQUIRED <= set(result)
    assert (result["dataset"], result["model"]) == ("trec", "ganet")
    # The default test gates: nucleus at pi = the target density 0.3.
    assert result["test_gates"] == {"inference_mode": "nucleus", "inference_mass": 0.3}
    # The scores are those of the saved model on the first 160 test questions.
    test = load_dataset("trec", data_dir).subset(160)
    accuracy, density = rescore_run(str(out), test.test_texts, test.test_labels)
    assert result["test_accuracy"] == pytest.approx(accuracy, abs=1e-6)
    assert result["test_density"] == pytest.approx(density, abs=1e-6)
    assert result["attention_flops_gated"] <= result["attention_flops_soft"]
    assert 1 <= result["epochs_trained"] <= 2 and result["test_examples"] == 160

    assert sorted(os.listdir(out)) == [".ganet_tf_run", "metrics.json", "model.keras", "preprocessing.json"]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["test_accuracy"] == result["test_accuracy"]
    assert len(metrics["report"]["confusion_matrix"]) == 6
    model = keras.models.load_model(out / "model.keras")
    vectorizer, class_names = load_vectorizer(str(out / "preprocessing.json"))
    assert class_names[0] == "ABBR"
    probabilities = model.predict(vectorize(vectorizer, ["What is the capital of France ?"]), verbose=0)
    assert probabilities.shape == (1, 6)


@pytest.mark.usefixtures("eager_functions")
@pytest.mark.parametrize("model", ["bilstm", "local", "soft"])
def test_baselines_through_the_library(data_dir, model):
    from ganet_tf.training import TrainConfig
    from ganet_tf.training import train_and_evaluate

    result = train_and_evaluate(
        TrainConfig(
            dataset="sst2",
            data_dir=data_dir,
            model=model,
            limit=64,
            epochs=1,
            hidden=4,
            glove_vocabulary=0,
            verbose=0,
        )
    )
    assert result["test_density"] is None and result["attention_flops_gated"] is None
    assert (result["attention_flops_soft"] is None) == (model != "soft")
    assert result["config"]["window"] is None
    confusion = np.asarray(result["report"]["confusion_matrix"])
    assert confusion.sum() == result["test_examples"] == 64
    assert result["test_accuracy"] == pytest.approx(np.trace(confusion) / 64)


@pytest.mark.usefixtures("eager_functions")
@pytest.mark.parametrize(
    "model, options",
    [
        ("conv", {}),
        ("linear_transformer", {}),
        ("ganet_transformer", {"auxiliary": "random", "target_density": 0.2}),
        ("ganet", {"auxiliary": "strided", "target_density": 0.5}),
    ],
)
def test_the_long_document_controls_through_the_library(data_dir, model, options):
    # lra_text's controls (issue 86): convolutions alone, linear attention, and
    # gates that choose without reading the tokens.
    from ganet_tf.training import TrainConfig
    from ganet_tf.training import train_and_evaluate

    tiny = {"limit": 64, "epochs": 1, "hidden": 4, "auxiliary_hidden_dim": 3, "glove_vocabulary": 0, "verbose": 0}
    result = train_and_evaluate(TrainConfig(dataset="sst2", data_dir=data_dir, model=model, **tiny, **options))
    assert result["test_examples"] == 64 and 0 <= result["test_accuracy"] <= 1
    if "auxiliary" in options:
        # top_k for the Transformer: round(0.2 T) of each text; strided
        # nucleus for GA-Net: every other real token (about half).
        assert result["test_attended_density"] == pytest.approx(options["target_density"], abs=0.1)
    else:
        assert result["test_density"] is None


@pytest.mark.usefixtures("eager_functions")
def test_custom_files(tmp_path):
    lines = [f"{'pos' if i % 2 else 'neg'} {'good fine' if i % 2 else 'bad awful'} film {i}" for i in range(40)]
    (tmp_path / "train.txt").write_text("\n".join(lines))
    (tmp_path / "test.txt").write_text("\n".join(lines[:10]))
    from ganet_tf.training import TrainConfig
    from ganet_tf.training import train_and_evaluate

    result = train_and_evaluate(
        TrainConfig(
            train_file=str(tmp_path / "train.txt"),
            test_file=str(tmp_path / "test.txt"),
            epochs=1,
            hidden=4,
            auxiliary_hidden_dim=3,
            glove_vocabulary=0,
            verbose=0,
        )
    )
    assert result["dataset"] == "custom" and result["test_examples"] == 10


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--data-dir", "/nonexistent/ganet"], "Data directory not found"),
        (["--epochs", "0"], "--epochs must be a positive integer"),
        (["--penalty", "-1"], "--penalty must be >= 0"),
        (["--steps-per-epoch", "0"], "--steps-per-epoch must be a positive integer"),
        (["--validation-batch-size", "0"], "--validation-batch-size must be a positive integer"),
        (["--time-budget", "0"], "--time-budget must be positive"),
        (["--time-budget", "nan"], "--time-budget must be a finite number"),
        (["--test-file", "x.txt"], "--test-file needs --train-file"),
        (["--train-file", "/nonexistent/train.txt"], "File not found"),
    ],
)
def test_bad_input_gives_one_error_line_and_writes_nothing(tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    code = main(["train", "--dataset", "trec", "--out", str(out), *argv])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.startswith("ganet_tf: error: ") and message in captured.err
    assert captured.err.count("\n") == 1
    assert not out.exists() and os.listdir(tmp_path) == []


class _Interrupt(keras.callbacks.Callback):
    def __init__(self, at_epoch):
        super().__init__()
        self.at_epoch = at_epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch + 1 == self.at_epoch:
            self.steps = int(self.model.optimizer.iterations.numpy())
            raise KeyboardInterrupt("simulated kill")


@pytest.mark.parametrize("monitor", ["val_loss", pytest.param("val_accuracy", marks=pytest.mark.large)])
def test_backup_dir_resumes_a_killed_run_and_stops_where_the_uninterrupted_run_would(data_dir, tmp_path, monitor):
    import shutil

    from ganet_tf.training import TrainConfig
    from ganet_tf.training import train_and_evaluate

    config = TrainConfig(
        dataset="trec",
        data_dir=data_dir,
        limit=64,
        epochs=3,
        patience=3,
        hidden=4,
        auxiliary_hidden_dim=3,
        glove_vocabulary=0,
        verbose=0,
        backup_dir=str(tmp_path / "backup"),
        buckets=3,
        monitor=monitor,
    )
    interrupt = _Interrupt(at_epoch=2)
    with pytest.raises(KeyboardInterrupt):
        train_and_evaluate(config, callbacks=[interrupt])
    history = (tmp_path / "backup" / "history.csv").read_text().strip().splitlines()
    assert len(history) == 1 + 2  # header and two finished epochs
    # A copy of the killed run's backup, resumed below with a shorter patience.
    shutil.copytree(tmp_path / "backup", tmp_path / "stopping")
    epochs_run, resumed_at = [], []
    counter = keras.callbacks.LambdaCallback(
        on_train_begin=lambda logs: resumed_at.append(int(counter.model.optimizer.iterations.numpy())),
        on_epoch_end=lambda epoch, logs: epochs_run.append(epoch),
    )
    # The resumed runs train one epoch at most: eager steps (tests/eager.py).
    with functions_run_eagerly():
        result = train_and_evaluate(config, callbacks=[counter])
    assert epochs_run == [2]  # only the third epoch ran again
    # The optimizer resumes too (Adam's moments and its step count).
    assert resumed_at == [interrupt.steps] and interrupt.steps > 0
    assert result["epochs_trained"] == 3
    # The training time and epoch times of both attempts: the killed one's two epochs count.
    seconds = list(json.loads((tmp_path / "backup" / "epoch_seconds.json").read_text()).values())
    assert len(seconds) == len(result["epoch_seconds"]) == len(result["history"]["epoch_seconds"]) == 3
    assert result["train_seconds"] == pytest.approx(sum(seconds), abs=0.01)
    # A finished run started again trains nothing and gives the same model.
    with functions_run_eagerly():
        again = train_and_evaluate(config, callbacks=[counter])
    assert epochs_run == [2] and again["test_accuracy"] == result["test_accuracy"]
    assert again["train_seconds"] == result["train_seconds"] and again["epoch_seconds"] == result["epoch_seconds"]
    watched = result["history"][monitor]
    best = np.argmin(watched) if monitor == "val_loss" else np.argmax(watched)
    assert len(watched) == 3 and result["best_epoch"] == best + 1

    # The copy: make the first epoch's score unbeatable. Resumed with a
    # patience of 2 and 6 epochs, one epoch of the patience is then spent,
    # the next epoch cannot improve, and the run stops where the
    # uninterrupted one would: after epoch 3.
    history_path = tmp_path / "stopping" / "history.csv"
    with open(history_path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    rows[0][monitor] = "0.0" if monitor == "val_loss" else "1.0"
    with open(history_path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    epochs_run.clear()
    stopping = dataclasses.replace(config, epochs=6, patience=2, backup_dir=str(tmp_path / "stopping"))
    with functions_run_eagerly():
        result = train_and_evaluate(stopping, callbacks=[counter])
    assert epochs_run == [2]
    assert result["epochs_trained"] == 3 and result["best_epoch"] == 1


def test_monitor_val_accuracy_keeps_the_most_accurate_epoch(data_dir):
    from ganet_tf.training import TrainConfig
    from ganet_tf.training import train_and_evaluate

    result = train_and_evaluate(
        TrainConfig(
            dataset="trec",
            data_dir=data_dir,
            limit=128,
            epochs=4,
            patience=4,
            hidden=4,
            auxiliary_hidden_dim=3,
            verbose=0,
            monitor="val_accuracy",
            lr=1e-2,
        )
    )
    history = result["history"]
    assert set(history) >= {"loss", "accuracy", "val_loss", "val_accuracy", "val_density"}
    best = int(np.argmax(history["val_accuracy"]))
    assert result["best_epoch"] == best + 1
    # The restored weights are those of the best epoch: same validation accuracy.
    assert result["validation_accuracy"] == pytest.approx(history["val_accuracy"][best], abs=1e-4)


def test_unknown_monitor_is_refused():
    from ganet_tf.errors import GANetInputError
    from ganet_tf.training import TrainConfig

    with pytest.raises(GANetInputError, match="Unknown --monitor 'val_auc'"):
        TrainConfig(monitor="val_auc").validate()


def test_flag_defaults_are_the_configs_defaults():
    from ganet_tf.cli import _config_from
    from ganet_tf.cli import build_parser
    from ganet_tf.seq2seq.config import Seq2SeqConfig
    from ganet_tf.training import TrainConfig

    parser = build_parser()
    assert _config_from(parser.parse_args(["train"])) == TrainConfig()
    names = set(Seq2SeqConfig.__dataclass_fields__)
    arguments = {key: value for key, value in vars(parser.parse_args(["seq2seq"])).items() if key in names}
    assert Seq2SeqConfig(**arguments) == Seq2SeqConfig()
