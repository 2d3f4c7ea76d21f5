"""KerasTuner search for GA-Net and its baselines: `python -m ganet_tf tune`.

The names below are imported from their modules on first use
(`ganet_tf.lazy_names`): `tune`'s parser imports `ganet_tf.tuning.search`
before TensorFlow and KerasTuner.
"""

from ganet_tf.lazy_names import lazy_names

__all__ = [
    "BaselineHyperModel",
    "CrossValidationTuner",
    "GANetHyperModel",
    "GANetTransformerHyperModel",
    "SearchConfig",
    "SearchSpace",
    "TextClassifierHyperModel",
    "TransformerHyperModel",
    "search_and_evaluate",
]

__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "ganet_tf.tuning.baseline_hypermodel": ("BaselineHyperModel",),
        "ganet_tf.tuning.cross_validation_tuner": ("CrossValidationTuner",),
        "ganet_tf.tuning.ganet_hypermodel": ("GANetHyperModel",),
        "ganet_tf.tuning.ganet_transformer_hypermodel": ("GANetTransformerHyperModel",),
        "ganet_tf.tuning.search_config": ("SearchConfig",),
        "ganet_tf.tuning.search_space": ("SearchSpace",),
        "ganet_tf.tuning.text_classifier_hypermodel": ("TextClassifierHyperModel",),
        "ganet_tf.tuning.transformer_hypermodel": ("TransformerHyperModel",),
        "ganet_tf.tuning.tune": ("search_and_evaluate",),
    },
)
