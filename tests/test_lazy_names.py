"""One `__init__.py` style: every package of `ganet_tf` lists its public
names in `__all__`, imported explicitly or, in the packages the command line
imports before TensorFlow, loaded when first read (`lazy_names`)."""

import ast
import importlib
import os
import sys
import types

import pytest

from ganet_tf.lazy_names import lazy_names
from tests.conftest import REPO

# The packages whose names load when first read: `python -m ganet_tf`
# imports them (or a module of theirs) before TensorFlow.
LAZY = (
    "ganet_tf.data",
    "ganet_tf.export",
    "ganet_tf.inference",
    "ganet_tf.interpret",
    "ganet_tf.policy",
    "ganet_tf.seq2seq",
    "ganet_tf.training",
    "ganet_tf.tuning",
)


def _init_files():
    """`{package: parsed __init__.py}` of every package under `ganet_tf/` but the root."""
    found = {}
    for root, folders, files in os.walk(os.path.join(REPO, "ganet_tf")):
        folders[:] = [name for name in folders if name != "__pycache__"]
        if "__init__.py" in files and root != os.path.join(REPO, "ganet_tf"):
            package = os.path.relpath(root, REPO).replace(os.sep, ".")
            with open(os.path.join(root, "__init__.py"), encoding="utf-8") as handle:
                found[package] = ast.parse(handle.read())
    return found


def _all(tree):
    """The `__all__` of a module: its names where a literal list, else the
    expression's source (`list(LAYER_NAMES)`); None without one."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]:
            if isinstance(node.value, ast.List):
                return [element.value for element in node.value.elts]
            return ast.unparse(node.value)
    return None


def _lazy_map(tree):
    """`{name: module}` of the `lazy_names(__name__, {...})` call of a module, or None."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_names":
            modules = ast.literal_eval(node.args[1])
            return {name: module for module, names in modules.items() for name in names}
    return None


INIT_FILES = _init_files()


def test_every_package_lists_its_names_in_all():
    assert [package for package, tree in INIT_FILES.items() if _all(tree) is None] == []
    assert sorted(package for package, tree in INIT_FILES.items() if _lazy_map(tree) is not None) == sorted(LAZY)


@pytest.mark.parametrize("package", LAZY)
def test_a_lazy_package_lists_what_it_loads(package):
    tree = INIT_FILES[package]
    names = _lazy_map(tree)
    assert sorted(_all(tree)) == sorted(names)
    module = importlib.import_module(package)
    for name, origin in names.items():
        assert getattr(module, name) is getattr(importlib.import_module(origin), name)


@pytest.mark.parametrize("package", sorted(set(INIT_FILES) - set(LAZY)))
def test_an_explicit_package_gives_what_it_lists(package):
    module = importlib.import_module(package)
    assert all(hasattr(module, name) for name in module.__all__)


def test_lazy_names_imports_a_name_when_first_read(monkeypatch):
    package = types.ModuleType("lazy_demo")
    monkeypatch.setitem(sys.modules, "lazy_demo", package)
    package.__getattr__, package.__dir__ = lazy_names("lazy_demo", {"json": ("dumps",)})
    assert "dumps" not in vars(package)
    assert package.dumps is sys.modules["json"].dumps
    assert "dumps" in vars(package)  # kept: the next read finds it directly
    assert "dumps" in dir(package)
    with pytest.raises(AttributeError, match="module 'lazy_demo' has no attribute 'loads'"):
        _ = package.loads


def test_a_name_spelled_as_its_module_stays_the_name(tmp_path, monkeypatch):
    # `ganet_tf.export.export_saved_model` is the function, even after
    # `ganet_tf.export.export_saved_model` the module was imported by its path.
    folder = tmp_path / "lazy_pair"
    folder.mkdir()
    (folder / "__init__.py").write_text(
        "from ganet_tf.lazy_names import lazy_names\n"
        "__all__ = ['helper']\n"
        "__getattr__, __dir__ = lazy_names(__name__, {'lazy_pair.helper': ('helper',)})\n"
    )
    (folder / "helper.py").write_text("def helper():\n    return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        module = importlib.import_module("lazy_pair.helper")
        package = sys.modules["lazy_pair"]
        assert package.helper is module.helper
        assert package.helper() == 1
    finally:
        for name in ("lazy_pair", "lazy_pair.helper"):
            sys.modules.pop(name, None)
