"""Reading back what `train --out` wrote, with one-line errors.

`export` and `explain` load `model.keras` and `preprocessing.json` through
these checks, so a truncated or corrupt file, a folder where a file should
be, a diverged (NaN) model or a vocabulary of another run is one error line
instead of a traceback.
"""

import os
import zipfile

import keras

from ganet_tf.errors import GANetInputError
from ganet_tf.training.non_finite_guard import non_finite_weights


def _first_line(error):
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


def load_model_file(path):
    """`keras.models.load_model(path)`, or one error line saying what is wrong."""
    if os.path.isdir(path):
        raise GANetInputError(f"{path} is a folder, not a .keras model file.")
    if not os.path.isfile(path):
        raise GANetInputError(
            f"No model file at {path}: give a folder written by "
            "`python -m ganet_tf train --out`."
        )
    if not zipfile.is_zipfile(path):
        raise GANetInputError(
            f"{path} is not a complete .keras file (truncated or corrupt, "
            f"{os.path.getsize(path)} bytes): copy it again, or retrain."
        )
    try:
        return keras.models.load_model(path)
    except Exception as error:  # noqa: BLE001 - any deserialisation failure
        raise GANetInputError(f"Cannot load {path}: {_first_line(error)}") from error


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
            f"{path} has non-finite weights ({bad[0]}): its training diverged; "
            "retrain it with a lower --lr."
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
