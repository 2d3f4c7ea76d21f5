"""A stop signal while `python -m ganet_tf` imports TensorFlow stops the
command with its one line; `import ganet_tf` elsewhere leaves the handlers
alone."""

import os
import signal
import subprocess
import sys
import time

import pytest

from ganet_tf.early_signals import install_if_command
from ganet_tf.early_signals import started_as_command
from tests.conftest import REPO


@pytest.mark.parametrize(
    "orig_argv, argv0, expected",
    [
        (["python", "-m", "ganet_tf", "train"], "-m", True),
        (["python3", "-P", "-u", "-m", "ganet_tf"], "-m", True),
        (["python", "-m", "pytest", "tests"], "-m", False),
        (["python", "-m", "ganet_tfx"], "-m", False),
        (["/venv/bin/python", "/venv/bin/ganet-tf", "predict"], "/venv/bin/ganet-tf", True),
        (["python", "script.py"], "script.py", False),
        (["python", "-c", "import ganet_tf"], "-c", False),
    ],
)
def test_started_as_command(orig_argv, argv0, expected):
    assert started_as_command(orig_argv, argv0) is expected


def test_import_ganet_tf_in_a_program_leaves_its_handlers_alone():
    # This interpreter runs pytest, not the command line: nothing is installed.
    before = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    install_if_command()
    assert {number: signal.getsignal(number) for number in before} == before


def test_sigterm_while_the_command_imports_gives_the_one_line():
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": REPO}
    command = [sys.executable, "-m", "ganet_tf", "predict", "--model", "no-such-run", "--text", "a film"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    time.sleep(1.0)  # while the command imports TensorFlow and Keras (seconds)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 143, err
    assert err.strip().splitlines() == [
        "ganet_tf: error: interrupted (SIGTERM): no output was replaced and nothing half-written was left; "
        "with --backup-dir, the same command resumes."
    ]
