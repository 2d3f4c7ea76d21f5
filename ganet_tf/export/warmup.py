"""TF Serving warmup requests: `assets.extra/tf_serving_warmup_requests`."""

import os

import tensorflow as tf

from ganet_tf.errors import GANetInputError
from ganet_tf.export.serving_archive import TEXT_INPUT
from ganet_tf.export.serving_archive import TEXT_SIGNATURE
from ganet_tf.extras import import_extra

WARMUP_DIRECTORY = "assets.extra"
WARMUP_FILE = "tf_serving_warmup_requests"
# The texts of a `--warmup-texts` file that are used; the rest is ignored.
MAX_WARMUP_TEXTS = 64


def serving_apis():
    """The `tensorflow_serving.apis` protos (`predict_pb2`, `prediction_log_pb2`)."""
    return import_extra(
        "serving", "Export", "tensorflow_serving.apis.predict_pb2", "tensorflow_serving.apis.prediction_log_pb2"
    )


def vocabulary_texts(vocabulary, sequence_length, count=8):
    """`count` deterministic warmup texts made of frequent vocabulary tokens.

    Text `i` joins tokens taken in turn from the (frequency-ordered)
    `vocabulary`; lengths spread from 1 token to `sequence_length` tokens,
    so that warmup sees short and full rows.
    """
    frequent = list(vocabulary[:200]) or ["[UNK]"]
    texts, cursor = [], 0
    for index in range(count):
        length = 1 + (index * (sequence_length - 1)) // max(count - 1, 1)
        tokens = [frequent[(cursor + k) % len(frequent)] for k in range(length)]
        cursor += length
        texts.append(" ".join(tokens))
    return texts


def load_warmup_texts(path):
    """The texts of a UTF-8 file, one a line (blank lines skipped).

    Only the first `MAX_WARMUP_TEXTS` texts are kept.
    """
    if not os.path.isfile(path):
        raise GANetInputError(f"No warmup texts file at {path}: give a UTF-8 file with one text a line.")
    try:
        with open(path, encoding="utf-8") as handle:
            texts = [line.rstrip("\r\n") for line in handle]
    except UnicodeDecodeError as error:
        raise GANetInputError(f"Warmup texts file {path} is not UTF-8 ({error.reason}).") from error
    texts = [text for text in texts if text.strip()]
    if not texts:
        raise GANetInputError(f"Warmup texts file {path} has no text.")
    return texts[:MAX_WARMUP_TEXTS]


def warmup_requests(texts, model_name, input_name=TEXT_INPUT):
    """`PredictionLog` protos: one request with the first text, one with all
    (the texts go to the signature's input `input_name`)."""
    predict_pb2, prediction_log_pb2 = serving_apis()
    batches = [texts[:1]] if len(texts) == 1 else [texts[:1], list(texts)]
    logs = []
    for batch in batches:
        request = predict_pb2.PredictRequest()
        request.model_spec.name = model_name
        request.model_spec.signature_name = TEXT_SIGNATURE
        request.inputs[input_name].CopyFrom(tf.make_tensor_proto([text.encode("utf-8") for text in batch], tf.string))
        logs.append(prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request)))
    return logs


def write_warmup_requests(saved_model_dir, texts, model_name, input_name=TEXT_INPUT):
    """Writes `warmup_requests(texts, model_name, input_name)` as TF Serving reads them.

    Args:
        saved_model_dir: a SavedModel version folder.
        texts: non-empty list of strings.
        model_name: the name TF Serving serves the model under.
        input_name: the `serving_default` input the texts go to. Defaults
            to the classifier's `"text"`.

    Returns:
        The path of the TFRecord file
        `saved_model_dir/assets.extra/tf_serving_warmup_requests`.
    """
    if not texts:
        raise ValueError("`texts` must hold at least one warmup text.")
    directory = os.path.join(saved_model_dir, WARMUP_DIRECTORY)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, WARMUP_FILE)
    with tf.io.TFRecordWriter(path) as writer:
        for log in warmup_requests(texts, model_name, input_name):
            writer.write(log.SerializeToString())
    return path


def read_warmup_requests(path):
    """The `PredictRequest`s of a warmup file, in order."""
    _, prediction_log_pb2 = serving_apis()
    requests = []
    for record in tf.data.TFRecordDataset(path):
        log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
        requests.append(log.predict_log.request)
    return requests
