"""A trained run on new texts: classifiers and translators on raw strings.

The names below are imported from their modules on first use
(`ganet_tf.lazy_names`): the parsers of `predict`, `translate` and
`evaluate` import `ganet_tf.inference.commands` and
`ganet_tf.inference.evaluate_run` before TensorFlow.
"""

from ganet_tf import backends
from ganet_tf.lazy_names import lazy_names

# Imported by its own path (`from ganet_tf.inference.x import y`) on another backend, it
# says so at once in one line, not in a misleading error at first use.
backends.require_tensorflow("ganet_tf.inference", "SavedModel, TextVectorization on strings")

__all__ = ["TextClassifier", "TextTranslator", "load_classifier", "load_translator"]

__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "ganet_tf.inference.text_classifier": ("TextClassifier", "load_classifier"),
        "ganet_tf.inference.text_translator": ("TextTranslator", "load_translator"),
    },
)
