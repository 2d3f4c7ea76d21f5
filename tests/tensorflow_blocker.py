"""Makes TensorFlow and the packages built on it unimportable, to check
that code runs on another Keras backend without them.

`tests/conftest.py` installs the blocker when `GANET_BLOCK_TENSORFLOW` is
set (not empty, not 0)."""

import importlib.abc
import os
import sys

BLOCKED = ("tensorflow", "tf_keras", "tensorflow_probability", "tensorflow_text", "keras_hub")


class TensorFlowBlocker(importlib.abc.MetaPathFinder):
    """A `sys.meta_path` finder that refuses the `blocked` packages (top-level names)."""

    def __init__(self, blocked=BLOCKED):
        self.blocked = tuple(blocked)

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.blocked:
            # As on a machine where the package is not installed.
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def requested():
    return os.environ.get("GANET_BLOCK_TENSORFLOW", "") not in ("", "0")


def install():
    """Puts the blocker first on `sys.meta_path` (once). On the PyTorch
    backend `torch._dynamo` is imported first: on import it asks
    `importlib.util.find_spec` about every package it knows, TensorFlow
    among them, which returns None on a machine without it but raises here."""
    if os.environ.get("KERAS_BACKEND") == "torch":
        import torch._dynamo  # noqa: F401
    if not any(isinstance(finder, TensorFlowBlocker) for finder in sys.meta_path):
        sys.meta_path.insert(0, TensorFlowBlocker())


def block(modules):
    """Puts a blocker of `modules` (top-level names) first on `sys.meta_path`:
    a machine where they are not installed (an extra of `ganet_tf` left out)."""
    sys.meta_path.insert(0, TensorFlowBlocker(modules))
