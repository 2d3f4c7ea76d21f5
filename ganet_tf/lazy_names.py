"""Public names of a package loaded when first read (PEP 562).

`python -m ganet_tf` builds its parser, and answers `--help`, before it
imports TensorFlow: the packages it imports on the way (those of the
commands, `ganet_tf.policy`, `ganet_tf.data`) name their public names in
`__all__` and load each from its module when first read, so that importing
the package imports nothing heavy. `tests/test_lazy_names.py` keeps each
package's `__all__` equal to its lazy names.
"""

import importlib
import sys
import types


class _LazyPackage(types.ModuleType):
    """A package whose public names load when first read."""

    def __setattr__(self, name, value):
        # Importing `package.module` binds the module to the package's
        # attribute: where a public name is spelled as its module
        # (`export_saved_model` of `ganet_tf.export.export_saved_model`),
        # the name keeps its own value, as `from module import name` in an
        # `__init__.py` would have it.
        origins = self.__dict__.get("_lazy_origins", {})
        if isinstance(value, types.ModuleType) and origins.get(name) == value.__name__:
            value = getattr(value, name)
        super().__setattr__(name, value)


def lazy_names(package, modules):
    """The `__getattr__` and `__dir__` of `package`, whose names load on first use.

    Args:
        package: the package's `__name__`; called from its `__init__.py`.
        modules: `{module: names}`: each module (absolute) and the public
            names of `package` it defines, as `from module import name`
            would import them.

    Returns:
        `(__getattr__, __dir__)` for the package's namespace: a name is
        imported from its module when first read, then kept in the package.
    """
    origins = {name: module for module, names in modules.items() for name in names}
    module = sys.modules[package]
    module.__class__ = _LazyPackage
    namespace = vars(module)
    namespace["_lazy_origins"] = origins

    def __getattr__(name):
        if name not in origins:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(origins[name]), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted({*namespace, *origins} - {"_lazy_origins"})

    return __getattr__, __dir__
