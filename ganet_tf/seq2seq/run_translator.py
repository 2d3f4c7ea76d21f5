"""The translator of a finished `seq2seq --out` folder, its files checked."""

import json
import os

import ganet_tf.seq2seq.encoder_decoder  # noqa: F401  (registers EncoderDecoder for loading)
from ganet_tf.errors import GANetInputError
from ganet_tf.policy.non_finite_guard import non_finite_weights
from ganet_tf.policy.run_folder import MODEL_FILE
from ganet_tf.policy.run_folder import PREPROCESSING_FILE
from ganet_tf.policy.trained_run import load_model_file
from ganet_tf.policy.trained_run import with_target_parameter
from ganet_tf.seq2seq.run_vocabularies import VOCABULARY_FILE
from ganet_tf.seq2seq.run_vocabularies import vocabularies_from_json
from ganet_tf.seq2seq.translator import check_vocabulary_sizes


def is_seq2seq_run(path):
    """Whether `path` is a folder with a seq2seq run's `vocabularies.json`."""
    return os.path.isfile(os.path.join(os.fspath(path), VOCABULARY_FILE))


def load_translator_parts(path, test_gates=None):
    """What a translator of a `python -m ganet_tf seq2seq --out` folder is
    made of, checked: `(model, source_vocabulary, target_vocabulary)`.

    Args:
        path: the run folder, with `model.keras` and `vocabularies.json`.
        test_gates: optional test-gate rule of a gated run, from
            `ganet_tf.policy.trained_run.inference_rule`: its gates then
            follow it at test instead of the run's own rule
            (`with_translation_gates`).

    Returns:
        The trained `EncoderDecoder` and its two vocabularies, for
        `ganet_tf.seq2seq.translator.Translator` or `TextTranslator`. A
        missing, truncated, diverged or mismatched file raises
        `GANetInputError` with one line naming the file and the fix.
    """
    path = os.fspath(path)
    vocabulary_path = os.path.join(path, VOCABULARY_FILE)
    if not os.path.isfile(vocabulary_path):
        if os.path.isfile(os.path.join(path, PREPROCESSING_FILE)):
            raise GANetInputError(
                f"{path} is a classification run ({PREPROCESSING_FILE}, no {VOCABULARY_FILE}): "
                f"classify with `python -m ganet_tf predict --model {path}`."
            )
        raise GANetInputError(
            f"No {VOCABULARY_FILE} in {path}: pass a folder written by `python -m ganet_tf seq2seq --out`."
        )
    source, target = vocabularies_from_json(_read_vocabularies(vocabulary_path), vocabulary_path)
    model_path = os.path.join(path, MODEL_FILE)
    if not os.path.isfile(model_path):
        raise GANetInputError(
            f"No {MODEL_FILE} in {path}: pass a folder written by `python -m ganet_tf seq2seq --out`, copied whole."
        )
    model = load_model_file(model_path)
    if not hasattr(model, "encode") or not hasattr(model, "decode_step"):
        raise GANetInputError(
            f"{model_path} is not a seq2seq model: pass a folder written by `python -m ganet_tf seq2seq --out`."
        )
    bad = non_finite_weights(model)
    if bad:
        raise GANetInputError(
            f"{model_path} has non-finite weights ({bad[0]}): its training diverged; retrain it with a lower --lr."
        )
    try:
        check_vocabulary_sizes(model, source, target)
    except ValueError as error:
        raise GANetInputError(
            f"{model_path} and {vocabulary_path} come from different runs ({error}): copy the run folder whole."
        ) from None
    return with_translation_gates(model, test_gates, model_path), source, target


def with_translation_gates(model, rule, path):
    """A loaded seq2seq `model` whose test gates follow `rule` (from
    `inference_rule`), or `model` as it is when `rule` is None.

    The gate probabilities do not depend on the rule, so a gated run can be
    served at another density without retraining. The rule is set on the
    model's layer `gates` in place (the model is the one loaded for the
    translator); a `top_k` or `nucleus` rule without its parameter takes
    the run's target density, as `train` does, and `gate_rule(model)`
    names the rule in full. A model without gates (`bahdanau`,
    hierarchical) is one `GANetInputError` line."""
    if rule is None:
        return model
    if model.attention != "gated":
        raise GANetInputError(
            f"{path} has no gates to serve under --inference-mode (a {model.attention} translator): "
            "drop the flag; it applies to runs of --attention gated."
        )
    rule = with_target_parameter(model, rule, path)
    sampler = model.gate_sampler
    sampler.inference_mode = rule["inference_mode"]
    for name, value in rule.items():
        if name != "inference_mode":
            setattr(sampler, name, float(value))
    return model


def _read_vocabularies(path):
    try:
        with open(path, encoding="utf-8") as handle:
            saved = json.load(handle)
    except (ValueError, UnicodeDecodeError) as error:
        message = (str(error).splitlines() or [type(error).__name__])[0][:120]
        raise GANetInputError(
            f"{path} is not a valid vocabulary file ({message}): copy it again from the run folder, or retrain."
        ) from None
    return saved
