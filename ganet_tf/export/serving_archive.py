"""The serving graph: raw strings -> token ids -> model -> named outputs."""

import keras
import tensorflow as tf

from ganet_tf.models.explainer import build_explainer

# `TextVectorization` ids: 0 pads, 1 is the out-of-vocabulary token `[UNK]`.
PADDING_ID = 0
OOV_ID = 1

# Inference modes of `GateSampler` that give the same gates on every call.
DETERMINISTIC_INFERENCE_MODES = ("threshold", "top_k", "relative", "nucleus")

TEXT_SIGNATURE = "serving_default"
TOKEN_IDS_SIGNATURE = "serve_token_ids"
TEXT_INPUT = "text"
TOKEN_IDS_INPUT = "token_ids"


def serving_outputs(explainer, token_ids, class_names):
    """The named serving outputs of `explainer` on padded `token_ids`.

    A row without any real token (an empty text, or one whose tokens are
    all removed by standardisation) is given to the model as the single
    out-of-vocabulary token `[UNK]`, so the empty text is classified like
    one unknown word. On CPU the layers would also accept the all-padding
    row, but cuDNN rejects zero-length sequences: Keras' LSTM asserts that
    no row is fully masked when it takes the cuDNN path, which would fail
    the whole batch. The per-token outputs of such a row are reported as
    zeros and its density as 0, because it has no token to explain.

    Args:
        explainer: a model from `ganet_tf.models.build_explainer`.
        token_ids: int tensor `(batch, steps)`, right-padded with 0.
        class_names: list of the `num_classes` class names.

    Returns:
        A dict of tensors: `probabilities` `(batch, num_classes)` float32,
        `class_id` `(batch,)` int64, `label` `(batch,)` string and, where
        the model has them, `attention` `(batch, steps)`, `gates`,
        `gate_probabilities` `(batch, steps)` and `density` `(batch,)`
        (open gates / real tokens), all float32.
    """
    token_ids = tf.cast(token_ids, "int32")
    real = tf.cast(tf.not_equal(token_ids, PADDING_ID), "float32")
    lengths = tf.reduce_sum(real, axis=1)
    first_step = tf.equal(tf.range(tf.shape(token_ids)[1]), 0)
    fill = tf.logical_and(tf.equal(lengths, 0.0)[:, None], first_step[None, :])
    model_ids = tf.where(fill, tf.constant(OOV_ID, "int32"), token_ids)

    outputs = explainer([model_ids], training=False)
    probabilities = tf.cast(outputs["probabilities"], "float32")
    class_id = tf.argmax(probabilities, axis=-1, output_type=tf.int64)
    result = {
        "probabilities": probabilities,
        "class_id": class_id,
        "label": tf.gather(tf.constant(list(class_names), tf.string), class_id),
    }
    if "attention" in outputs:
        result["attention"] = tf.cast(outputs["attention"], "float32") * real
    if "gates" in outputs:
        gates = tf.cast(outputs["gates"], "float32") * real
        result["gates"] = gates
        result["gate_probabilities"] = tf.cast(outputs["gate_probabilities"], "float32") * real
        result["density"] = tf.reduce_sum(gates, axis=1) / tf.maximum(lengths, 1.0)
    return result


def build_serving_archive(model, vectorizer, class_names):
    """A `keras.export.ExportArchive` that serves `model` on raw strings.

    The archive has two endpoints:

    - `serving_default(text)`: a batch of raw strings `tf.string` `(batch,)`;
      `vectorizer` tokenises them inside the graph (texts longer than its
      `output_sequence_length` are truncated, shorter ones padded).
    - `serve_token_ids(token_ids)`: int32 ids `(batch, sequence_length)`,
      right-padded with 0, for clients that tokenise themselves.

    Both return the dict of `serving_outputs`. Gates are deterministic and
    follow the model's own inference rule: the gate sampler of a GA-Net
    model must use a deterministic `inference_mode` (any but `"sample"`).
    The graph holds only TensorFlow ops (no Python callbacks) and pins no
    device, so TF Serving places it on a GPU where one is present. Keras
    picks the cuDNN LSTM kernel when the graph is traced, so an archive
    built on a machine without GPU runs Keras' generic LSTM loop (on CPU or
    GPU); build it on a GPU machine to get cuDNN kernels, which then need a
    GPU to serve.

    Args:
        model: a functional model from `ganet_tf.models` (also after
            `.keras` reload) mapping int token ids `(batch, steps)` to
            class probabilities `(batch, num_classes)`.
        vectorizer: the `TextVectorization` layer the model was trained
            with (`output_mode="int"` with an `output_sequence_length`),
            e.g. from `ganet_tf.data.load_vectorizer`.
        class_names: list of the `num_classes` class names, in class-id
            order.

    Returns:
        A `keras.export.ExportArchive`; `write_out(path)` writes it.

    Example:

    >>> from ganet_tf.data import load_vectorizer
    >>> # Not run by the tests: needs a trained run (`train --out run`).
    >>> vectorizer, class_names = load_vectorizer("run/preprocessing.json")  # doctest: +SKIP
    >>> model = keras.models.load_model("run/model.keras")  # doctest: +SKIP
    >>> archive = build_serving_archive(model, vectorizer, class_names)  # doctest: +SKIP
    >>> archive.write_out("saved_models/trec/1", verbose=False)  # doctest: +SKIP
    """
    sequence_length = _check_serving_inputs(model, vectorizer, class_names)
    if not vectorizer.built:
        vectorizer.build((None,))
    explainer = build_explainer(model)

    def serve_text(text):
        token_ids = vectorizer(text)
        return serving_outputs(explainer, token_ids, class_names)

    def serve_token_ids(token_ids):
        return serving_outputs(explainer, token_ids, class_names)

    archive = keras.export.ExportArchive()
    archive.track(vectorizer)  # its lookup table
    archive.track(explainer)
    archive.add_endpoint(
        TEXT_SIGNATURE,
        serve_text,
        input_signature=[tf.TensorSpec([None], tf.string, name=TEXT_INPUT)],
    )
    archive.add_endpoint(
        TOKEN_IDS_SIGNATURE,
        serve_token_ids,
        input_signature=[tf.TensorSpec([None, sequence_length], tf.int32, name=TOKEN_IDS_INPUT)],
    )
    return archive


def _check_serving_inputs(model, vectorizer, class_names):
    """Validates the arguments of `build_serving_archive`; returns the
    vectorizer's `output_sequence_length`."""
    config = vectorizer.get_config()
    sequence_length = config.get("output_sequence_length")
    if config.get("output_mode") != "int" or not sequence_length:
        raise ValueError(
            "`vectorizer` must be a TextVectorization layer with "
            "output_mode='int' and an output_sequence_length. Received: "
            f"output_mode={config.get('output_mode')}, "
            f"output_sequence_length={sequence_length}"
        )
    if len(model.inputs) != 1 or len(model.inputs[0].shape) != 2:
        raise ValueError(f"`model` must take one input of token ids (batch, steps). Received inputs: {model.inputs}")
    num_classes = model.outputs[0].shape[-1]
    if len(class_names) != num_classes:
        raise ValueError(
            f"`class_names` must name the model's {num_classes} classes. "
            f"Received {len(class_names)} names: {list(class_names)}"
        )
    names = {layer.name for layer in model.layers}
    if "gates" in names:
        mode = getattr(model.get_layer("gates"), "inference_mode", "threshold")
        if mode not in DETERMINISTIC_INFERENCE_MODES:
            raise ValueError(
                "Serving needs deterministic gates: the gate sampler must use "
                f"one of the inference modes {DETERMINISTIC_INFERENCE_MODES}. Received: inference_mode={mode}"
            )
    return sequence_length
