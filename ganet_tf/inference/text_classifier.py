"""A trained classification run as one Keras model on raw strings."""

import os

import keras
import numpy as np
import tensorflow as tf

from ganet_tf.data.vectorizer import readable_token
from ganet_tf.data.vectorizer import text_tokens
from ganet_tf.data.vectorizer import tokenizer_of
from ganet_tf.errors import GANetInputError
from ganet_tf.export.serving_archive import PADDING_ID
from ganet_tf.export.serving_archive import serving_outputs
from ganet_tf.models.explainer import build_explainer
from ganet_tf.policy.run_folder import PREPROCESSING_FILE
from ganet_tf.policy.trained_run import check_trained_model
from ganet_tf.policy.trained_run import load_model_file
from ganet_tf.policy.trained_run import load_preprocessing
from ganet_tf.policy.trained_run import load_run
from ganet_tf.policy.trained_run import with_test_gates

# What a `python -m ganet_tf seq2seq --out` folder holds instead of preprocessing.json.
SEQ2SEQ_VOCABULARY_FILE = "vocabularies.json"


def as_texts(texts, keep_bytes=False):
    """`texts` (a string, a list, a NumPy array or a string tensor) as a list of `str`.

    With `keep_bytes`, bytes that are not valid UTF-8 stay `bytes`, which a
    model reads as they are (as its SavedModel reads a client's bytes).
    """
    if isinstance(texts, (str, bytes)):
        texts = [texts]
    if isinstance(texts, tf.Tensor):
        texts = texts.numpy()
    values = np.asarray(texts, dtype=object).reshape([-1]).tolist()
    values = [_decoded(value, keep_bytes) if isinstance(value, bytes) else value for value in values]
    wrong = [value for value in values if not isinstance(value, (str, bytes))]
    if wrong:
        raise ValueError(f"Expected texts (strings). Received: {wrong[0]!r} of type {type(wrong[0]).__name__}")
    return values


def _decoded(value, keep_bytes):
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        if keep_bytes:
            return value
        raise


def shown_text(text):
    """A text of `as_texts` as a `str` to show: bytes that are not valid
    UTF-8 as `\\xNN` escapes (as `readable_token` shows a byte token)."""
    return text.decode("utf-8", errors="backslashreplace") if isinstance(text, bytes) else text


@keras.saving.register_keras_serializable(package="ganet_tf")
class TextClassifier(keras.Model):
    """Raw strings -> class probabilities: a trained run with its preprocessing.

    The task model of a `python -m ganet_tf train --out` folder: the run's
    `TextVectorization` (its vocabulary, standardisation and sequence length)
    turns the strings into token ids inside the model, and the trained
    backbone maps them to class probabilities. The graph is the one of the
    exported SavedModel's `serving_default` signature
    (`ganet_tf.export.serving_archive.serving_outputs`), so a text gets the
    same probabilities here, in TF Serving and on the command line
    (`python -m ganet_tf predict`). A text with no token (the empty string)
    is read as one unknown word, as there.

    Where it departs from keras-hub's `TextClassifier`:

    - the preprocessing runs inside `call` (a `TextVectorization` layer),
      not in a separate `Preprocessor` mapped over the data, because the
      run's vectorizer is a plain Keras layer that serves in-graph; so
      `classifier(tf.constant([...]))` works as well as `predict`;
    - `predict` returns probabilities (the backbones end in a softmax),
      not logits: `from_run` loads trained runs, which are not fine-tuned
      further;
    - runs load with `from_run(path)` (a local run folder), not
      `from_preset`; there are no presets;
    - `classify` adds per-text labels and the attended tokens with their
      attention weights alpha, which keras-hub has no counterpart for.

    Args:
        backbone: the trained `keras.Model` mapping int token ids
            `(batch, steps)` to probabilities `(batch, num_classes)`, e.g.
            from `ganet_tf.models` or `keras.models.load_model`.
        preprocessor: the `keras.layers.TextVectorization` the backbone was
            trained with (`output_mode="int"`, an `output_sequence_length`,
            whitespace split).
        class_names: list of the `num_classes` class names, in class-id
            order.
        **kwargs: passed to `keras.Model` (e.g. `name`).

    Call arguments:
        texts: string tensor `(batch,)` of raw texts.

    Returns:
        Class probabilities `(batch, num_classes)`, float32.

    Example:

    >>> # Not run by the tests: needs a trained run (`train --out runs/trec`).
    >>> classifier = TextClassifier.from_run("runs/trec")  # doctest: +SKIP
    >>> classifier.predict(["What is the capital of France ?"])  # doctest: +SKIP
    array([[0.01, 0.02, 0.03, 0.05, 0.85, 0.04]], dtype=float32)
    >>> classifier.classify(["What is the capital of France ?"])[0]["label"]  # doctest: +SKIP
    'LOC'

    References:
        keras-hub's `TextClassifier` task (preprocessing and backbone in one
        model on raw strings).
    """

    def __init__(self, backbone, preprocessor, class_names, **kwargs):
        _check_arguments(backbone, preprocessor, class_names)
        super().__init__(**kwargs)
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.class_names = list(class_names)
        if not preprocessor.built:
            preprocessor.build((None,))
        self.explainer = build_explainer(backbone)
        self._tokenizer = tokenizer_of(preprocessor)
        self._sequence_length = preprocessor.get_config()["output_sequence_length"]
        self._outputs_function = tf.function(
            self._all_outputs, input_signature=[tf.TensorSpec([None], tf.string)], autograph=False
        )
        self.built = True

    @classmethod
    def from_run(cls, path, test_gates=None):
        """The classifier of a `python -m ganet_tf train --out` folder.

        Args:
            path: the run folder (with `model.keras` and
                `preprocessing.json`), or the path of its `.keras` file with
                `preprocessing.json` beside it.
            test_gates: optional test-gate rule of a GA-Net run, from
                `ganet_tf.policy.trained_run.inference_rule` (e.g.
                `{"inference_mode": "relative", "inference_ratio": 0.9}`);
                by default the run's own.

        Returns:
            A `TextClassifier`. A missing, truncated, diverged or mismatched
            file raises `GANetInputError` with one line naming the file and
            the fix.
        """
        path = os.fspath(path)
        if path.endswith(".keras") and not os.path.isdir(path):
            run_dir = os.path.dirname(path) or "."
            vectorizer, class_names = load_preprocessing(run_dir)
            model = load_model_file(path)
            check_trained_model(model, vectorizer, class_names, path)
            model = with_test_gates(model, test_gates, path)
        else:
            if os.path.isfile(os.path.join(path, SEQ2SEQ_VOCABULARY_FILE)) and not os.path.exists(
                os.path.join(path, PREPROCESSING_FILE)
            ):
                raise GANetInputError(
                    f"{path} is a seq2seq run (it has {SEQ2SEQ_VOCABULARY_FILE}, no {PREPROCESSING_FILE}): "
                    f"translate with `python -m ganet_tf translate --model {path}`."
                )
            model, vectorizer, class_names = load_run(path, test_gates)
        try:
            return cls(backbone=model, preprocessor=vectorizer, class_names=class_names, name=f"{model.name}_text")
        except ValueError as error:
            raise GANetInputError(f"Cannot use {path} as a text classifier: {error}") from None

    def call(self, texts, training=False):
        token_ids = self.preprocessor(texts)
        return serving_outputs(self.explainer, token_ids, self.class_names)["probabilities"]

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """`keras.Model.predict` that also takes a list or array of Python strings."""
        if isinstance(x, (str, bytes, list, tuple, np.ndarray)):
            x = tf.constant(as_texts(x, keep_bytes=True), tf.string)
        return super().predict(x, batch_size=batch_size, verbose=verbose, steps=steps, callbacks=callbacks)

    @property
    def tokenizer(self):
        """`"bytes"` for a run of `train --tokenizer bytes`, else `"words"`."""
        return self._tokenizer

    def _all_outputs(self, texts):
        token_ids = self.preprocessor(texts)
        outputs = serving_outputs(self.explainer, token_ids, self.class_names)
        tokens = text_tokens(self.preprocessor, texts)[:, : self._sequence_length]
        outputs["tokens"] = tokens.to_tensor(default_value="", shape=[None, self._sequence_length])
        outputs["token_ids"] = token_ids
        return outputs

    def classify(self, texts, batch_size=256):
        """Label, probabilities and attended tokens of each text.

        Args:
            texts: a list (or array) of raw strings. An item of `bytes`
                that are not valid UTF-8 is read as it is, as the
                SavedModel reads the bytes a client sends (a byte-level
                run reads every byte).
            batch_size: texts run through the model at once.

        Returns:
            One dict per text: `text`; `label` (the most probable class);
            `probabilities` (`{class name: probability}`); `attended`, the
            tokens with a non-zero attention weight alpha_t as
            `[token, alpha_t]` pairs in text order (the standardised words,
            truncated to the run's sequence length; for GA-Net the tokens
            whose gate is open), or None for a model without attention.
            A blank text (empty or only whitespace) has nothing to classify:
            its `label`, `probabilities` and `attended` are None. The
            `text` of bytes that are not valid UTF-8 shows those bytes as
            `\\xNN` (`shown_text`).
        """
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"`batch_size` must be a positive integer. Received: batch_size={batch_size}")
        texts = as_texts(texts, keep_bytes=True)
        results = []
        for start in range(0, len(texts), batch_size):
            results.extend(self._classify_batch(texts[start : start + batch_size]))
        return results

    def _classify_batch(self, texts):
        results = [{"text": shown_text(text), "label": None, "probabilities": None, "attended": None} for text in texts]
        rows = [index for index, text in enumerate(texts) if text.strip()]
        if not rows:
            return results
        outputs = self._outputs_function(tf.constant([texts[index] for index in rows], tf.string))
        outputs = {key: value.numpy() for key, value in outputs.items()}
        for row, index in enumerate(rows):
            probabilities = outputs["probabilities"][row]
            item = results[index]
            item["label"] = outputs["label"][row].decode("utf-8")
            item["probabilities"] = dict(zip(self.class_names, map(float, probabilities), strict=True))
            if "attention" in outputs:
                real = outputs["token_ids"][row] != PADDING_ID
                weights = outputs["attention"][row]
                item["attended"] = [
                    [readable_token(token, self._tokenizer), float(weight)]
                    for token, weight, present in zip(outputs["tokens"][row], weights, real, strict=True)
                    if present and weight > 0
                ]
        return results

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "preprocessor": keras.saving.serialize_keras_object(self.preprocessor),
            "class_names": list(self.class_names),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        config["preprocessor"] = keras.saving.deserialize_keras_object(config["preprocessor"])
        return cls(**config)


def _check_arguments(backbone, preprocessor, class_names):
    if not isinstance(backbone, keras.Model) or len(backbone.inputs) != 1 or len(backbone.inputs[0].shape) != 2:
        raise ValueError(f"`backbone` must be a Keras model of token ids (batch, steps). Received: backbone={backbone}")
    if not isinstance(preprocessor, keras.layers.TextVectorization):
        raise ValueError(f"`preprocessor` must be a TextVectorization layer. Received: preprocessor={preprocessor}")
    config = preprocessor.get_config()
    if config.get("output_mode") != "int" or not config.get("output_sequence_length"):
        raise ValueError(
            "`preprocessor` must have output_mode='int' and an output_sequence_length. Received: "
            f"output_mode={config.get('output_mode')}, output_sequence_length={config.get('output_sequence_length')}"
        )
    standardize = config.get("standardize")
    if config.get("split") not in ("whitespace", "character") or not (standardize is None or callable(standardize)):
        raise ValueError(
            "`preprocessor` must split at whitespace or into characters after a callable (or no) "
            "standardization. Received: "
            f"split={config.get('split')}, standardize={standardize}"
        )
    num_classes = backbone.outputs[0].shape[-1]
    if isinstance(class_names, str) or len(class_names) != num_classes:
        raise ValueError(
            f"`class_names` must name the backbone's {num_classes} classes. Received: class_names={class_names}"
        )


def load_classifier(path, test_gates=None):
    """`TextClassifier.from_run(path, test_gates)`: the classifier of a `train --out` folder.

    Example:

    >>> # Not run by the tests: needs a trained run (`train --out runs/trec`).
    >>> classifier = load_classifier("runs/trec")  # doctest: +SKIP
    >>> classifier.predict(["Who wrote Hamlet ?"]).argmax(-1)  # HUM  # doctest: +SKIP
    array([3])
    >>> rule = {"inference_mode": "relative", "inference_ratio": 0.9}
    >>> adaptive = load_classifier("runs/trec", rule)  # doctest: +SKIP
    """
    return TextClassifier.from_run(path, test_gates)
