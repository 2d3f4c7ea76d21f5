"""KerasTuner search for GA-Net and its baselines: `python -m ganet_tf tune`
(`python -m tuning.search` in the repository)."""

from .baseline_hypermodel import BaselineHyperModel
from .cross_validation_tuner import CrossValidationTuner
from .ganet_hypermodel import GANetHyperModel
from .ganet_transformer_hypermodel import GANetTransformerHyperModel
from .search_config import SearchConfig
from .search_space import SearchSpace
from .text_classifier_hypermodel import TextClassifierHyperModel
from .transformer_hypermodel import TransformerHyperModel
from .tune import search_and_evaluate
