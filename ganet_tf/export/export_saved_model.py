"""`python -m ganet_tf export`: a trained run -> a TF Serving SavedModel."""

import json
import os
import re
import shutil
import tempfile
import time

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from ganet_tf.errors import GANetInputError
from ganet_tf.export.model_config import version_numbers
from ganet_tf.export.model_config import write_model_config
from ganet_tf.export.serving_archive import TEXT_INPUT
from ganet_tf.export.serving_archive import TEXT_SIGNATURE
from ganet_tf.export.serving_archive import build_serving_archive
from ganet_tf.export.warmup import WARMUP_DIRECTORY
from ganet_tf.export.warmup import WARMUP_FILE
from ganet_tf.export.warmup import read_warmup_requests
from ganet_tf.export.warmup import serving_apis
from ganet_tf.export.warmup import vocabulary_texts
from ganet_tf.export.warmup import write_warmup_requests
from ganet_tf.models.gate_layers import gate_rule
from ganet_tf.policy.disk_space import tensorflow_disk_errors
from ganet_tf.policy.interruption import check_stop_signal
from ganet_tf.policy.interruption import critical_section
from ganet_tf.policy.run_folder import METRICS_FILE
from ganet_tf.policy.run_folder import PREPROCESSING_FILE
from ganet_tf.policy.run_folder import check_writable_folder
from ganet_tf.policy.run_folder import pid_alive
from ganet_tf.policy.trained_run import check_trained_model
from ganet_tf.policy.trained_run import load_model_file
from ganet_tf.policy.trained_run import load_preprocessing
from ganet_tf.policy.trained_run import model_file
from ganet_tf.policy.trained_run import read_metrics
from ganet_tf.policy.trained_run import with_test_gates

# TF Serving puts the name in URLs (`/v1/models/NAME:predict`) and paths.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
# Graph ops that call back into Python: they cannot run in TF Serving.
PYTHON_CALLBACK_OPS = ("PyFunc", "PyFuncStateless", "EagerPyFunc")
METRICS_COPY = "ganet_tf_metrics.json"
# Staging folders of an unknown process older than this are left-overs.
STALE_SECONDS = 24 * 3600


def export_saved_model(
    model_dir,
    name,
    version=None,
    base="saved_models",
    overwrite=False,
    warmup_texts=None,
    test_gates=None,
):
    """Exports a trained run as `base/name/version/` for TF Serving.

    The SavedModel's `serving_default` signature takes a batch of raw
    strings (input `text`) and returns `probabilities`, `class_id`, `label`
    and, for attention and gated models, `attention`, `gates`,
    `gate_probabilities` and `density` (see
    `ganet_tf.export.serving_archive`). Its `assets.extra/` holds TF
    Serving warmup requests and a copy of the run's `metrics.json`.

    The version is written to a hidden folder beside the target, loaded
    back and checked (warmup requests run, outputs finite, no Python
    callbacks in the graph), then renamed into place: an export that fails
    or is interrupted never leaves a version folder (a killed process may
    leave a hidden `.export-*` folder, which TF Serving ignores). Finally
    `base/models.config` is regenerated to list every model under `base`.

    Args:
        model_dir: a folder written by `python -m ganet_tf train --out`,
            with `model.keras` and `preprocessing.json`, or the path of
            that `model.keras` (with `preprocessing.json` beside it).
        name: the model name TF Serving serves it under: letters, digits,
            `_`, `.` and `-`, starting with a letter or digit.
        version: positive integer; by default one more than the newest
            version under `base/name` (1 for the first).
        base: folder of all exported models. Defaults to `"saved_models"`.
        overwrite: replace an existing version. Defaults to `False`.
        warmup_texts: optional list of texts for the warmup requests; by
            default texts made of frequent vocabulary tokens.
        test_gates: optional test-gate rule of a GA-Net run, from
            `ganet_tf.policy.trained_run.inference_rule`: the export
            serves it instead of the run's own rule (no retraining); the
            `metrics.json` copy then names it under `served_test_gates`.

    Returns:
        The path of the written version folder.

    Example:

    >>> # Not run by the tests: needs a trained run (`train --out runs/trec_ganet`).
    >>> export_saved_model("runs/trec_ganet", "trec_ganet")  # doctest: +SKIP
    'saved_models/trec_ganet/1'
    """
    check_export_arguments(name, version, warmup_texts)
    model_dir, model_path = _run_files(model_dir)
    serving_apis()  # fail early without tensorflow-serving-api
    vectorizer, class_names = load_preprocessing(model_dir)
    target = version_folder(base, name, version, overwrite)
    archive, served_rule = _serving_archive(model_dir, model_path, vectorizer, class_names, test_gates)
    if warmup_texts is None:
        warmup_texts = vocabulary_texts(
            vectorizer.get_vocabulary(include_special_tokens=False),
            vectorizer.get_config()["output_sequence_length"],
        )
    write_version(archive, target, name, list(warmup_texts), model_dir, overwrite, served_rule)
    write_model_config(base)
    return target


def check_export_arguments(name, version, warmup_texts):
    """One input error for a bad model name, version or warmup text list."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise GANetInputError(
            f"Bad model name {name!r}: use letters, digits, '_', '.' and '-', starting with a letter or digit."
        )
    if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 1):
        raise GANetInputError(f"--version must be a positive integer, got {version}.")
    if warmup_texts is not None and (
        isinstance(warmup_texts, str) or not warmup_texts or not all(isinstance(text, str) for text in warmup_texts)
    ):
        raise GANetInputError("Warmup texts must be a non-empty list of strings.")


def _run_files(model_dir):
    """`(run folder, model file)` of a run folder or of its `model.keras`."""
    # The `.keras` file itself stands for its run folder (the one with
    # `preprocessing.json` beside it).
    model_path = model_file(model_dir)
    if model_dir.endswith(".keras") and os.path.isfile(model_dir):
        model_dir, model_path = os.path.dirname(model_dir) or ".", model_dir
        if not os.path.isfile(os.path.join(model_dir, PREPROCESSING_FILE)):
            raise GANetInputError(
                f"No preprocessing.json beside {model_path}: export needs the run "
                "folder written by `python -m ganet_tf train --out` (model.keras and "
                "preprocessing.json together)."
            )
    if not os.path.isdir(model_dir):
        raise GANetInputError(
            f"Model folder not found: {model_dir}. Give a folder written by "
            "`python -m ganet_tf train --out`, or its model.keras."
        )
    if not os.path.isfile(model_path):
        raise GANetInputError(
            f"No model.keras in {model_dir}: give a folder written by `python -m ganet_tf train --out`."
        )
    return model_dir, model_path


def version_folder(base, name, version, overwrite):
    """`base/name/version`, the next version by default; checked, not made
    (stale staging folders of dead exports under `base/name` are removed)."""
    check_writable_folder(base, "--base")
    model_root = os.path.join(base, name)
    check_writable_folder(model_root, "--base")
    if os.path.isdir(model_root):
        clean_stale_exports(model_root)
    if version is None:
        version = max(version_numbers(model_root), default=0) + 1
    target = os.path.join(model_root, str(version))
    if os.path.exists(target) and not overwrite:
        raise GANetInputError(
            f"Version {version} of {name} exists at {target}: pass --overwrite to replace it, or another --version."
        )
    return target


def _serving_archive(model_dir, model_path, vectorizer, class_names, test_gates):
    model = _load_model(model_path)
    check_trained_model(model, vectorizer, class_names, model_path)
    model = with_test_gates(model, test_gates, model_path)
    try:
        archive = build_serving_archive(model, vectorizer, class_names)
    except ValueError as error:
        raise GANetInputError(f"Cannot export {model_dir}: {error}") from error
    return archive, None if test_gates is None else gate_rule(model)


def write_version(archive, target, name, warmup_texts, model_dir, overwrite, test_gates=None, input_name=TEXT_INPUT):
    """Writes the version to a hidden staging folder, checks it and renames
    it to `target`; on any failure removes what it made.

    `archive.write_out(folder, verbose=False)` writes the SavedModel; the
    warmup requests send `warmup_texts` as the signature's `input_name`,
    and `model_dir`'s `metrics.json` is copied beside them. A full disk is
    an `OSError` naming `target` (`ganet_tf.policy.tensorflow_disk_errors`),
    which the command line prints as one line naming the fix."""
    model_root = os.path.dirname(target)
    base = os.path.dirname(model_root)
    created = [path for path in (base, model_root) if not os.path.isdir(path)]
    os.makedirs(model_root, exist_ok=True)
    staging = None
    try:
        staging = tempfile.mkdtemp(prefix=f".export-{os.path.basename(target)}-{os.getpid()}-", dir=model_root)
        with tensorflow_disk_errors(target):
            archive.write_out(staging, verbose=False)
            write_warmup_requests(staging, warmup_texts, name, input_name)
        metrics = os.path.join(model_dir, METRICS_FILE)
        if os.path.isfile(metrics):
            _copy_metrics(metrics, os.path.join(staging, WARMUP_DIRECTORY, METRICS_COPY), test_gates)
        try:
            check_saved_model(staging)
        except RuntimeError as error:
            raise GANetInputError(f"Cannot export {model_dir}: {error}") from error
        os.chmod(staging, 0o755)  # mkdtemp makes it private to this user
        check_stop_signal()
        with critical_section():
            _move_into_place(staging, target, overwrite)
        staging = None
    except BaseException:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        for path in reversed(created):
            if os.path.isdir(path) and not os.listdir(path):
                os.rmdir(path)
        raise


def _copy_metrics(source, target, test_gates):
    """Copies the run's `metrics.json`; with `test_gates`, adds the rule the
    export serves as `served_test_gates` (its scores stay the run's own)."""
    if test_gates is None:
        shutil.copyfile(source, target)
        return
    metrics = read_metrics(os.path.dirname(source))
    metrics["served_test_gates"] = dict(test_gates)
    with open(target, "w", encoding="utf-8") as handle:
        json.dump(metrics, handle, indent=1)


def served_test_gates(saved_model_dir):
    """The test-gate rule an export serves instead of its run's own
    (`served_test_gates` of its `metrics.json` copy), or None."""
    path = os.path.join(saved_model_dir, WARMUP_DIRECTORY, METRICS_COPY)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return json.load(handle).get("served_test_gates")


def check_saved_model(saved_model_dir):
    """Loads an export and runs its warmup requests; raises if anything is off.

    Checks that the graph holds no Python callbacks (`PYTHON_CALLBACK_OPS`),
    that every warmup request runs through `serving_default` (with the
    inputs it names) and that all float outputs are finite.
    """
    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(saved_model_dir, "saved_model.pb"), "rb") as handle:
        proto.ParseFromString(handle.read())
    for graph in proto.meta_graphs:
        nodes = list(graph.graph_def.node)
        for function in graph.graph_def.library.function:
            nodes.extend(function.node_def)
        callbacks = {node.op for node in nodes} & set(PYTHON_CALLBACK_OPS)
        if callbacks:
            raise RuntimeError(
                f"The exported graph calls back into Python ({sorted(callbacks)}); TF Serving cannot run it."
            )
    signature = tf.saved_model.load(saved_model_dir).signatures[TEXT_SIGNATURE]
    warmup = os.path.join(saved_model_dir, WARMUP_DIRECTORY, WARMUP_FILE)
    for request in read_warmup_requests(warmup):
        inputs = {key: tf.constant(tf.make_ndarray(value)) for key, value in request.inputs.items()}
        outputs = signature(**inputs)
        for key, value in outputs.items():
            if value.dtype.is_floating and not np.all(np.isfinite(value.numpy())):
                raise RuntimeError(f"The exported model gives non-finite {key!r}.")


def _load_model(path):
    return load_model_file(path)


def clean_stale_exports(model_root):
    """Deletes the staging folders of exports whose process is gone.

    `.export-VERSION-PID-*` and `.replaced-VERSION-PID-*` folders of a dead
    process are removed; a version moved aside (`.replaced-*`) whose
    replacement never arrived is moved back first. Staging folders without
    a process id (older ganet_tf) are removed after `STALE_SECONDS`.
    """
    for entry in sorted(os.listdir(model_root)):
        kind, _, rest = entry.partition("-")
        if kind not in (".export", ".replaced"):
            continue
        path = os.path.join(model_root, entry)
        parts = rest.split("-")
        if len(parts) >= 3 and parts[1].isdigit():
            if pid_alive(int(parts[1])):
                continue
        elif time.time() - os.path.getmtime(path) < STALE_SECONDS:
            continue
        target = os.path.join(model_root, parts[0])
        if kind == ".replaced" and parts[0].isdigit() and not os.path.exists(target):
            os.rename(path, target)
        else:
            shutil.rmtree(path, ignore_errors=True)


def _move_into_place(staging, target, overwrite):
    if not os.path.exists(target):
        os.rename(staging, target)
        return
    if not overwrite:
        raise GANetInputError(f"{target} appeared during the export: pass --overwrite to replace it.")
    # Swap the old version out, the new one in, then delete the old one.
    parent = os.path.dirname(target)
    retired = tempfile.mkdtemp(prefix=f".replaced-{os.path.basename(target)}-{os.getpid()}-", dir=parent)
    os.replace(target, retired)
    try:
        os.rename(staging, target)
    except BaseException:
        os.replace(retired, target)
        raise
    shutil.rmtree(retired, ignore_errors=True)
