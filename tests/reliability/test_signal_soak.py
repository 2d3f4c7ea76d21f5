"""SIGTERM at many points of a `train` and a `seq2seq` run, the machine
kept busy: each time the one line, exit code 143 and no traceback, wherever
the signal lands (importing, building, tracing, inside an epoch, writing a
backup); each attempt resumes the one before, and the last finishes the
run. A minute or more per command: marked large."""

import json
import os
import signal
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.reliability.conftest import COMMANDS
from tests.reliability.test_interruption import _finished_epochs

# Seconds from start to SIGTERM: `import ganet_tf`, parsing, data, model
# building, the first trace, then epochs of a few batches and their backups.
DELAYS = (0.5, 1.5, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 16.0, 19.0, 23.0, 28.0)
INTERRUPTED = (
    "ganet_tf: error: interrupted (SIGTERM): no output was replaced and nothing half-written was left; "
    "with --backup-dir, the same command resumes."
)


def _run(argv, delay=None):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": REPO}
    command = [sys.executable, "-m", "ganet_tf", *argv]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    if delay is not None:
        try:
            process.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=300)
    return process.returncode, err


@pytest.fixture
def busy_machine():
    """One busy loop per core beside the runs, as a loaded machine."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    yield
    for burner in burners:
        burner.kill()
        burner.wait()


@pytest.mark.large
@pytest.mark.parametrize("command", ["train", "seq2seq"])
def test_sigterm_anywhere_gives_one_line_and_the_run_resumes(data, tmp_path, busy_machine, command):
    folder = tmp_path / command
    argv = [*COMMANDS[command].argv(data), "--epochs", "200", "--patience", "200"]
    argv += ["--out", str(folder / "out"), "--backup-dir", str(folder / "backup")]
    for delay in DELAYS:
        code, err = _run(argv, delay)
        assert "Traceback" not in err and "Exception ignored" not in err, (delay, err[-3000:])
        errors = [line for line in err.splitlines() if line.startswith("ganet_tf: error:")]
        assert code == 143 and errors == [INTERRUPTED], (delay, code, err[-3000:])
        left = set(os.listdir(folder)) if folder.exists() else set()
        assert left <= {"backup"}, (delay, left)  # no output, lock or staging folder
    epochs = _finished_epochs(folder / "backup")
    finish = [item if item != "200" else str(epochs + 1) for item in argv]
    code, err = _run(finish)
    assert code == 0, err[-3000:]
    assert json.loads((folder / "out" / "metrics.json").read_text())["epochs_trained"] == epochs + 1
