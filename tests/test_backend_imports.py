"""`ganet_tf` without TensorFlow or on another Keras backend (issue 53).

A machine without TensorFlow is simulated in a subprocess: a `sys.meta_path`
finder makes `import tensorflow` (and tf_keras, TensorFlow Probability,
TensorFlow Text, keras-hub) fail as on a machine where they are not
installed. The TensorFlow-only commands and names must then stop with one
line naming the fix; the layers and builders must import.

The runs that import Keras share two interpreters (`tests.one_interpreter`),
one behind the blocker and one with TensorFlow installed, each case with
its own exit status, output and working directory.
"""

import os
import pathlib
import subprocess
import sys

import pytest

from ganet_tf import backends
from ganet_tf import cli
from ganet_tf.errors import GANetInputError
from ganet_tf.errors import TensorFlowRequiredError
from tests.conftest import REPO
from tests.made_once import made_once
from tests.one_interpreter import case_result
from tests.one_interpreter import run_cases

# Run first in each subprocess (`PYTHONPATH` holds the repository).
BLOCKER = "import sys\nfrom tests import tensorflow_blocker\ntensorflow_blocker.install()\n"
# `python -m ganet_tf ARGS` behind the blocker.
CLI = BLOCKER + "import runpy\nrunpy.run_module('ganet_tf', run_name='__main__', alter_sys=True)\n"


def _run(code, args=(), backend="jax", cwd=REPO):
    env = {**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": REPO}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


# The cases run behind the blocker on JAX, in this order: first the commands,
# the first of them the one that must print nothing on stderr (`--help`,
# also what importing Keras prints), then the imports, last a model.
COMMANDS_WITHOUT_TENSORFLOW = ["export --model run --name m", "seq2seq --task copy", "predict --help"]
IMPORT_WITHOUT_TENSORFLOW = BLOCKER + (
    "import ganet_tf\n"
    "assert 'tensorflow' not in sys.modules\n"
    "for name in ('load_classifier', 'TextClassifier', 'load_translator', 'inference'):\n"
    "    try:\n"
    "        getattr(ganet_tf, name)\n"
    "    except ganet_tf.TensorFlowRequiredError as error:\n"
    "        assert isinstance(error, ImportError)\n"
    "        print(error)\n"
)
LAYERS_WITHOUT_TENSORFLOW = BLOCKER + (
    "import ganet_tf, ganet_tf.layers, ganet_tf.models, ganet_tf.metrics\n"
    "import numpy as np\n"
    "model = ganet_tf.build_ganet(3, vocabulary_size=50, embedding_dim=8, hidden_dim=4, attention_units=4)\n"
    "probabilities = model.predict(np.ones((2, 6), 'int32'), verbose=0)\n"
    "print(probabilities.shape, ganet_tf.backends.keras_backend())\n"
)
# With TensorFlow installed and Keras on JAX, in this order: first the check
# that importing `ganet_tf` leaves TensorFlow alone.
OTHER_BACKEND_IMPORTS = "import sys, ganet_tf, ganet_tf.layers, ganet_tf.models\nprint('tensorflow' in sys.modules)"
TENSORFLOW_PARTS = [
    ("inference.text_classifier", "load_classifier"),
    ("export.export_saved_model", "export_saved_model"),
    ("seq2seq.translator", "Translator"),
    ("interpret.token_explanations", "explain_texts"),
]


def _run_cases(tmp_path_factory, name, cases):
    """`run_cases` for `cases` of `(name, code, args, in_empty_folder)` on
    JAX, once a test run: a case in an empty folder runs in a folder of its
    own (the test checks it stays empty), the others in the repository."""

    def make(root):
        listed = []
        for number, (case, code, args, in_empty_folder) in enumerate(cases):
            cwd = REPO
            if in_empty_folder:
                cwd = root / str(number)
                cwd.mkdir()
            listed.append({"name": case, "code": code, "args": list(args), "cwd": str(cwd)})
        env = {**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": REPO}
        return run_cases(listed, env, timeout=300)

    return made_once(tmp_path_factory, name, make)


@pytest.fixture(scope="module")
def without_tensorflow(tmp_path_factory):
    """The results of the runs behind the blocker on JAX, by case name."""
    cases = [
        ("help", CLI, ["--help"], False),
        ("train", CLI, ["train", "--dataset", "trec", "--out", "X"], True),
        *((command, CLI, command.split(), True) for command in COMMANDS_WITHOUT_TENSORFLOW),
        ("import", IMPORT_WITHOUT_TENSORFLOW, [], False),
        ("layers", LAYERS_WITHOUT_TENSORFLOW, [], False),
    ]
    return _run_cases(tmp_path_factory, "backend_imports_without_tensorflow", cases)


@pytest.fixture(scope="module")
def on_another_backend(tmp_path_factory):
    """The results of the runs with TensorFlow installed and Keras on JAX, by case name."""
    cases = [
        ("imports", OTHER_BACKEND_IMPORTS, [], False),
        ("train", "import runpy\nrunpy.run_module('ganet_tf', run_name='__main__', alter_sys=True)", ["train"], True),
        *(
            (
                module,
                f"try:\n    from ganet_tf.{module} import {name}\n"
                "except ImportError as error:\n    print(type(error).__name__, error)\n",
                [],
                False,
            )
            for module, name in TENSORFLOW_PARTS
        ),
    ]
    return _run_cases(tmp_path_factory, "backend_imports_on_another_backend", cases)


def _error_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("ganet_tf:")]


def test_blocker_blocks_tensorflow():
    done = _run(BLOCKER + "import tensorflow")
    assert done.returncode != 0 and "ModuleNotFoundError: No module named 'tensorflow'" in done.stderr


def test_layers_models_and_metrics_import_without_tensorflow(without_tensorflow):
    done = case_result(without_tensorflow, "layers")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "(2, 3) jax"


def test_other_backend_does_not_import_tensorflow(on_another_backend):
    # TensorFlow installed, but Keras on JAX: `import ganet_tf` leaves it alone.
    done = case_result(on_another_backend, "imports")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "False"


def test_import_without_tensorflow_and_one_line_for_its_parts(without_tensorflow):
    done = case_result(without_tensorflow, "import")
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("ganet_tf.load_classifier needs TensorFlow (")
    assert all("not installed (Keras backend: jax)" in line and "KERAS_BACKEND=tensorflow" in line for line in lines)


@pytest.mark.parametrize("backend, fix", [("jax", "KERAS_BACKEND=tensorflow"), ("tensorflow", "KERAS_BACKEND=jax")])
def test_train_without_tensorflow_is_one_line(request, tmp_path, backend, fix):
    if backend == "jax":
        done = case_result(request.getfixturevalue("without_tensorflow"), "train")
    else:  # imports no Keras: a run of its own
        done = _run(CLI, ["train", "--dataset", "trec", "--out", "X"], backend=backend, cwd=tmp_path)
        done.cwd = tmp_path
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr[-2000:]
    assert lines[0].startswith("ganet_tf: error: train needs TensorFlow (tf.data, TextVectorization)")
    assert f"(Keras backend: {backend})" in lines[0] and fix in lines[0]
    assert "python -m pip install -r requirements.txt" in lines[0]
    assert list(pathlib.Path(done.cwd).iterdir()) == []


@pytest.mark.parametrize("command", COMMANDS_WITHOUT_TENSORFLOW)
def test_every_command_without_tensorflow_is_one_line(without_tensorflow, command):
    done = case_result(without_tensorflow, command)
    name = command.split()[0]
    assert done.returncode == 2
    assert done.stderr.splitlines() == _error_lines(done.stderr)
    assert _error_lines(done.stderr) == [
        f"ganet_tf: error: {name} needs TensorFlow ({cli.COMMANDS[name][1]}), "
        + (
            "which is not installed (Keras backend: jax): install it with python -m pip install -r requirements.txt "
            "and run with KERAS_BACKEND=tensorflow."
        )
    ]
    assert list(pathlib.Path(done.cwd).iterdir()) == []


def test_help_without_tensorflow(without_tensorflow):
    done = case_result(without_tensorflow, "help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr == ""
    assert "usage: python -m ganet_tf" in done.stdout
    assert all(name in done.stdout for name in cli.COMMANDS)


def test_train_on_another_backend_asks_for_the_tensorflow_backend(on_another_backend):
    # TensorFlow installed, Keras on JAX.
    done = case_result(on_another_backend, "train")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert _error_lines(done.stderr) == [
        "ganet_tf: error: train needs the TensorFlow backend (tf.data, TextVectorization) but Keras runs on jax: "
        "run it with KERAS_BACKEND=tensorflow (the layers and model builders run on every backend)."
    ]
    assert list(pathlib.Path(done.cwd).iterdir()) == []


# In-process: the same decisions, with the backend and TensorFlow's presence patched.


@pytest.mark.parametrize("installed, backend", [(False, "jax"), (False, "tensorflow"), (True, "torch")])
def test_main_stops_every_command_where_tensorflow_cannot_run(monkeypatch, capsys, tmp_path, installed, backend):
    monkeypatch.setattr(backends, "tensorflow_installed", lambda: installed)
    monkeypatch.setattr(backends, "keras_backend", lambda: backend)
    out = tmp_path / "run"
    for name in cli.COMMANDS:
        assert cli.main([name, "--out", str(out), "--no-such-flag"]) == 2
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"ganet_tf: error: {name} needs ")
        assert backend in lines[0] and ("not installed" in lines[0]) == (not installed)
    assert not out.exists()


def test_main_runs_commands_on_the_tensorflow_backend(monkeypatch, capsys):
    # The usual path: the command's own flag checks speak, not the backend's.
    monkeypatch.setattr(backends, "tensorflow_installed", lambda: True)
    monkeypatch.setattr(backends, "keras_backend", lambda: "tensorflow")
    with pytest.raises(SystemExit):
        cli.main(["train", "--no-such-flag"])
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


def test_missing_tensorflow_is_none_where_it_can_run(monkeypatch):
    monkeypatch.setattr(backends, "tensorflow_installed", lambda: True)
    monkeypatch.setattr(backends, "keras_backend", lambda: "tensorflow")
    assert backends.missing_tensorflow("train", "tf.data") is None
    backends.require_tensorflow("train", "tf.data")
    monkeypatch.setattr(backends, "keras_backend", lambda: "jax")
    error = backends.missing_tensorflow("ganet_tf.load_classifier", "SavedModel")
    assert isinstance(error, TensorFlowRequiredError)
    assert isinstance(error, ImportError) and isinstance(error, GANetInputError)
    assert str(error).startswith("ganet_tf.load_classifier needs the TensorFlow backend (SavedModel)")
    with pytest.raises(TensorFlowRequiredError, match="KERAS_BACKEND=tensorflow"):
        backends.require_tensorflow("ganet_tf.load_classifier", "SavedModel")


def test_keras_backend_is_read_as_keras_reads_it(monkeypatch, tmp_path):
    # Before Keras is imported: KERAS_BACKEND, else keras.json, else tensorflow.
    monkeypatch.setitem(sys.modules, "keras", None)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    assert backends.keras_backend() == "jax"
    monkeypatch.setenv("KERAS_BACKEND", "")
    assert backends.keras_backend() == "tensorflow"
    (tmp_path / "keras.json").write_text('{"backend": "torch"}', encoding="utf-8")
    assert backends.keras_backend() == "torch"
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    assert backends.keras_backend() == "jax"
    monkeypatch.delenv("KERAS_BACKEND")
    (tmp_path / "keras.json").write_text("{not json", encoding="utf-8")
    assert backends.keras_backend() == "tensorflow"


def test_keras_backend_once_keras_is_imported():
    import keras

    assert backends.keras_backend() == keras.backend.backend()


def test_is_missing_tensorflow():
    assert backends.is_missing_tensorflow(ModuleNotFoundError("x", name="tensorflow_probability.python"))
    assert backends.is_missing_tensorflow(ModuleNotFoundError("x", name="keras_hub"))
    assert not backends.is_missing_tensorflow(ModuleNotFoundError("x", name="jax"))
    assert not backends.is_missing_tensorflow(ValueError("tensorflow"))


# A backend Keras cannot run: misspelt, or not installed (PyTorch is not
# among the requirements), set by KERAS_BACKEND or by a keras.json.
UNKNOWN_BACKEND = "the Keras backend 'tensorflw' (set by KERAS_BACKEND) is not one Keras knows: set KERAS_BACKEND to"


def _without_torch():
    done = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, timeout=120)
    if done.returncode == 0:
        pytest.skip("PyTorch is installed here")


@pytest.mark.parametrize("command", ["train --dataset trec --out X", "export --model run --name m", "predict --help"])
def test_every_command_on_an_unknown_backend_is_one_line(tmp_path, command):
    done = _run(CLI, command.split(), backend="tensorflw", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ganet_tf: error: {UNKNOWN_BACKEND}"), done.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []


def test_a_backend_that_is_not_installed_is_one_line_also_from_keras_json(tmp_path):
    _without_torch()
    home = tmp_path / "home"
    home.mkdir()
    (home / "keras.json").write_text('{"backend": "torch"}', encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "KERAS_BACKEND"}
    done = subprocess.run(
        [sys.executable, "-m", "ganet_tf", "train", "--dataset", "trec", "--out", "X"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**env, "KERAS_HOME": str(home), "PYTHONPATH": REPO},
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"ganet_tf: error: the Keras backend torch (set by {home / 'keras.json'}) is not installed: "
        "install it with python -m pip install torch, or run with KERAS_BACKEND=tensorflow."
    ]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["home"]


def test_on_an_unknown_backend_import_succeeds_and_the_layers_say_why():
    code = (
        "import ganet_tf\n"
        "for name in ('build_ganet', 'GateSampler', 'layers'):\n"
        "    try:\n"
        "        getattr(ganet_tf, name)\n"
        "    except ganet_tf.KerasBackendError as error:\n"
        "        print(error)\n"
        "try:\n"
        "    from ganet_tf.models import build_ganet_transformer\n"
        "except ganet_tf.KerasBackendError as error:\n"
        "    print(error)\n"
    )
    done = _run(code, backend="tensorflw")
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 4 and all(line.startswith(UNKNOWN_BACKEND) for line in lines)


@pytest.mark.parametrize("module, name", TENSORFLOW_PARTS)
def test_a_tensorflow_part_imported_by_its_own_path_on_another_backend_says_so_at_import(
    on_another_backend, module, name
):
    # TensorFlow installed, Keras on JAX: the error `ganet_tf.load_classifier` gives, at import.
    done = case_result(on_another_backend, module)
    assert done.returncode == 0, done.stderr[-2000:]
    (line,) = done.stdout.splitlines()
    package = module.split(".")[0]
    assert line.startswith(f"TensorFlowRequiredError ganet_tf.{package} needs the TensorFlow backend (")
    assert "but Keras runs on jax: run it with KERAS_BACKEND=tensorflow" in line
