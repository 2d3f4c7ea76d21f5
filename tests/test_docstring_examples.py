"""Every `>>>` example in the docstrings of `ganet_tf` runs here.

The modules are listed without importing them: every `.py` file of
`ganet_tf/` with a `>>>` line of code. Each test imports one module, finds its examples with
`doctest.DocTestFinder` and runs them in the module's namespace plus `np`,
`keras`, `ops` (`keras.ops`) and `ganet_tf`, from an empty folder, with
Keras's seeds set. An example that cannot run here (it needs a trained run
or data files) says `# doctest: +SKIP`, with the reason in a comment above
it; the examples of a module that needs an extra skip where the extra is
not installed.
"""

import doctest
import importlib
import io
import os
import re
import subprocess
import sys

import keras
import numpy as np
import pytest

import ganet_tf

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PACKAGE = os.path.join(REPO, "ganet_tf")

# A `>>>` line of code (not a comment alone): each must be an example found.
PROMPT = re.compile(r"^[ \t]*>>>(?![ \t]*(#|$))", re.MULTILINE)

# The packages of an extra that the examples of a module (or package) need.
EXTRAS = {
    "ganet_tf.tuning": ("keras_tuner",),
    "ganet_tf.seq2seq.subword_vocabulary": ("keras_hub", "sentencepiece", "tensorflow_text"),
}


def _modules_with_examples():
    """`{module name: number of >>> lines of code}` of every module with examples."""
    modules = {}
    for directory, subfolders, files in os.walk(PACKAGE):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        for file in sorted(files):
            if not file.endswith(".py"):
                continue
            with open(os.path.join(directory, file), encoding="utf-8") as handle:
                prompts = len(PROMPT.findall(handle.read()))
            if prompts:
                parts = os.path.relpath(os.path.join(directory, file[: -len(".py")]), REPO).split(os.sep)
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                modules[".".join(parts)] = prompts
    return modules


MODULES = _modules_with_examples()


def examples_report(name):
    """Runs the examples of module `name` from the current folder: the
    doctest report of the failed ones, "" where every one passed."""
    module = importlib.import_module(name)
    globals_ = {"np": np, "keras": keras, "ops": keras.ops, "ganet_tf": ganet_tf}
    tests = sorted(
        doctest.DocTestFinder().find(module, name, extraglobs=globals_),
        key=lambda test: (test.lineno or 0, test.name),
    )
    found = sum(len(test.examples) for test in tests)
    if found != MODULES[name]:
        return (
            f"{name} has {MODULES[name]} `>>>` lines of code, but doctest finds {found} examples "
            "in its docstrings: is a `>>>` outside a docstring?"
        )
    keras.utils.set_random_seed(0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = io.StringIO()
    for test in tests:
        runner.run(test, out=report.write)
    return report.getvalue() if runner.failures else ""


def test_the_modules_with_examples_are_found():
    assert len(MODULES) > 40
    assert {"ganet_tf.layers.gate_sampler", "ganet_tf.models.ganet", "ganet_tf.tuning.search_space"} <= set(MODULES)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_the_examples_of_a_module_run(name, tmp_path, monkeypatch):
    for package, modules in EXTRAS.items():
        if name == package or name.startswith(package + "."):
            for module in modules:
                pytest.importorskip(module, reason=f"the examples of {name} need {module}")
    monkeypatch.chdir(tmp_path)
    report = examples_report(name)
    assert not report, report


@pytest.mark.large
def test_the_layer_examples_run_on_jax(tmp_path):
    """The examples of `ganet_tf.layers` under JAX, TensorFlow unimportable
    (large: eager JAX compiles each new op; 45 s of CPU, 2.5 minutes on the
    2-core machine beside trainings)."""
    pytest.importorskip("jax")
    code = (
        "import sys\n"
        "from tests import tensorflow_blocker\n"
        "tensorflow_blocker.install()\n"
        "from tests.test_docstring_examples import MODULES, examples_report\n"
        "reports = [examples_report(name) for name in sorted(MODULES) if name.startswith('ganet_tf.layers.')]\n"
        "print(''.join(reports) or 'every layer example passed')\n"
    )
    environment = dict(
        os.environ,
        KERAS_BACKEND="jax",
        GANET_BLOCK_TENSORFLOW="1",
        JAX_DISABLE_MOST_OPTIMIZATIONS="1",
        PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])),
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=600
    )
    assert "every layer example passed" in result.stdout, (result.stdout + result.stderr)[-6000:]
