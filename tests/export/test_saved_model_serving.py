"""The exported SavedModel, loaded the way a server would: without ganet_tf."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from ganet_tf.data import load_vectorizer
from ganet_tf.data.vectorizer import vectorize
from ganet_tf.models import build_explainer

LONG = " ".join(["what is the name of the longest river in the world"] * 6)
TEXTS = ["", "naïve café — 東京", "What is the capital of France ?", LONG, "a question ?"]
GATED = {"gates", "gate_probabilities", "attention", "density"}
BASE_OUTPUTS = {"probabilities", "class_id", "label"}

# Runs in a fresh interpreter: `-I` and a foreign working directory keep the
# checkout off sys.path, and the `None` entry hides an installed copy too, so
# loading must succeed with TensorFlow alone.
CHILD = r"""
import json, sys
sys.modules["ganet_tf"] = None
try:
    import ganet_tf
except ImportError:
    pass
else:
    raise SystemExit("ganet_tf is importable in the child")
import numpy as np
import tensorflow as tf

request = json.load(open(sys.argv[1], encoding="utf-8"))
for name, path in request["exports"].items():
    loaded = tf.saved_model.load(path)
    serve = loaded.signatures["serving_default"]
    first = serve(text=tf.constant(request["texts"]))
    again = serve(text=tf.constant(request["texts"]))
    serve_ids = loaded.signatures["serve_token_ids"]
    by_ids = serve_ids(token_ids=tf.constant(request["ids"][name], tf.int32))
    plain = lambda value: np.array(value.numpy().tolist(), dtype=bytes) if value.dtype == tf.string else value.numpy()
    arrays = {}
    for key, value in first.items():
        assert np.array_equal(value.numpy(), again[key].numpy()), key  # deterministic
        arrays[key] = plain(value)
        arrays["ids_" + key] = plain(by_ids[key])
        arrays["dtype_" + key] = np.array(value.dtype.name)
    np.savez(request["out"] + "/" + name + ".npz", **arrays)

# saved_model_cli's calls, each as its command line runs it (absl's app.run
# exits), with what it printed.
import contextlib, io, traceback
from tensorflow.python.tools import saved_model_cli

calls = {}
for name, args in request["saved_model_cli"].items():
    sys.argv = ["saved_model_cli", *args]
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            saved_model_cli.main()
        except SystemExit as stop:
            code = stop.code or 0
        except BaseException:
            traceback.print_exc()
            code = 1
    calls[name] = {"returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()}
json.dump(calls, open(request["out"] + "/saved_model_cli.json", "w", encoding="utf-8"))
print("ok")
"""


def _clean_env():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return env


def _expected(run, texts):
    """In-memory outputs on the ids of the same vectorizer.

    The serving graph gives an all-padding row to the model as one [UNK]
    token (id 1), so the reference does the same.
    """
    model = keras.models.load_model(os.path.join(run, "model.keras"))
    vectorizer, class_names = load_vectorizer(os.path.join(run, "preprocessing.json"))
    ids = vectorize(vectorizer, texts)
    model_ids = ids.copy()
    model_ids[(ids == 0).all(axis=1), 0] = 1
    outputs = {key: np.asarray(value) for key, value in build_explainer(model)([model_ids], training=False).items()}
    outputs["probabilities_predict"] = model.predict(model_ids, verbose=0)
    outputs["all_padding"] = np.asarray(model(np.zeros_like(ids[:1]), training=False))
    return ids, class_names, outputs


def _saved_model_cli_calls(path):
    """`{name: saved_model_cli arguments}` that show and run the export at `path`."""
    run = ["run", "--dir", path, "--tag_set", "serve", "--signature_def", "serving_default"]
    return {"show": ["show", "--all", "--dir", path], "run": [*run, "--input_exprs", 'text=["a question ?"]']}


@pytest.fixture(scope="module")
def child(exports, runs, tmp_path_factory):
    """What a fresh interpreter without ganet_tf gets from the exports:
    `(outputs of both, {name: saved_model_cli call's returncode, stdout and
    stderr})` (one interpreter for all: each imports TensorFlow)."""
    _, paths = exports
    out = tmp_path_factory.mktemp("served")
    ids = {
        model: vectorize(load_vectorizer(os.path.join(run, "preprocessing.json"))[0], TEXTS)
        for model, run in runs.items()
    }
    request = {
        "exports": paths,
        "texts": TEXTS,
        "out": str(out),
        "ids": {model: value.tolist() for model, value in ids.items()},
        "saved_model_cli": _saved_model_cli_calls(paths["ganet"]),
    }
    (out / "request.json").write_text(json.dumps(request), encoding="utf-8")
    (out / "child.py").write_text(CHILD, encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, "-I", str(out / "child.py"), str(out / "request.json")],
        cwd=str(out),
        env=_clean_env(),
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.strip().endswith("ok")
    calls = json.loads((out / "saved_model_cli.json").read_text(encoding="utf-8"))
    return {model: dict(np.load(out / f"{model}.npz")) for model in paths}, calls


@pytest.fixture(scope="module")
def served(child):
    """Outputs of both exports, computed in a fresh interpreter."""
    return child[0]


@pytest.mark.parametrize("model", ["ganet", "soft"])
def test_outputs_match_the_keras_model(served, runs, model):
    arrays = served[model]
    ids, class_names, expected = _expected(runs[model], TEXTS)
    batch, steps = len(TEXTS), ids.shape[1]

    names = {key for key in arrays if not key.startswith(("ids_", "dtype_"))}
    wanted = BASE_OUTPUTS | (GATED if model == "ganet" else {"attention"})
    assert names == wanted
    dtypes = {key: str(arrays[f"dtype_{key}"]) for key in names}
    assert dtypes["probabilities"] == "float32" and dtypes["class_id"] == "int64"
    assert dtypes["label"] == "string"
    assert arrays["probabilities"].shape == (batch, len(class_names))
    assert arrays["class_id"].shape == arrays["label"].shape == (batch,)
    for key in names & GATED - {"density"}:
        assert dtypes[key] == "float32" and arrays[key].shape == (batch, steps)
    for key in names:
        if dtypes[key] == "float32":
            assert np.isfinite(arrays[key]).all(), key

    np.testing.assert_allclose(arrays["probabilities"], expected["probabilities"], atol=1e-5)
    np.testing.assert_allclose(arrays["probabilities"], expected["probabilities_predict"], atol=1e-5)
    np.testing.assert_array_equal(arrays["class_id"], expected["probabilities"].argmax(-1))
    assert [label.decode() for label in arrays["label"]] == [class_names[i] for i in arrays["class_id"]]
    real = (ids != 0).astype("float32")
    np.testing.assert_allclose(arrays["attention"], expected["attention"] * real, atol=1e-5)
    if model == "ganet":
        np.testing.assert_array_equal(arrays["gates"], expected["gates"] * real)
        assert set(np.unique(arrays["gates"])) <= {0.0, 1.0}
        np.testing.assert_allclose(arrays["gate_probabilities"], expected["gate_probabilities"] * real, atol=1e-5)
        density = arrays["gates"].sum(1) / np.maximum(real.sum(1), 1)
        np.testing.assert_allclose(arrays["density"], density, atol=1e-6)
        assert arrays["density"][0] == 0.0
    # The token-id signature gives the same answers on the same ids.
    for key in names:
        np.testing.assert_array_equal(arrays[f"ids_{key}"], arrays[key])
    # The in-memory model also copes with an all-padding row on CPU.
    assert np.isfinite(expected["all_padding"]).all()


def test_the_edge_texts_tokenise_as_expected(runs):
    vectorizer, _ = load_vectorizer(os.path.join(runs["ganet"], "preprocessing.json"))
    ids = vectorize(vectorizer, TEXTS)
    assert (ids[0] == 0).all()  # the empty text is all padding
    assert (ids[1] != 0).sum() >= 1  # non-ASCII text keeps its tokens (as [UNK])
    assert (ids[3] != 0).all()  # the long text fills every step: truncated
    assert len(LONG.split()) > ids.shape[1]


def test_saved_model_cli_shows_and_runs_the_signature(child):
    shown, ran = child[1]["show"], child[1]["run"]
    assert shown["returncode"] == 0, ("saved_model_cli show", shown["stderr"][-2000:])
    assert "signature_def['serving_default']" in shown["stdout"]
    assert "signature_def['serve_token_ids']" in shown["stdout"]
    assert "inputs['text'] tensor_info" in shown["stdout"] and "DT_STRING" in shown["stdout"]
    for key in ("probabilities", "class_id", "label", "gates", "attention", "density"):
        assert f"outputs['{key}']" in shown["stdout"]

    assert ran["returncode"] == 0, ("saved_model_cli run", ran["stderr"][-2000:])
    assert "Result for output key label" in ran["stdout"]
    assert "Result for output key probabilities" in ran["stdout"]


def _nodes(path):
    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as handle:
        proto.ParseFromString(handle.read())
    (graph,) = proto.meta_graphs
    yield "", graph.graph_def.node
    for function in graph.graph_def.library.function:
        yield function.signature.name, function.node_def


@pytest.mark.parametrize("model", ["ganet", "soft"])
def test_graph_has_no_python_callbacks_and_pins_no_model_op(exports, model):
    ops, pinned = set(), set()
    for function, nodes in _nodes(exports[1][model]):
        for node in nodes:
            ops.add(node.op)
            # Checkpoint save/restore run on CPU by design of tf.saved_model.
            if node.device and "traced_save" not in function and "traced_restore" not in function:
                pinned.add(node.op)
    assert not ops & {"PyFunc", "PyFuncStateless", "EagerPyFunc"}
    assert {"MatMul", "While", "Softmax", "LookupTableFindV2"} <= ops
    # Keras pins only TextVectorization's string ops to CPU (they have no GPU
    # kernels anyway); nothing of the model itself is pinned.
    assert "StringSplitV2" in pinned
    model_ops = {
        "MatMul",
        "Einsum",
        "BiasAdd",
        "While",
        "Softmax",
        "Sigmoid",
        "Tanh",
        "ReadVariableOp",
        "StatefulPartitionedCall",
        "TensorListReserve",
    }
    assert not pinned & model_ops


def test_warmup_requests_parse_and_run(exports):
    from tensorflow_serving.apis import prediction_log_pb2

    path = exports[1]["ganet"]
    warmup = os.path.join(path, "assets.extra", "tf_serving_warmup_requests")
    logs = [prediction_log_pb2.PredictionLog.FromString(record.numpy()) for record in tf.data.TFRecordDataset(warmup)]
    assert len(logs) == 2
    signature = tf.saved_model.load(path).signatures["serving_default"]
    sizes = []
    for log in logs:
        request = log.predict_log.request
        assert request.model_spec.name == "trec_ganet"
        assert request.model_spec.signature_name == "serving_default"
        texts = tf.make_ndarray(request.inputs["text"])
        assert texts.dtype == object and all(texts)
        outputs = signature(text=tf.constant(texts))
        assert outputs["probabilities"].shape[0] == len(texts)
        sizes.append(len(texts))
    assert sizes == [1, 8]
