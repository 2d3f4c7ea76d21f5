"""The command line's quiet start: TensorFlow's C++ start-up log is dropped
where `python -m ganet_tf` imports it, unless `TF_CPP_MIN_LOG_LEVEL` asks
for it; a library import changes nothing (tests/test_init.py)."""

import os
import subprocess
import sys

from ganet_tf.quiet_import import DEFAULT_LOG_LEVEL
from ganet_tf.quiet_import import _kept_lines
from ganet_tf.quiet_import import import_tensorflow
from tests.conftest import REPO

CAPTURED = [
    b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n",
    b"I0000 00:00:1795432609.046013    9387 cudart_stub.cc:31] Could not find cuda drivers on "
    b"your machine, GPU will not be used.\n",
    b"I0000 00:00:1795432609.089871    9387 cpu_feature_guard.cc:227] This TensorFlow binary is "
    b"optimized to use available CPU instructions in performance-critical operations.\n",
    b"To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow.\n",
    b"E0000 00:00:1795432620.783840    9501 cuda_platform.cc:52] failed call to cuInit\n",
    b"/x/y.py:3: UserWarning: a Python warning\n",
]


def test_drops_absl_records_below_the_level_with_their_continuation_lines():
    assert _kept_lines(CAPTURED, 3) == CAPTURED[-1:]
    assert _kept_lines(CAPTURED, 2) == CAPTURED[-2:]
    assert _kept_lines(CAPTURED, 0) == CAPTURED[1:]


def test_help_prints_nothing_on_stderr():
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run(
        [sys.executable, "-m", "ganet_tf", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0 and "usage: python -m ganet_tf" in done.stdout
    assert done.stderr == ""


def test_a_command_that_imports_tensorflow_prints_only_its_own_line():
    # `predict` imports TensorFlow (quietly, as the command line), then
    # refuses the missing run in one line: no C++ log line before it.
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run(
        [sys.executable, "-m", "ganet_tf", "predict", "--model", "no-such-run", "--text", "a film"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**env, "KERAS_BACKEND": "tensorflow"},
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("ganet_tf: error: "), line


def test_import_tensorflow_defaults_the_level_and_keeps_the_users(monkeypatch):
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "1")
    assert import_tensorflow().__name__ == "tensorflow"
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "1"
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL")
    import_tensorflow()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == DEFAULT_LOG_LEVEL
