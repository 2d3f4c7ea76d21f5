"""Ctrl-C, SIGTERM and kill -9, for every command of `COMMANDS`: one line,
nothing half-written, a killed writer's left-overs cleaned by the next run,
and a training resumed from its `--backup-dir`."""

import importlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ganet_tf.cli import main
from tests.command_checks import error_line
from tests.command_checks import tree
from tests.conftest import REPO
from tests.eager import functions_run_eagerly
from tests.reliability.conftest import COMMANDS
from tests.reliability.conftest import dead_pid

TRAINERS = [command for command, spec in COMMANDS.items() if spec.trains]


def _finished_epochs(backup):
    """The epochs the backup in `backup` holds (Keras' training metadata)."""
    try:
        with open(os.path.join(backup, "backup", "training_metadata.json"), encoding="utf-8") as handle:
            return int(json.load(handle)["epoch"])
    except (OSError, ValueError, KeyError):
        return 0


def _start(argv):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": REPO}
    command = [sys.executable, "-m", "ganet_tf", *argv]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)


@pytest.fixture(scope="module")
def terminated(data, tmp_path_factory):
    """Every training command started at once, each sent SIGTERM after its
    first epoch: `{command: (folder, argv, exit code, stderr, epochs)}`.

    A high `--patience` keeps early stopping from ending a run before its
    signal, and no run waits on another's exit before its own signal: a run
    that finished and was only exiting when signalled would prove nothing.
    """
    runs = {}
    for command in TRAINERS:
        folder = tmp_path_factory.mktemp(command)
        argv = [*COMMANDS[command].argv(data), "--epochs", "200", "--patience", "200"]
        argv += ["--out", str(folder / "out"), "--backup-dir", str(folder / "backup")]
        runs[command] = (folder, argv, _start(argv))
    signalled = set()
    deadline = time.monotonic() + 300
    while len(signalled) < len(runs):
        assert time.monotonic() < deadline, "no epoch finished in time"
        for command, (folder, _, process) in runs.items():
            if command in signalled:
                continue
            assert process.poll() is None, process.communicate()[1][-2000:]
            if _finished_epochs(folder / "backup") >= 1:
                process.send_signal(signal.SIGTERM)
                signalled.add(command)
        time.sleep(0.05)
    results = {}
    for command, (folder, argv, process) in runs.items():
        _, err = process.communicate(timeout=120)
        results[command] = (folder, argv, process.returncode, err, _finished_epochs(folder / "backup"))
    return results


@pytest.mark.parametrize("command", TRAINERS)
def test_sigterm_stops_with_one_line_and_a_kill_9_run_resumes(terminated, command):
    """SIGTERM after the first epoch: one line, exit 143, no output, no lock
    left. A kill -9 can run no code: it leaves its lock and a half-written
    staging folder, which the next attempt takes over and removes; that
    attempt resumes from the backup, trains one more epoch and writes the
    run."""
    folder, argv, code, err, epochs = terminated[command]
    lines = [line for line in err.splitlines() if line.startswith("ganet_tf:")]
    assert code == 143 and lines[-1].startswith("ganet_tf: error: interrupted (SIGTERM)"), err[-2000:]
    assert len([line for line in lines if line.startswith("ganet_tf: error:")]) == 1
    assert sorted(os.listdir(folder)) == ["backup"] and epochs >= 1  # no output, no lock, no staging
    dead = dead_pid()
    for name in ("out", "backup"):
        (folder / f".{name}.ganet-lock").write_text(str(dead))
    (folder / f".out.ganet-new-{dead}-ab12").mkdir()
    (folder / f".out.ganet-new-{dead}-ab12" / "model.keras").write_bytes(b"PK half")
    resumed = [item if item != "200" else str(epochs + 1) for item in argv]  # --epochs, --patience may change
    with functions_run_eagerly():  # one epoch of a few batches: tracing would cost more
        assert main(resumed) == 0
    result = json.loads((folder / "out" / "metrics.json").read_text())
    assert result["epochs_trained"] == epochs + 1
    assert sorted(os.listdir(folder)) == ["backup", "out"]


def _interrupt_inside(monkeypatch, module, name, signal_number):
    """Makes `module.name` raise `signal_number` at this process, as a user would."""
    original = getattr(module, name)

    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signal_number)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, interrupted)


def _export_and_explain():
    export_module = importlib.import_module("ganet_tf.export.export_saved_model")
    explain_module = importlib.import_module("ganet_tf.interpret.token_explanations")
    # Where each command is halfway through writing its output.
    return {"export": (export_module, "write_warmup_requests"), "explain": (explain_module, "_plot")}


@pytest.mark.parametrize(
    "command, signal_name, code",
    [
        pytest.param("export", "SIGTERM", 143, marks=pytest.mark.large),
        ("explain", "SIGTERM", 143),
        ("explain", "SIGINT", 130),
    ],
)
def test_an_interrupted_write_leaves_the_earlier_output_whole(
    data, tmp_path, capsys, monkeypatch, command, signal_name, code
):
    spec = COMMANDS[command]
    flag, name = next(iter(spec.outputs.items()))
    argv = [*spec.argv(data), flag, str(tmp_path / name)]
    if command != "export":  # an earlier output to keep (an export is too slow to make twice here)
        assert main(argv) == 0
        capsys.readouterr()
    before = {path: (tmp_path / path).read_bytes() for path in tree(tmp_path) if (tmp_path / path).is_file()}
    module, function = _export_and_explain()[command]
    _interrupt_inside(monkeypatch, module, function, getattr(signal, signal_name))
    assert main(argv) == code
    assert f"interrupted ({'Ctrl-C' if signal_name == 'SIGINT' else signal_name})" in error_line(capsys)
    after = {path: (tmp_path / path).read_bytes() for path in tree(tmp_path) if (tmp_path / path).is_file()}
    assert after == before and tree(tmp_path) == sorted(tree(tmp_path))


def test_a_killed_writers_left_overs_are_cleaned_by_the_next_run(data, tmp_path):
    """kill -9 of `explain` leaves a lock and a staging folder: the next run
    takes the lock over and removes them."""
    dead = dead_pid()
    (tmp_path / ".report.ganet-lock").write_text(str(dead))
    (tmp_path / f".report.ganet-new-{dead}-ab12").mkdir()
    (tmp_path / f".report.ganet-new-{dead}-ab12" / "index.html").write_text("half")
    assert main([*COMMANDS["explain"].argv(data), "--out", str(tmp_path / "report")]) == 0
    assert os.listdir(tmp_path) == ["report"]
