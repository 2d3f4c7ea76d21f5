import os
import subprocess
import sys

from ganet_tf.quiet_import import _kept_lines
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


def test_a_later_import_of_tensorflow_on_another_backend_is_quiet():
    # Keras on JAX (or PyTorch) looks TensorFlow up, then imports it for a
    # part that needs it (tf.data).
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    code = (
        "import ganet_tf, importlib.util, sys\n"
        "assert importlib.util.find_spec('tensorflow') and 'tensorflow' not in sys.modules\n"
        "import tensorflow\n"
        "print(tensorflow.__name__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**env, "KERAS_BACKEND": "jax"},
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout == "tensorflow\n", done.stderr[-2000:]
    assert done.stderr == ""
