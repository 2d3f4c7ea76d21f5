"""The layers on another Keras backend: the layer tests marked `backends`
run under JAX (and PyTorch, where it is installed) in a subprocess, the
model builders fit there and on TensorFlow with gate metrics that count
what their gates do, and a `.keras` file saved under TensorFlow loads
there with the same outputs.

The checks themselves are `tests/backend_checks.py`: on TensorFlow they run
in this process; on another backend one subprocess makes both (Keras and
the backend are imported once for them).
"""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from tests import backend_checks
from tests.made_once import made_once

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# PyTorch is not among the requirements (its wheels with CUDA are several
# GB): the PyTorch runs use the Python of `GANET_TORCH_PYTHON` (e.g. a
# virtualenv made with `--system-site-packages` plus a CPU wheel of torch),
# or this one where torch is installed, and skip otherwise.
TORCH_PYTHON = os.environ.get("GANET_TORCH_PYTHON")


def _python(backend):
    """The Python that runs `backend`, or skips the test."""
    if backend in ("jax", "tensorflow"):
        return sys.executable
    if TORCH_PYTHON:
        return TORCH_PYTHON
    pytest.importorskip("torch", reason="PyTorch is not installed (set GANET_TORCH_PYTHON to a Python that has it)")
    return sys.executable


BACKENDS = ["jax", "torch"]


def _run(arguments, timeout, backend="jax", **variables):
    """`python ARGUMENTS` under `backend` (and the environment `variables`),
    with TensorFlow unimportable on another backend: the blocker runs first
    in a `-c` script, and `tests/conftest.py` installs it in a pytest run
    (`GANET_BLOCK_TENSORFLOW`)."""
    python = _python(backend)
    environment = dict(os.environ, KERAS_BACKEND=backend, GANET_BLOCK_TENSORFLOW="1", **variables)
    if backend == "tensorflow":
        del environment["GANET_BLOCK_TENSORFLOW"]
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))
    if arguments[0] == "-c" and backend != "tensorflow":
        arguments = [
            "-c",
            "from tests import tensorflow_blocker\ntensorflow_blocker.install()\n" + arguments[1],
            *arguments[2:],
        ]
    return subprocess.run(
        [python, *arguments],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def prepared_trec(tmp_path_factory):
    """A few hundred TREC questions, prepared as ids under TensorFlow."""

    def prepare(folder):
        from ganet_tf.cli import main

        path = str(folder / "trec.npz")
        assert main(["prepare", "--dataset", "trec", "--limit", "400", "--glove-vocabulary", "0", "--out", path]) == 0
        return path

    return made_once(tmp_path_factory, "backends_prepared_trec", prepare)


def _save_under_tensorflow(folder):
    """`folder` with model.keras (the gated layers, saved under TensorFlow),
    inputs.npz and its outputs here, expected.npz."""
    from ganet_tf.layers import GatedAttentionPooling
    from ganet_tf.layers import GatedMultiHeadAttention
    from ganet_tf.layers import GatedTransformerEncoder
    from ganet_tf.layers import GateSampler

    states = keras.Input((7, 8), name="states")
    logits = keras.Input((7,), name="logits")
    gates = GateSampler(inference_mode="top_k", inference_density=0.5)(logits)
    encoded = GatedTransformerEncoder(intermediate_dim=16, num_heads=2, token_dropping=True)(states, gates=gates)
    attended = GatedMultiHeadAttention(num_heads=2, key_dim=4, sparse_inference=True)(encoded, encoded, gates=gates)
    context, weights = GatedAttentionPooling(units=4, sparse_inference=True)(attended, gates=gates)
    model = keras.Model({"states": states, "logits": logits}, [context, weights, attended])
    rng = np.random.default_rng(0)
    inputs = {
        "states": rng.normal(size=(3, 7, 8)).astype("float32"),
        "logits": rng.normal(size=(3, 7)).astype("float32"),
    }
    np.savez(folder / "expected.npz", *[np.asarray(x) for x in model.predict(inputs, verbose=0)])
    model.save(folder / "model.keras")
    np.savez(folder / "inputs.npz", **inputs)
    return str(folder)


@pytest.fixture(scope="module")
def saved_under_tensorflow(tmp_path_factory):
    """The folder of `_save_under_tensorflow`; None where this process is not on TensorFlow."""
    if keras.backend.backend() != "tensorflow":
        return None
    return made_once(tmp_path_factory, "backends_saved_under_tensorflow", _save_under_tensorflow)


def _on_another_backend(request, backend):
    """`backend_checks.main` under `backend` in a subprocess, once a test
    run: the gate metrics, and the `.keras` file saved under TensorFlow
    loaded there. `{"returncode", "stdout", "stderr"}`; skips where the
    backend is not installed."""
    _python(backend)
    prepared = request.getfixturevalue("prepared_trec")
    saved = request.getfixturevalue("saved_under_tensorflow")
    code = "import sys\nfrom tests import backend_checks\nbackend_checks.main(*sys.argv[1:])\n"

    def check(_):
        # XLA's optimizations cost more than they save for a step or two of
        # a model this small (the JAX run: 89 s against 56 s on 2 cores);
        # the logged metrics are compared with counts made in the same run.
        variables = {"JAX_DISABLE_MOST_OPTIMIZATIONS": "1"} if backend == "jax" else {}
        result = _run(["-c", code, prepared, *filter(None, [saved])], timeout=600, backend=backend, **variables)
        return {"returncode": result.returncode, "stdout": result.stdout, "stderr": result.stderr}

    return made_once(request.getfixturevalue("tmp_path_factory"), f"backends_on_{backend}", check)


@pytest.mark.parametrize("backend", ["tensorflow", *BACKENDS])
def test_gate_metrics_log_what_the_gates_do_on_every_backend(request, backend, prepared_trec):
    # Under JAX the compiled steps carry the metrics' sums as layer state.
    if backend == "tensorflow" == keras.backend.backend():  # this process
        backend_checks.gate_metrics(prepared_trec)
        return
    result = _on_another_backend(request, backend)
    output = result["stdout"] + result["stderr"]
    assert f"counted {backend}" in result["stdout"], output[-4000:]


@pytest.mark.large
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_backend_tests_of_every_layer_pass(backend):
    result = _run(
        ["-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:randomly", "-m", "backends", "tests/layers"],
        timeout=900,
        backend=backend,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"the layer tests failed under {backend}:\n{output[-6000:]}"
    assert " passed" in output and "deselected" in output


# Keras' own `run_layer_test` on every public layer, and the regression
# tests of the two failures it found under JAX, in the default run (the
# other `backends` layer tests run there with --run_large).
KERAS_LAYER_TESTS = (
    "tests/layers/test_keras_layer_test.py",
    "tests/layers/test_gated_transformer_encoder.py::test_token_dropping_in_mixed_precision",
    "tests/layers/test_gated_attention_pooling.py::test_attended_density_is_tracked_when_built_from_the_inputs_shape_alone",
)


@pytest.mark.parametrize("backend", BACKENDS)
def test_keras_layer_tests_pass_on_another_backend(backend):
    # As in `_on_another_backend`: XLA's optimizations cost more than they
    # save for these one-step fits.
    variables = {"JAX_DISABLE_MOST_OPTIMIZATIONS": "1"} if backend == "jax" else {}
    result = _run(
        ["-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:randomly", "-m", "backends", *KERAS_LAYER_TESTS],
        timeout=600,
        backend=backend,
        **variables,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"Keras' layer tests failed under {backend}:\n{output[-6000:]}"
    assert " passed" in output


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_keras_file_saved_under_tensorflow_loads_on_another_backend(request, backend, saved_under_tensorflow):
    if saved_under_tensorflow is None:
        pytest.skip("saves the file under TensorFlow")
    result = _on_another_backend(request, backend)
    assert f"loaded {backend}" in result["stdout"], (result["stdout"] + result["stderr"])[-4000:]
    expected = np.load(os.path.join(saved_under_tensorflow, "expected.npz"))
    loaded = np.load(os.path.join(saved_under_tensorflow, f"outputs-{backend}.npz"))
    assert len(loaded.files) == len(expected.files)
    for i in range(len(expected.files)):
        np.testing.assert_allclose(loaded[f"arr_{i}"], expected[f"arr_{i}"], rtol=1e-5, atol=1e-5)
