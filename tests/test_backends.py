"""The layers on another Keras backend: the layer tests marked `backends`
run under JAX in a subprocess, and a `.keras` file saved under TensorFlow
loads there with the same outputs."""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Builds, in the subprocess, what test_keras_file_loads_under_jax saves.
LOAD_AND_PREDICT = """
import sys
import keras
import numpy as np
import ganet_tf.layers  # registers the layers
model = keras.models.load_model(sys.argv[1])
inputs = dict(np.load(sys.argv[2]))
outputs = model.predict(inputs, verbose=0)
np.savez(sys.argv[3], *[np.asarray(x) for x in keras.tree.flatten(outputs)])
"""


def _jax_environment(block_tensorflow):
    environment = dict(os.environ, KERAS_BACKEND="jax")
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))
    environment.pop("GANET_BLOCK_TENSORFLOW", None)
    if block_tensorflow:
        environment["GANET_BLOCK_TENSORFLOW"] = "1"
    return environment


def _tensorflow_can_be_blocked():
    """Whether `ganet_tf.layers` imports under JAX without TensorFlow
    (`import ganet_tf` may still import it; then the subprocess runs with
    TensorFlow importable, and only the backend is JAX)."""
    check = "from tests import tensorflow_blocker; tensorflow_blocker.install(); import ganet_tf.layers"
    result = subprocess.run(
        [sys.executable, "-c", check], cwd=REPO, env=_jax_environment(False), capture_output=True, timeout=300
    )
    return result.returncode == 0


def _run(arguments, block_tensorflow, timeout):
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=REPO,
        env=_jax_environment(block_tensorflow),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_backend_tests_of_every_layer_pass_under_jax():
    pytest.importorskip("jax")
    result = _run(
        ["-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:randomly", "-m", "backends", "tests/layers"],
        _tensorflow_can_be_blocked(),
        timeout=900,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"the layer tests failed under JAX:\n{output[-6000:]}"
    assert " passed" in output and "deselected" in output


def test_a_keras_file_saved_under_tensorflow_loads_under_jax(tmp_path):
    pytest.importorskip("jax")
    if keras.backend.backend() != "tensorflow":
        pytest.skip("saves the file under TensorFlow")
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
    expected = [np.asarray(x) for x in model.predict(inputs, verbose=0)]
    model_path, inputs_path, outputs_path = (str(tmp_path / name) for name in ("model.keras", "in.npz", "out.npz"))
    model.save(model_path)
    np.savez(inputs_path, **inputs)
    result = _run(["-c", LOAD_AND_PREDICT, model_path, inputs_path, outputs_path], False, timeout=300)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    loaded = np.load(outputs_path)
    got = [loaded[f"arr_{i}"] for i in range(len(loaded.files))]
    assert len(got) == len(expected)
    for old, new in zip(expected, got, strict=True):
        np.testing.assert_allclose(new, old, rtol=1e-5, atol=1e-5)
