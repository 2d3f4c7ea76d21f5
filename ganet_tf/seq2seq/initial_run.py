"""`--init-from`: the finished run a `seq2seq` run starts from, checked, and its weights copied."""

import dataclasses
import os

from ganet_tf.errors import GANetInputError
from ganet_tf.policy import load_model_file
from ganet_tf.policy import read_run_json
from ganet_tf.policy.non_finite_guard import non_finite_weights
from ganet_tf.policy.renamed_keys import with_current_keys
from ganet_tf.policy.run_folder import METRICS_FILE
from ganet_tf.policy.run_folder import MODEL_FILE
from ganet_tf.seq2seq.config import PREDATES
from ganet_tf.seq2seq.config import Seq2SeqConfig
from ganet_tf.seq2seq.config import resolve_defaults
from ganet_tf.seq2seq.run_vocabularies import VOCABULARY_FILE
from ganet_tf.seq2seq.run_vocabularies import is_vocabularies

# What a run started from another (`--init-from`) must share with it: the
# data, hence the vocabularies, and the shapes of the shared weights.
INIT_SHARED = (
    "task",
    "limit",
    "min_count",
    "min_length",
    "max_length",
    "hidden",
    "embedding_dim",
    "attention_units",
    "input_feeding",
    "tokenizer",
    "vocabulary_size",
)


INIT_FIX = "pass the --out folder of a finished seq2seq run (copy it again, or train it again)"


def finished_run_files(path, flag="--init-from "):
    """`(metrics, vocabularies)` of the finished run `path`, its config in
    today's option names (`with_current_keys`); a folder that is no
    finished run, or one with a damaged file, is one input error naming the
    file (after `flag`, the flag that named the folder)."""
    files = [os.path.join(path, name) for name in (MODEL_FILE, VOCABULARY_FILE, METRICS_FILE)]
    if not all(os.path.isfile(name) for name in files):
        raise GANetInputError(
            f"{flag}{path} is not a finished seq2seq run (it needs {MODEL_FILE}, {VOCABULARY_FILE} "
            f"and {METRICS_FILE}): pass the --out folder of an earlier seq2seq run."
        )
    what = "a finished seq2seq run"
    metrics = read_run_json(files[2], what, INIT_FIX)
    vocabularies = read_run_json(files[1], what, INIT_FIX)
    if not isinstance(metrics, dict) or not isinstance(metrics.get("config"), dict):
        raise GANetInputError(f"{files[2]} is damaged (no config): {INIT_FIX}.")
    if not is_vocabularies(vocabularies):
        raise GANetInputError(f"{files[1]} is damaged (no source and target token lists): {INIT_FIX}.")
    return {**metrics, "config": with_current_keys(metrics["config"])}, vocabularies


def check_initial_run(config):
    """Checks the finished run `--init-from` names against `config`: a
    folder that is no finished run, one with a damaged file, or one
    trained on other data or with other shapes, is one input error (its
    model is loaded and checked when its weights are copied,
    `load_initial_weights`)."""
    path = config.init_from
    config = resolve_defaults(config)
    metrics, _ = finished_run_files(path)
    initial = {**dataclasses.asdict(Seq2SeqConfig()), **PREDATES, **metrics["config"]}
    changes = [
        f"--{name.replace('_', '-')} {initial.get(name)} there, {getattr(config, name)} here"
        for name in INIT_SHARED
        if initial.get(name) != getattr(config, name)
    ]
    if changes:
        raise GANetInputError(
            f"--init-from {path} was trained with other data or shapes: {'; '.join(changes)}. "
            "Pass the same flags as that run."
        )


def _initial_model(path):
    """The model of the `--init-from` run, loaded and checked (one line if damaged)."""
    model_path = os.path.join(path, MODEL_FILE)
    model = load_model_file(model_path)
    bad = non_finite_weights(model)
    if bad:
        raise GANetInputError(f"{model_path} has non-finite weights ({bad[0]}): its training diverged; {INIT_FIX}.")
    return model


def load_initial_weights(model, path):
    """Copies every weighted sublayer of the run in `path` into the same-named
    sublayer of `model` (the embeddings, encoder, bridges, decoder, attention
    scores and output layer); the layers only `model` has, such as the gates'
    auxiliary network, keep their fresh weights."""
    initial = _initial_model(path)
    names = {layer.name: layer for layer in model.layers}
    for layer in initial.layers:
        if not layer.weights:
            continue
        target = names.get(layer.name)
        shapes = [tuple(w.shape) for w in layer.weights]
        if target is None or [tuple(w.shape) for w in target.weights] != shapes:
            raise GANetInputError(
                f"--init-from {path}: its layer {layer.name!r} has no counterpart of the same shapes in this "
                "model; start from a run of the same task and sizes."
            )
        target.set_weights(layer.get_weights())
