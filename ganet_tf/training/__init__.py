"""Training and evaluation of the text classifiers (`python -m ganet_tf train`).

The names below are imported from their modules on first use. The run
folders, backups and stop signals the training uses are `ganet_tf.policy`'s,
which imports nothing of this package.
"""

import importlib

# Each public name and the module that defines it (`EpochTimer`: the fit
# loop's, `ganet_tf.fitting`).
_MODULES = {
    "EpochTimer": "ganet_tf.fitting.epoch_timer",
    "evaluate_model": "ganet_tf.training.evaluate",
    "TrainConfig": "ganet_tf.training.train",
    "compile_model": "ganet_tf.training.train",
    "train_and_evaluate": "ganet_tf.training.train",
}
__all__ = sorted(_MODULES)


def __getattr__(name):
    if name not in _MODULES:
        raise AttributeError(f"module 'ganet_tf.training' has no attribute {name!r}")
    value = getattr(importlib.import_module(_MODULES[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_MODULES})
