"""A trained run on new texts: classifiers and translators on raw strings."""

from ganet_tf import backends

# Imported by its own path (`from ganet_tf.inference.x import y`) on another backend, it
# says so at once in one line, not in a misleading error at first use.
backends.require_tensorflow("ganet_tf.inference", "SavedModel, TextVectorization on strings")

from ganet_tf.inference.text_classifier import TextClassifier
from ganet_tf.inference.text_classifier import load_classifier
from ganet_tf.inference.text_translator import TextTranslator
from ganet_tf.inference.text_translator import load_translator
