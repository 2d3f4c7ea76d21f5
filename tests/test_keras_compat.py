"""Keras internals stay in `ganet_tf/keras_compat.py`.

Nowhere else does the package's source (`ganet_tf/`, `ganet_tf/tuning/`
included) import `keras.src` or touch a private attribute of a Keras
object. Read from the source with `ast`: the check imports nothing of the
package.

A private name (`_name`, not a dunder) is Keras' when a Keras class
defines it: the classes of Keras' public namespaces (`keras.layers`,
`keras.Model`, `keras.callbacks`, `keras.optimizers`, ...) and every
Keras class of their MROs (the backend's trainer included), from their
`vars()` and from the `self._name = ...` assignments of their source (the
instance attributes, e.g. `MultiHeadAttention._query_dense`, which no
`dir()` of a class lists). A use is:

- an import of `keras.src` (`import keras.src...`, `from keras.src... import`,
  `from keras import src`);
- in a class derived from a Keras class (directly, or through classes of
  the package), `self._name` or `super()._name` where `_name` is a private
  name of its Keras bases, read, written or defined as a method (an
  override of a private hook);
- anywhere, `obj._name` on another object (and `getattr`, `setattr`,
  `hasattr` or `delattr` of `"_name"`) where `_name` is a private name of
  some Keras class and no class of the package defines it for itself.

Names a class of the package defines for itself (methods, attributes set
on `self`) that Keras' bases of that class do not define are its own.
"""

import ast
import functools
import inspect
import os

import keras

from ganet_tf.layers.gated_multi_head_attention import COMBINE_EQUATION
from ganet_tf.layers.gated_multi_head_attention import DOT_PRODUCT_EQUATION
from tests.conftest import REPO

# The folders of the package's source, and the one module allowed Keras
# internals.
FOLDERS = ("ganet_tf",)
COMPAT = os.path.join("ganet_tf", "keras_compat.py")

# Keras' public namespaces whose classes give the private names.
PUBLIC_NAMESPACES = (
    "",
    "activations",
    "backend",
    "callbacks",
    "config",
    "constraints",
    "distribution",
    "dtype_policies",
    "export",
    "initializers",
    "layers",
    "losses",
    "metrics",
    "mixed_precision",
    "models",
    "ops",
    "optimizers",
    "optimizers.schedules",
    "quantizers",
    "random",
    "regularizers",
    "saving",
    "utils",
)
ATTRIBUTE_FUNCTIONS = ("getattr", "setattr", "hasattr", "delattr")


def _is_private(name):
    return name.startswith("_") and not name.startswith("__") and name != "_"


def _public_classes():
    """The classes of Keras' public namespaces."""
    found = set()
    for dotted in PUBLIC_NAMESPACES:
        namespace = keras
        for part in filter(None, dotted.split(".")):
            namespace = getattr(namespace, part, None)
        for name in dir(namespace) if namespace is not None else ():
            value = getattr(namespace, name, None)
            if isinstance(value, type):
                found.add(value)
    return found


@functools.cache
def _parsed(path):
    with open(path, encoding="utf-8") as handle:
        return ast.parse(handle.read())


def _class_node(klass):
    """The `ast.ClassDef` of `klass` in its source file, or None."""
    try:
        node = _parsed(inspect.getsourcefile(klass))
    except (OSError, TypeError):
        return None
    for part in klass.__qualname__.split("."):
        node = next((c for c in ast.iter_child_nodes(node) if isinstance(c, ast.ClassDef) and c.name == part), None)
        if node is None:
            return None
    return node


def _self_stores(node):
    """The private names assigned on `self` within `node`."""
    return {
        sub.attr
        for sub in ast.walk(node)
        if isinstance(sub, ast.Attribute)
        and isinstance(sub.ctx, ast.Store)
        and isinstance(sub.value, ast.Name)
        and sub.value.id == "self"
        and _is_private(sub.attr)
    }


@functools.cache
def _defined_by(klass):
    """The private names that the Keras class `klass` itself defines."""
    names = {name for name in vars(klass) if _is_private(name)}
    node = _class_node(klass)
    return frozenset(names if node is None else names | _self_stores(node))


@functools.cache
def keras_names_of(klass):
    """The private names of the Keras classes of `klass`'s MRO."""
    names = set()
    for base in klass.__mro__:
        if base.__module__.partition(".")[0] == "keras":
            names |= _defined_by(base)
    return frozenset(names)


@functools.cache
def keras_private_names():
    """Every private name that a Keras class defines."""
    return frozenset().union(*(keras_names_of(klass) for klass in _public_classes()))


def _keras_aliases(tree):
    """`{local name: dotted Keras name}` of a module's Keras imports."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.partition(".")[0] == "keras":
                    aliases[alias.asname or "keras"] = alias.name if alias.asname else "keras"
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").partition(".")[0] == "keras":
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def _keras_class(dotted):
    """The Keras class named `keras.a.B`, or None."""
    parts = dotted.split(".")
    if parts[0] != "keras":
        return None
    value = keras
    for part in parts[1:]:
        value = getattr(value, part, None)
    return value if isinstance(value, type) else None


def _is_keras_src(dotted):
    return dotted == "keras.src" or dotted.startswith("keras.src.")


class _Scanner:
    """The Keras internals used by modules given as `{path: source}`."""

    def __init__(self, sources):
        self.trees = {path: ast.parse(source) for path, source in sources.items()}
        self.aliases = {path: _keras_aliases(tree) for path, tree in self.trees.items()}
        self.classes = {}  # simple name -> [(path, ClassDef)]
        for path, tree in self.trees.items():
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    self.classes.setdefault(node.name, []).append((path, node))
        self.names = keras_private_names()
        self.own = set()
        for entries in self.classes.values():
            for path, node in entries:
                self.own |= self._defines(node) - self._bases_names(path, node)

    def _defines(self, node):
        names = _self_stores(node)
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_private(item.name):
                names.add(item.name)
            elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name) and _is_private(t.id))
        return names

    def _bases_names(self, path, node, seen=()):
        """The private names of the Keras bases of the class `node`, also
        through the package's own classes."""
        names = set()
        for base in node.bases:
            dotted = ast.unparse(base)
            head, _, rest = dotted.partition(".")
            head = self.aliases[path].get(head, head)
            if head.startswith("tf.keras"):
                head = head.removeprefix("tf.")
            klass = _keras_class(f"{head}.{rest}" if rest else head)
            if klass is not None:
                names |= keras_names_of(klass)
                continue
            simple = dotted.rpartition(".")[2]
            for other_path, other in self.classes.get(simple, ()):
                if other not in seen:
                    names |= self._bases_names(other_path, other, (*seen, node))
        return names

    def uses(self, skip=()):
        found = []
        for path, tree in self.trees.items():
            if path not in skip:
                uses = sorted(self._module_uses(path, tree), key=lambda use: use[0])
                found.extend(f"{path}:{line}: {text}" for line, text in uses)
        return found

    def _module_uses(self, path, tree):
        found = []

        def visit(node, keras_names):
            if isinstance(node, ast.Import):
                found.extend((node.lineno, f"import {a.name}") for a in node.names if _is_keras_src(a.name))
            elif isinstance(node, ast.ImportFrom) and not node.level:
                module = node.module or ""
                if _is_keras_src(module) or (module == "keras" and any(a.name == "src" for a in node.names)):
                    found.append((node.lineno, f"from {module} import ..."))
            elif isinstance(node, ast.ClassDef):
                keras_names = self._bases_names(path, node)
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in keras_names:
                        found.append((item.lineno, f"def {item.name} (overrides a Keras private hook)"))
            elif isinstance(node, ast.Attribute) and _is_private(node.attr):
                if self._is_internal(node.value, node.attr, keras_names):
                    found.append((node.lineno, ast.unparse(node)))
            elif isinstance(node, ast.Attribute) and _is_keras_src(ast.unparse(node)):
                found.append((node.lineno, ast.unparse(node)))
                return
            elif isinstance(node, ast.Call) and self._attribute_call(node, keras_names):
                found.append((node.lineno, ast.unparse(node)))
            for child in ast.iter_child_nodes(node):
                visit(child, keras_names)

        visit(tree, frozenset())
        return found

    def _attribute_call(self, node, keras_names):
        if not (isinstance(node.func, ast.Name) and node.func.id in ATTRIBUTE_FUNCTIONS and len(node.args) >= 2):
            return False
        name = node.args[1]
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str) and _is_private(name.value)):
            return False
        return self._is_internal(node.args[0], name.value, keras_names)

    def _is_internal(self, owner, name, keras_names):
        """Whether `owner._name` touches a Keras internal; `keras_names`: the
        private names of the Keras bases of the enclosing class."""
        on_self = (isinstance(owner, ast.Name) and owner.id in ("self", "cls")) or (
            isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super"
        )
        if on_self:
            return name in keras_names
        return name in self.names and name not in self.own


def _package_sources():
    sources = {}
    for folder in FOLDERS:
        for root, _, files in os.walk(os.path.join(REPO, folder)):
            for file in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(root, file)
                with open(path, encoding="utf-8") as handle:
                    sources[os.path.relpath(path, REPO)] = handle.read()
    return sources


def test_keras_internals_are_used_only_in_keras_compat():
    uses = _Scanner(_package_sources()).uses(skip={COMPAT})
    assert not uses, "use `ganet_tf.keras_compat` for these Keras internals:\n" + "\n".join(uses)


def test_keras_compat_uses_keras_internals():
    # The module itself is scanned the same way: the check finds its uses.
    assert _Scanner(_package_sources()).uses(skip=set(_package_sources()) - {COMPAT})


PLANTED = """
import keras
from keras.src.backend import get_keras_mask
import keras.src.saving
from keras import layers


class Attention(keras.layers.MultiHeadAttention):
    def call(self, query, value):
        self._own = 1
        return self._query_dense(query) + self.query_dense(value) + self._own

    def _compute_attention(self, *args):
        return super()._compute_attention(*args)


class Inner(Attention):
    def call(self, query, value):
        return self._output_dense(query)


class Pooling(layers.Layer):
    def build(self, shape):
        self._build_at_init()


class Plain:
    def __init__(self):
        self._trainable_variables = []

    def read(self, model, layer):
        model._initial_epoch = 3
        getattr(layer, "_metrics")
        return self._trainable_variables, keras.src.backend.get_keras_mask(model)


def restore(model):
    model._symbolic_build(data_batch=None)
    return model._private_of_the_package
"""


def test_planted_uses_are_found():
    uses = _Scanner({"planted.py": PLANTED}).uses()
    found = [use.split(": ", 1)[1] for use in uses]
    assert found == [
        "from keras.src.backend import ...",
        "import keras.src.saving",
        "self._query_dense",
        "def _compute_attention (overrides a Keras private hook)",
        "super()._compute_attention",
        "self._output_dense",
        "self._build_at_init",
        "model._initial_epoch",
        "getattr(layer, '_metrics')",
        "keras.src.backend.get_keras_mask",
        "model._symbolic_build",
    ], uses


def test_the_names_come_from_keras_classes_and_their_instances():
    names = keras_private_names()
    # Methods, and instance attributes set in `__init__` or `build`.
    assert {"_build_at_init", "_symbolic_build", "_initial_epoch", "_query_dense", "_weights_path"} <= names
    assert "_query_dense" in keras_names_of(keras.layers.MultiHeadAttention)
    assert "_query_dense" not in keras_names_of(keras.layers.Layer)


def test_equations_of_the_gated_path_are_those_of_keras():
    # `GatedMultiHeadAttention` writes the einsum equations of its gated
    # path (rank-3 inputs, attention over axis 1) itself: Keras' own.
    layer = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)
    layer.build((2, 5, 8), (2, 5, 8))
    assert (DOT_PRODUCT_EQUATION, COMBINE_EQUATION) == (layer._dot_product_equation, layer._combine_equation)
