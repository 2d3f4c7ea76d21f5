"""The layers on another Keras backend: the layer tests marked `backends`
run under JAX (and PyTorch, where it is installed) in a subprocess, the
model builders fit there and on TensorFlow with gate metrics that count
what their gates do, and a `.keras` file saved under TensorFlow loads
there with the same outputs."""

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


def _run(arguments, timeout, backend="jax"):
    """`python ARGUMENTS` under `backend`, with TensorFlow unimportable on
    another backend: the blocker runs first in a `-c` script, and
    `tests/conftest.py` installs it in a pytest run
    (`GANET_BLOCK_TENSORFLOW`)."""
    python = _python(backend)
    environment = dict(os.environ, KERAS_BACKEND=backend, GANET_BLOCK_TENSORFLOW="1")
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


# Fits both gated builders on prepared TREC ids (argv[1]) for one epoch of
# one batch, with validation (they fit, predict, and on another backend
# import nothing of TensorFlow), then counts the share of open gates and of
# attended tokens from the models' own gates (`build_explainer`): in
# validation and `evaluate` with the trained weights, and in training with
# the weights and random state the epoch started from (restored; not
# shuffled, as each row's noise follows its place in the batch).
GATE_METRICS = """
import os
import sys
import keras
import numpy as np
from ganet_tf.data.prepared_dataset import load_prepared
from ganet_tf.models import build_explainer
from ganet_tf.models import build_ganet
from ganet_tf.models import build_ganet_transformer

data = load_prepared(sys.argv[1])
x, y = data.ids["train"][:64], data.labels["train"][:64]
x_val, y_val = data.ids["validation"][:64], data.labels["validation"][:64]


def counts(model, x, training=False):
    explainer = build_explainer(model)
    outputs = explainer(x, training=True) if training else explainer.predict(x, batch_size=len(x), verbose=0)
    real = x != 0
    lengths = real.sum(axis=1)
    gates = (keras.ops.convert_to_numpy(outputs["gates"]) > 0.5) & real
    attended = (keras.ops.convert_to_numpy(outputs["attention"]) > 0) & real
    return {"density": np.mean(gates.sum(1) / lengths), "attended_density": np.mean(attended.sum(1) / lengths)}


# Two bucket sizes keep the transformer's compiled branches few. No
# dropout: the builders' dropout layers draw from a generator of their own
# that restoring the variables does not restore (PyTorch's global one), and
# the count replays the training epoch's gates.
# Widths of 8 and one layer: what is counted is the gates, not the fit.
TINY = {"embedding_dim": 8, "hidden_dim": 8, "num_layers": 1, "attention_units": 8, "auxiliary_hidden_dim": 4}
for build, options in (
    (build_ganet, {"dropout": 0.0, **TINY}),
    (
        build_ganet_transformer,
        {"dropout": 0.0, "sparse_training": True, "sparse_buckets": (0.5, 1.0), "num_heads": 2, **TINY},
    ),
):
    model = build(
        data.num_classes, vocabulary_size=data.vocabulary_size, sequence_length=x.shape[1], seed=0, **options
    )
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    start = [keras.ops.convert_to_numpy(variable) for variable in model.variables]
    logs = model.fit(
        x, y, batch_size=len(x), validation_data=(x_val, y_val), validation_batch_size=32, shuffle=False, verbose=0
    ).history
    evaluated = model.evaluate(x_val, y_val, batch_size=32, return_dict=True, verbose=0)
    assert np.isfinite(logs["loss"][0]) and model.predict(x_val[:4], verbose=0).shape == (4, data.num_classes)
    assert any(not np.allclose(a, keras.ops.convert_to_numpy(w)) for a, w in zip(start, model.variables))
    validation = counts(model, x_val)
    for variable, value in zip(model.variables, start):
        variable.assign(value)
    training = counts(model, x, training=True)
    for name in ("density", "attended_density"):
        assert abs(logs["val_" + name][0] - validation[name]) < 1e-6, (build.__name__, name, logs, validation)
        assert abs(evaluated[name] - validation[name]) < 1e-6, (build.__name__, name, evaluated, validation)
        assert abs(logs[name][0] - training[name]) < 1e-6, (build.__name__, name, logs, training)
        assert 0 < validation[name] < 1, validation
    print(build.__name__, {name: round(logs[name][0], 4) for name in sorted(logs)})
if keras.backend.backend() != "tensorflow":  # imported nothing of TensorFlow
    assert not [name for name in sys.modules if name.split(".")[0] in ("tensorflow", "tensorflow_probability")]
print("counted", keras.backend.backend())
"""


@pytest.fixture(scope="module")
def prepared_trec(tmp_path_factory):
    """A few hundred TREC questions, prepared as ids under TensorFlow."""
    from ganet_tf.cli import main

    path = str(tmp_path_factory.mktemp("prepared") / "trec.npz")
    assert main(["prepare", "--dataset", "trec", "--limit", "400", "--glove-vocabulary", "0", "--out", path]) == 0
    return path


@pytest.mark.parametrize("backend", ["tensorflow", *BACKENDS])
def test_gate_metrics_log_what_the_gates_do_on_every_backend(backend, prepared_trec):
    # Under JAX the compiled steps carry the metrics' sums as layer state.
    result = _run(["-c", GATE_METRICS, prepared_trec], timeout=600, backend=backend)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and f"counted {backend}" in result.stdout, output[-4000:]


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


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_keras_file_saved_under_tensorflow_loads_on_another_backend(tmp_path, backend):
    if keras.backend.backend() != "tensorflow":
        pytest.skip("saves the file under TensorFlow")
    _python(backend)  # skips before any work where the backend is not installed
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
    result = _run(["-c", LOAD_AND_PREDICT, model_path, inputs_path, outputs_path], timeout=300, backend=backend)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    loaded = np.load(outputs_path)
    got = [loaded[f"arr_{i}"] for i in range(len(loaded.files))]
    assert len(got) == len(expected)
    for old, new in zip(expected, got, strict=True):
        np.testing.assert_allclose(new, old, rtol=1e-5, atol=1e-5)
