"""Scores of a trained model: the accuracy-density trade-off, attention FLOPs,
per-class reports and selection scores, on every Keras backend."""

from ganet_tf.metrics.accuracy_density_tradeoff import AccuracyDensityTradeoff
from ganet_tf.metrics.attention_flops import attention_flops
from ganet_tf.metrics.classification_report import classification_report
from ganet_tf.metrics.selection_scores import selection_scores

__all__ = ["AccuracyDensityTradeoff", "attention_flops", "classification_report", "selection_scores"]
