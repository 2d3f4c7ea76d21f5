"""Reading back what `train --out` wrote, with one-line errors.

Every reader of a run folder (`export`, `explain`, the experiments) goes
through this module: `load_run` for the model with its preprocessing
(optionally serving its gates under another test rule, `inference_rule`),
`load_preprocessing` for the vectorizer and class names alone, `read_metrics`
for `metrics.json`. A truncated or corrupt file, a folder where a file should
be, a diverged (NaN) model or a vocabulary of another run is one error line
instead of a traceback.
"""

import json
import os

from ganet_tf.data.vectorizer import load_vectorizer
from ganet_tf.errors import GANetInputError
from ganet_tf.errors import first_line
from ganet_tf.layers.gate_sampler import INFERENCE_MODES
from ganet_tf.layers.gate_sampler import MODE_PARAMETERS
from ganet_tf.models.gate_layers import TARGET_RULES
from ganet_tf.models.gate_layers import resolve_gate_defaults
from ganet_tf.policy.flag_values import check_number
from ganet_tf.policy.flag_values import flag_name
from ganet_tf.policy.input_files import load_model_file
from ganet_tf.policy.non_finite_guard import non_finite_weights
from ganet_tf.policy.renamed_keys import with_current_keys
from ganet_tf.policy.run_folder import METRICS_FILE
from ganet_tf.policy.run_folder import MODEL_FILE
from ganet_tf.policy.run_folder import PREPROCESSING_FILE


def check_trained_model(model, vectorizer, class_names, path):
    """Raises one line if `model` is diverged or does not fit its preprocessing.

    Args:
        model: the loaded model.
        vectorizer, class_names: from its `preprocessing.json`.
        path: the model's path, for the message.
    """
    bad = non_finite_weights(model)
    if bad:
        raise GANetInputError(
            f"{path} has non-finite weights ({bad[0]}): its training diverged; retrain it with a lower --lr."
        )
    vocabulary = vectorizer.get_vocabulary(include_special_tokens=False)
    names = {layer.name for layer in model.layers}
    if "embedding" in names:
        input_dim = model.get_layer("embedding").input_dim
        if input_dim != len(vocabulary) + 2:
            raise GANetInputError(
                f"{path} embeds {input_dim} token ids but its preprocessing.json "
                f"has {len(vocabulary) + 2} (with padding and [UNK]): the two "
                "files come from different runs; copy the run folder whole."
            )
    classes = model.outputs[0].shape[-1]
    if classes is not None and classes != len(class_names):
        raise GANetInputError(
            f"the class names of preprocessing.json must name the model's {classes} "
            f"classes, got {len(class_names)}: {path} and it come from different runs."
        )


def model_file(run_dir):
    """The path of the model file of the run in `run_dir`."""
    return os.path.join(run_dir, MODEL_FILE)


def load_preprocessing(run_dir):
    """`(vectorizer, class_names)` of the run in `run_dir`."""
    return load_vectorizer(os.path.join(run_dir, PREPROCESSING_FILE))


def inference_rule(inference_mode=None, inference_density=None, inference_ratio=None, inference_mass=None):
    """The test-gate rule of the flags `--inference-mode` and its parameter.

    `predict`, `explain` and `export` serve a trained GA-Net under another
    rule of `GateSampler` than the one it was trained with (the gate
    probabilities do not depend on the rule; see `with_gate_inference`).

    Args:
        inference_mode: one of `GateSampler`'s inference modes, or None for
            the run's own rule.
        inference_density, inference_ratio, inference_mass: the parameter
            of `top_k`, `relative` and `nucleus`, in (0, 1]; only the one
            the mode takes. `relative` needs its ratio; without theirs,
            `top_k` and `nucleus` take the run's target density
            (`with_test_gates`), as `train` does.

    Returns:
        The keyword arguments of `with_gate_inference`, or None without a
        mode. A parameter without its mode, a missing ratio or a parameter
        of another mode raises `GANetInputError` (one line, naming the
        flags).

    Example:

    >>> inference_rule("relative", inference_ratio=0.9)
    {'inference_mode': 'relative', 'inference_ratio': 0.9}
    """
    values = {
        "inference_density": inference_density,
        "inference_ratio": inference_ratio,
        "inference_mass": inference_mass,
    }
    given = {name: value for name, value in values.items() if value is not None}
    modes = {parameter: mode for mode, parameter in MODE_PARAMETERS.items()}
    if inference_mode is None:
        if given:
            name = next(iter(given))
            raise GANetInputError(
                f"{flag_name(name)} is the parameter of --inference-mode {modes[name]}: give that mode too, "
                "or drop the flag to keep the run's own test gates."
            )
        return None
    if inference_mode not in INFERENCE_MODES:
        raise GANetInputError(f"Unknown --inference-mode {inference_mode!r}: choose one of {list(INFERENCE_MODES)}.")
    needed = MODE_PARAMETERS.get(inference_mode)
    for name in given:
        if name != needed:
            raise GANetInputError(
                f"{flag_name(name)} is the parameter of --inference-mode {modes[name]}, not {inference_mode}: drop it"
                + (f" and give {flag_name(needed)}." if needed else ".")
            )
    if needed is not None:
        if needed not in given:
            if inference_mode in TARGET_RULES:
                return {"inference_mode": inference_mode}
            raise GANetInputError(
                f"--inference-mode {inference_mode} needs its parameter: give {flag_name(needed)} in (0, 1]."
            )
        check_number(flag_name(needed), given[needed], above=0, at_most=1)
    return {"inference_mode": inference_mode, **given}


def with_target_parameter(model, rule, path):
    """`rule` with the parameter of `top_k` or `nucleus` that it lacks set
    as `train` sets it (`resolve_gate_defaults`), from the target density
    of `model`'s layer `gate_sparsity`."""
    mode = rule["inference_mode"]
    needed = MODE_PARAMETERS.get(mode)
    if mode not in TARGET_RULES or needed in rule:
        return rule
    sparsity = next((layer for layer in model.layers if layer.name == "gate_sparsity"), None)
    target = None if sparsity is None else sparsity.target_density
    if target is None:
        raise GANetInputError(
            f"--inference-mode {mode} needs {flag_name(needed)} in (0, 1] for {path}: "
            "it was trained without a target density (--target-density 0) to take it from."
        )
    _, _, density, mass = resolve_gate_defaults(None, target, mode, None)
    return {**rule, needed: {"inference_density": density, "inference_mass": mass}[needed]}


def with_test_gates(model, rule, path):
    """`model` with its test gates under `rule` (from `inference_rule`), or
    `model` itself when `rule` is None; one error line if it has no gates.

    A `top_k` or `nucleus` rule without its parameter takes the run's
    target density; `ganet_tf.models.gate_rule` of the result names the
    rule in full."""
    if rule is None:
        return model
    from ganet_tf.models import with_gate_inference

    if "gates" not in {layer.name for layer in model.layers}:
        raise GANetInputError(
            f"{path} has no gates to serve under --inference-mode (a {model.name} model): "
            "drop the flag; it applies to GA-Net runs."
        )
    return with_gate_inference(model, **with_target_parameter(model, rule, path))


def load_run(run_dir, test_gates=None):
    """`(model, vectorizer, class_names)` of the run in `run_dir`, checked.

    Args:
        run_dir: a folder written by `python -m ganet_tf train --out`.
        test_gates: optional rule from `inference_rule`: the model's gates
            then follow it at test instead of the run's own rule.

    Returns:
        The Keras model, the `TextVectorization` layer that makes its token
        ids and the class names, after `check_trained_model`.

    Example:

    >>> # Not run by the tests: needs a trained run (`train --out runs/trec_ganet`).
    >>> model, vectorizer, class_names = load_run("runs/trec_ganet")  # doctest: +SKIP
    >>> model.predict(vectorizer(["what is a lynx ?"]))  # doctest: +SKIP
    """
    path = model_file(run_dir)
    if not os.path.isfile(path):
        raise GANetInputError(
            f"No {MODEL_FILE} in {run_dir}: pass a folder written by `python -m ganet_tf train --out`."
        )
    vectorizer, class_names = load_preprocessing(run_dir)
    model = load_model_file(path)
    check_trained_model(model, vectorizer, class_names, path)
    return with_test_gates(model, test_gates, path), vectorizer, class_names


def read_metrics(run_dir):
    """The dict in `metrics.json` of the run in `run_dir` (scores and config).

    A config recorded under the gate options' old names (`tau`, `lam`, ...)
    comes back under the names of now (`with_current_keys`).
    """
    path = os.path.join(run_dir, METRICS_FILE)
    if not os.path.isfile(path):
        raise GANetInputError(
            f"No {METRICS_FILE} in {run_dir}: pass a folder written by `python -m ganet_tf train --out`."
        )
    try:
        with open(path, encoding="utf-8") as handle:
            metrics = json.load(handle)
    except (ValueError, UnicodeDecodeError) as error:
        raise GANetInputError(
            f"{path} is not valid JSON ({first_line(error, 120)}): copy it again from the run folder, or retrain."
        ) from None
    if not isinstance(metrics, dict):
        raise GANetInputError(f"{path} holds no JSON object: copy it again, or retrain.")
    if isinstance(metrics.get("config"), dict):
        metrics["config"] = with_current_keys(metrics["config"])
    return metrics
