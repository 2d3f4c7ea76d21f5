"""`python -m ganet_tf [COMMAND] --help` answers at once: building the parser
imports no Keras, TensorFlow or the packages built on them."""

import json
import os
import subprocess
import sys
import time

import pytest

from ganet_tf import cli
from tests.conftest import REPO

HEAVY = ("tensorflow", "keras", "tensorflow_probability", "keras_tuner", "keras_hub", "tf_keras")
# `python -m ganet_tf ARGS`, then the heavy packages it imported.
HELP = (
    "import json, runpy, sys\n"
    "try:\n"
    "    runpy.run_module('ganet_tf', run_name='__main__', alter_sys=True)\n"
    "except SystemExit as exit:\n"
    "    code = exit.code\n"
    f"heavy = sorted({{name.split('.')[0] for name in sys.modules}} & set({HEAVY!r}))\n"
    "print(json.dumps({'code': code, 'heavy': heavy}), file=sys.stderr)\n"
)
# Best of this many runs: one run may wait on a loaded machine's cores.
RUNS = 3
HELP_SECONDS = 2.0


def _env():
    return {**os.environ, "KERAS_BACKEND": "tensorflow"}


@pytest.mark.parametrize("command", [[], *([name] for name in cli.COMMANDS)], ids=["top", *cli.COMMANDS])
def test_help_imports_no_tensorflow(command):
    done = subprocess.run(
        [sys.executable, "-c", HELP, *command, "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=_env(),
        timeout=120,
    )
    assert json.loads(done.stderr.splitlines()[-1]) == {"code": 0, "heavy": []}, done.stderr[-2000:]
    assert done.stdout.startswith("usage: python -m ganet_tf")


def test_train_help_answers_in_under_two_seconds():
    seconds = []
    for _ in range(RUNS):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "ganet_tf", "train", "--help"],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=_env(),
            timeout=120,
        )
        seconds.append(time.perf_counter() - start)
        assert done.returncode == 0 and done.stderr == "", done.stderr[-2000:]
        assert "--target-density" in done.stdout
    assert min(seconds) < HELP_SECONDS, seconds


def test_a_bad_flag_is_refused_before_tensorflow():
    done = subprocess.run(
        [sys.executable, "-c", HELP, "train", "--model", "no-such-model"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=_env(),
        timeout=120,
    )
    # One line naming the flag and its choices, not the whole usage.
    (line,) = done.stderr.splitlines()[:-1]
    assert line.startswith("ganet_tf train: error: argument --model: invalid choice: 'no-such-model'")
    assert line.endswith("(see --help)")
    assert json.loads(done.stderr.splitlines()[-1]) == {"code": 2, "heavy": []}
