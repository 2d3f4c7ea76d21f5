"""What `train` writes: only folders it owns, all or nothing, never a diverged model."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

from ganet_tf.cli import main
from ganet_tf.errors import GANetInputError
from ganet_tf.policy import Terminated
from ganet_tf.policy import install_signal_handlers
from ganet_tf.policy import restore_signal_handlers
from ganet_tf.policy.backup import AtomicBackupAndRestore
from ganet_tf.policy.backup import save_weights
from ganet_tf.policy.run_folder import RUN_MARKER
from ganet_tf.policy.run_folder import FolderLock
from ganet_tf.policy.run_folder import clean_stale
from ganet_tf.policy.run_folder import write_run_folder
from ganet_tf.training import commands as training_commands
from tests.command_checks import error_line
from tests.command_checks import tree
from tests.eager import functions_run_eagerly

RUN = sorted(["metrics.json", "model.keras", "preprocessing.json", RUN_MARKER])
TINY = [
    "--epochs",
    "1",
    "--hidden",
    "4",
    "--auxiliary-hidden-dim",
    "3",
    "--glove-vocabulary",
    "0",
    "--verbose",
    "0",
    "--batch-size",
    "16",
    "--buckets",
    "0",
]


def _files(folder):
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"{'pos' if i % 2 else 'neg'} {'good fine' if i % 2 else 'bad awful'} film {i}" for i in range(40)]
    (folder / "train.txt").write_text("\n".join(lines))
    (folder / "test.txt").write_text("\n".join(lines[:10]))
    return ["--train-file", str(folder / "train.txt"), "--test-file", str(folder / "test.txt")]


def _dead_pid():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One tiny run with a backup, written over an earlier run's folder."""
    root = tmp_path_factory.mktemp("trained")
    files = _files(root / "data")
    out = root / "run"
    out.mkdir()
    for name in RUN:
        (out / name).write_text("an earlier run")
    with functions_run_eagerly():
        code = main(["train", *files, *TINY, "--out", str(out), "--backup-dir", str(root / "backup")])
    assert code == 0
    return root, files


def test_a_run_replaces_an_earlier_run_and_leaves_nothing_beside_it(trained):
    root, _ = trained
    assert sorted(os.listdir(root / "run")) == RUN
    assert json.loads((root / "run" / "metrics.json").read_text())["train_examples"] == 36
    assert sorted(os.listdir(root)) == ["backup", "data", "run"]  # no lock, no staging
    assert sorted(os.listdir(root / "backup")) == [
        "best.weights.h5",
        "epoch_seconds.json",
        "history.csv",
        "run_config.json",
        "validation_seconds.json",
    ]


@pytest.mark.parametrize(
    "case",
    [
        "user_files",
        "dot",
        "holds_inputs",
        "under_file",
        "is_file",
        "backup_user_files",
        "backup_under_file",
        "backup_inside_out",
    ],
)
def test_a_folder_the_project_does_not_own_is_refused_before_training(tmp_path, capsys, monkeypatch, case):
    files = _files(tmp_path / "data")
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "thesis.tex").write_text("years of work")
    (tmp_path / "thesis" / "figures").mkdir()
    (tmp_path / "notes.txt").write_text("mine")
    flags = {
        "user_files": ["--out", str(tmp_path / "thesis")],
        "dot": ["--out", "."],
        "holds_inputs": ["--out", str(tmp_path / "data")],
        "under_file": ["--out", str(tmp_path / "notes.txt" / "run")],
        "is_file": ["--out", str(tmp_path / "notes.txt")],
        "backup_user_files": ["--backup-dir", str(tmp_path / "thesis")],
        "backup_under_file": ["--backup-dir", str(tmp_path / "notes.txt" / "b")],
        "backup_inside_out": ["--out", str(tmp_path / "run"), "--backup-dir", str(tmp_path / "run" / "b")],
    }[case]
    monkeypatch.chdir(tmp_path / "data" if case == "dot" else tmp_path)
    before = tree(tmp_path)
    assert main(["train", *files, *TINY, *flags]) == 2
    line = error_line(capsys)
    assert ("--out" in line) or ("--backup-dir" in line)
    assert tree(tmp_path) == before


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--lr", "inf"], "--lr must be a finite number"),
        (["--penalty", "inf"], "--penalty must be a finite number"),
        (["--temperature", "nan"], "--temperature must be"),
        (["--initial-gate-logit=-inf"], "--initial-gate-logit must be a finite number"),
        (["--limit", "0"], "--limit must be a positive integer"),
        (["--limit", "-1"], "--limit must be a positive integer"),
        (["--window", "0"], "--window must be a positive integer"),
        (["--window", "-3"], "--window must be a positive integer"),
        (["--restart"], "--restart needs --backup-dir"),
        (["--encoding", "klingon"], "Unknown --encoding 'klingon'"),
    ],
)
def test_bad_values_are_one_line(tmp_path, capsys, argv, message):
    files = _files(tmp_path / "data")
    assert main(["train", *files, *TINY, "--out", str(tmp_path / "out"), *argv]) == 2
    assert message in error_line(capsys)
    assert not (tmp_path / "out").exists()


def test_a_directory_given_as_the_training_file(tmp_path, capsys):
    assert main(["train", "--train-file", str(tmp_path), *TINY]) == 2
    assert "is a folder, not a file" in error_line(capsys)


def test_a_second_writer_of_the_same_out_is_refused(tmp_path, capsys):
    files = _files(tmp_path / "data")
    lock = tmp_path / ".run.ganet-lock"
    lock.write_text(str(os.getppid()))  # a live process holds it
    assert main(["train", *files, *TINY, "--out", str(tmp_path / "run")]) == 2
    assert "being written by another ganet_tf process" in error_line(capsys)
    assert not (tmp_path / "run").exists()
    lock.write_text(str(_dead_pid()))  # its process is gone: taken over
    with FolderLock(str(tmp_path / "run")) as taken:
        assert lock.read_text() == str(os.getpid()) and taken.held
    assert not lock.exists()


def test_a_run_folder_of_an_earlier_version_is_recognised(tmp_path):
    from ganet_tf.policy.run_folder import is_run_folder

    for name in ("model.keras", "preprocessing.json"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "metrics.json").write_text('{"test_accuracy": 0.9, "config": {}}')
    assert is_run_folder(str(tmp_path))
    (tmp_path / "metrics.json").write_text('{"my": "numbers"}')
    assert not is_run_folder(str(tmp_path))


def test_replacing_a_run_is_all_or_nothing(tmp_path):
    out = tmp_path / "run"

    def write(text):
        def write_files(staging):
            with open(os.path.join(staging, "model.keras"), "w") as handle:
                handle.write(text)

        return write_files

    write_run_folder(str(out), write("first"))
    assert sorted(os.listdir(out)) == [RUN_MARKER, "model.keras"]

    def fail(staging):
        write("half")(staging)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_run_folder(str(out), fail)
    assert (out / "model.keras").read_text() == "first"
    assert sorted(os.listdir(tmp_path)) == ["run"]
    # A process killed between moving the old run aside and the new one in:
    dead = _dead_pid()
    os.rename(out, tmp_path / f".run.ganet-old-{dead}-ab12")
    (tmp_path / f".run.ganet-new-{dead}-cd34").mkdir()
    (tmp_path / f".run.ganet-new-{os.getpid()}-ef56").mkdir()  # alive: kept
    clean_stale(str(out))
    assert (out / "model.keras").read_text() == "first"
    assert sorted(os.listdir(tmp_path)) == [f".run.ganet-new-{os.getpid()}-ef56", "run"]
    write_run_folder(str(out), write("second"))
    assert (out / "model.keras").read_text() == "second"


def test_a_kill_while_the_backup_is_written_keeps_the_previous_backup(tmp_path, monkeypatch):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    backup = AtomicBackupAndRestore(str(tmp_path / "backup"))
    backup.set_model(model)
    backup.on_epoch_end(0)
    saved = model.get_weights()
    real_save = model.save_weights

    def killed(path, overwrite=True):
        real_save(path, overwrite)
        with open(path, "r+b") as handle:
            handle.truncate(96)
        raise KeyboardInterrupt

    monkeypatch.setattr(model, "save_weights", killed)
    model.layers[0].kernel.assign(np.full((2, 1), 7.0, "float32"))
    with pytest.raises(KeyboardInterrupt):
        backup.on_epoch_end(1)
    assert sorted(os.listdir(tmp_path / "backup")) == ["latest.weights.h5", "training_metadata.json"]
    restored = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    restored.compile(optimizer="adam", loss="mse")
    resumed = AtomicBackupAndRestore(str(tmp_path / "backup"))
    resumed.set_model(restored)
    resumed.on_train_begin()
    np.testing.assert_array_equal(restored.get_weights()[0], saved[0])
    assert restored._initial_epoch == 1


def test_a_sigterm_while_the_best_weights_are_saved_waits_for_the_file(tmp_path, monkeypatch):
    # The signal used to land inside the weights' conversion to NumPy and
    # surface as a TypeError instead of the one-line interruption.
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    real_save = model.save_weights

    def interrupted(path, overwrite=True):
        os.kill(os.getpid(), signal.SIGTERM)
        real_save(path, overwrite)

    monkeypatch.setattr(model, "save_weights", interrupted)
    previous = install_signal_handlers()
    try:
        with pytest.raises(Terminated):
            save_weights(model, str(tmp_path / "best.weights.h5"))
    finally:
        restore_signal_handlers(previous)
    assert os.listdir(tmp_path) == ["best.weights.h5"]
    restored = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    restored.load_weights(str(tmp_path / "best.weights.h5"))
    np.testing.assert_array_equal(restored.get_weights()[0], model.get_weights()[0])


def test_a_backup_of_other_flags_is_refused_naming_them(trained, capsys):
    root, files = trained
    argv = ["train", *files, *TINY, "--backup-dir", str(root / "backup")]
    assert main([*argv, "--lr", "0.05", "--temperature", "2.0", "--penalty", "0"]) == 2
    line = error_line(capsys)
    assert "--penalty 0.01 (now 0.0)" in line and "--lr 0.001 (now 0.05)" in line
    assert "--temperature 0.5 (now 2.0)" in line and "--restart" in line
    assert main([*argv, "--seed", "3"]) == 2
    assert "--seed 0 (now 3)" in error_line(capsys)


@pytest.mark.parametrize("broken", ["best.weights.h5", "backup/latest.weights.h5", "history.csv"])
def test_a_corrupt_backup_is_one_line_naming_the_file(trained, tmp_path, capsys, broken):
    root, files = trained
    backup = tmp_path / "backup"
    shutil.copytree(root / "backup", backup)
    (backup / broken).parent.mkdir(exist_ok=True)
    (backup / broken).write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 88)  # 96 bytes
    if broken == "history.csv":
        (backup / broken).write_text("epoch,loss,val_loss\n0,0.5,\n")
    epochs = ["--epochs", "2"] if broken.startswith("backup/") else []
    assert main(["train", *files, *TINY, *epochs, "--backup-dir", str(backup), "--out", str(tmp_path / "out")]) == 2
    line = error_line(capsys)
    assert os.path.basename(broken) in line and "--restart" in line
    assert not (tmp_path / "out").exists()


def test_a_diverged_run_stops_and_saves_nothing(trained, tmp_path, capsys):
    root, files = trained
    backup = tmp_path / "backup"
    shutil.copytree(root / "backup", backup)
    code = main(
        [
            "train",
            *files,
            *TINY,
            "--model",
            "bilstm",
            "--lr",
            "1e38",
            "--out",
            str(tmp_path / "out"),
            "--backup-dir",
            str(backup),
            "--restart",
        ]
    )
    assert code == 2
    assert "training diverged" in error_line(capsys)
    assert not (tmp_path / "out").exists()
    assert not (backup / "best.weights.h5").exists()


def test_ctrl_c_is_one_line_and_exit_130(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(training_commands, "train_command", interrupted)
    assert main(["train", "--epochs", "1"]) == 130
    assert "interrupted (Ctrl-C)" in error_line(capsys)


def test_a_sigterm_turned_into_a_library_error_is_still_one_line_and_exit_143(monkeypatch, capsys):
    def interrupted(args):
        try:  # a library call that swallows the handler's exception and fails its own way
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
        except Terminated:
            raise TypeError("__array__() got an unexpected keyword argument 'copy'") from None
        raise AssertionError("the signal did not arrive")

    monkeypatch.setattr(training_commands, "train_command", interrupted)
    assert main(["train", "--epochs", "1"]) == 143
    assert "interrupted (SIGTERM)" in error_line(capsys)


def test_an_error_without_a_stop_signal_is_not_taken_for_one(monkeypatch):
    def failing(args):
        raise TypeError("a real bug")

    monkeypatch.setattr(training_commands, "train_command", failing)
    with pytest.raises(TypeError, match="a real bug"):
        main(["train", "--epochs", "1"])


def test_library_refusal_raises_the_input_error(tmp_path):
    from ganet_tf.training import TrainConfig
    from ganet_tf.training import train_and_evaluate

    (tmp_path / "mine.txt").write_text("keep")
    with pytest.raises(GANetInputError, match="did not write"):
        train_and_evaluate(TrainConfig(out=str(tmp_path), epochs=1))
    assert os.listdir(tmp_path) == ["mine.txt"]


def test_a_failed_run_leaves_no_folder_it_made(tmp_path, capsys):
    (tmp_path / "bad.txt").write_text("pos only one class\npos again\n")
    out = tmp_path / "a" / "b" / "run"
    assert (
        main(
            [
                "train",
                "--train-file",
                str(tmp_path / "bad.txt"),
                *TINY,
                "--out",
                str(out),
                "--backup-dir",
                str(tmp_path / "backup"),
            ]
        )
        == 2
    )
    assert "single label" in error_line(capsys)
    assert sorted(os.listdir(tmp_path)) == ["bad.txt"]
