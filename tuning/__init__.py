"""KerasTuner search for GA-Net and its baselines: `python -m tuning.search`."""

from tuning.baseline_hypermodel import BaselineHyperModel
from tuning.cross_validation_tuner import CrossValidationTuner
from tuning.ganet_hypermodel import GANetHyperModel
from tuning.search_space import SearchSpace
from tuning.text_classifier_hypermodel import TextClassifierHyperModel
from tuning.tune import SearchConfig
from tuning.tune import search_and_evaluate
