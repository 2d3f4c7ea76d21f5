"""Training and evaluation of the text classifiers (`python -m ganet_tf train`).

The names below are imported from their modules on first use
(`ganet_tf.lazy_names`): `train`'s parser imports
`ganet_tf.training.commands` before TensorFlow. The run folders, backups and
stop signals the training uses are `ganet_tf.policy`'s, which imports
nothing of this package.
"""

from ganet_tf.lazy_names import lazy_names

__all__ = ["EpochTimer", "TrainConfig", "compile_model", "evaluate_model", "train_and_evaluate"]

# `EpochTimer` is the fit loop's (`ganet_tf.fitting`).
__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "ganet_tf.fitting.epoch_timer": ("EpochTimer",),
        "ganet_tf.training.config": ("TrainConfig",),
        "ganet_tf.training.evaluate": ("evaluate_model",),
        "ganet_tf.training.train": ("compile_model", "train_and_evaluate"),
    },
)
