"""A trained run on new texts: classifiers and translators on raw strings."""

from ganet_tf.inference.text_classifier import TextClassifier
from ganet_tf.inference.text_classifier import load_classifier
from ganet_tf.inference.text_translator import TextTranslator
from ganet_tf.inference.text_translator import load_translator
