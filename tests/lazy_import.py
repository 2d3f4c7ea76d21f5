"""TensorFlow for the layer tests, imported when a test first uses it.

The layer tests marked `backends` also run under JAX with TensorFlow made
unimportable (`tests/test_backends.py`); their modules import `tf` and
`tfp` from here, so that only the TensorFlow-only tests, which that run
does not select, ever import TensorFlow.
"""

import importlib
import types


class _LazyModule(types.ModuleType):
    """A module object that imports `name` on its first attribute access."""

    def __init__(self, name):
        super().__init__(name)
        self._module = None

    def __getattr__(self, attribute):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        if self._module is None:
            self._module = importlib.import_module(self.__name__)
        return getattr(self._module, attribute)


tensorflow = _LazyModule("tensorflow")
tensorflow_probability = _LazyModule("tensorflow_probability")
