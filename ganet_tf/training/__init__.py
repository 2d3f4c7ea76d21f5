"""Training and evaluation of the text classifiers (`python -m ganet_tf train`).

The names below are imported from their modules on first use. The run
folders, backups and stop signals the training uses are `ganet_tf.policy`'s,
which imports nothing of this package.
"""

import importlib

# Each public name and the module of this package that defines it.
_MODULES = {
    "EpochTimer": "epoch_timer",
    "evaluate_model": "evaluate",
    "TrainConfig": "train",
    "compile_model": "train",
    "train_and_evaluate": "train",
}
__all__ = sorted(_MODULES)


def __getattr__(name):
    if name not in _MODULES:
        raise AttributeError(f"module 'ganet_tf.training' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ganet_tf.training.{_MODULES[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_MODULES})
