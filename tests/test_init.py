"""`import ganet_tf` leaves the host process as it found it.

A library import changes no environment variable (`TF_CPP_MIN_LOG_LEVEL`
among them), no file descriptor, nothing of `sys.meta_path`, no signal
handler and no logging configuration, on every Keras backend; it imports
neither Keras nor TensorFlow. The command line's quiet start is
`ganet_tf.cli.main`'s (tests/test_quiet_import.py).
"""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

# Run in a fresh interpreter: what the process looks like before and after
# `import ganet_tf` (and reading its `__all__`), and what changed.
SNAPSHOT = r"""
import json, logging, os, signal, sys

LOGGERS = ("", "tensorflow", "absl", "keras")


def snapshot():
    stat = os.fstat(2)
    loggers = {}
    for name in LOGGERS:
        logger = logging.getLogger(name)
        loggers[name] = [logger.level, [id(h) for h in logger.handlers], logger.propagate, logger.disabled]
    return {
        "environment": dict(os.environ),
        "fd 2": [stat.st_dev, stat.st_ino],
        "sys.meta_path": [id(finder) for finder in sys.meta_path],
        "signal handlers": {
            str(number): repr(signal.getsignal(number)) for number in (signal.SIGINT, signal.SIGTERM)
        },
        "loggers": loggers,
        "logging.disable": logging.root.manager.disable,
    }


before = snapshot()
import ganet_tf

ganet_tf.__all__
after = snapshot()
changed = sorted(key for key in before if before[key] != after[key])
heavy = sorted(name for name in ("keras", "tensorflow") if name in sys.modules)
print(json.dumps({"changed": changed, "heavy": heavy, "after": after["environment"].get("TF_CPP_MIN_LOG_LEVEL")}))
"""


@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_import_leaves_the_process_as_it_found_it(backend):
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run(
        [sys.executable, "-c", SNAPSHOT],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**env, "KERAS_BACKEND": backend},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr == ""
    result = json.loads(done.stdout)
    assert result == {"changed": [], "heavy": [], "after": None}


def test_names_load_when_first_read():
    code = (
        "import sys, ganet_tf\n"
        "assert 'ganet_tf.layers' not in sys.modules\n"
        "assert ganet_tf.GateSampler is sys.modules['ganet_tf.layers'].GateSampler\n"
        "assert ganet_tf.build_ganet is ganet_tf.models.build_ganet\n"
        "print(sorted(set(ganet_tf.__all__) - set(dir(ganet_tf))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "KERAS_BACKEND": "jax"},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "[]"


def test_a_program_that_imported_keras_first_loads_a_saved_model_after_import_ganet_tf(tmp_path):
    # As with other Keras packages: `import keras, ganet_tf` and the layers
    # are registered, so `keras.models.load_model` finds them.
    path = str(tmp_path / "ganet.keras")
    save = f"import ganet_tf\nganet_tf.build_ganet(2, vocabulary_size=20, seed=0).save({path!r})\n"
    load = (
        "import sys, keras, ganet_tf\n"
        "assert 'ganet_tf.models' not in sys.modules\n"
        f"print(keras.models.load_model({path!r}).get_layer('gates').__class__.__name__)\n"
    )
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    for code in (save, load):
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "GateSampler"
