"""One namespace, the keras-hub way: every public layer in `ganet_tf.layers`,
every model builder in `ganet_tf.models`, and the top level gives all of
them (the same objects)."""

import ast
import os

import ganet_tf
from ganet_tf import layers
from ganet_tf import models
from tests.conftest import REPO


def _public_definitions(folder, kind):
    """The public classes (`kind="class"`) or `build_*` functions of the
    modules of `ganet_tf/<folder>/`, read from the source."""
    names = set()
    for file in os.listdir(os.path.join(REPO, "ganet_tf", folder)):
        if not file.endswith(".py") or file == "__init__.py":
            continue
        with open(os.path.join(REPO, "ganet_tf", folder, file), encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in tree.body:
            if kind == "class" and isinstance(node, ast.ClassDef) and not node.name.startswith(("_", "Base")):
                names.add(node.name)
            if kind == "builder" and isinstance(node, ast.FunctionDef) and node.name.startswith("build_"):
                names.add(node.name)
    return names


def test_every_layer_is_in_ganet_tf_layers_and_at_the_top_level():
    assert set(layers.__all__) == _public_definitions("layers", "class")
    assert set(ganet_tf._LAYER_NAMES) == set(layers.__all__)
    for name in layers.__all__:
        assert getattr(ganet_tf, name) is getattr(layers, name)


def test_every_builder_is_in_ganet_tf_models_and_at_the_top_level():
    builders = _public_definitions("models", "builder") | {"build_model"}
    assert {name for name in models.__all__ if name.startswith("build_")} == builders
    assert set(ganet_tf._MODEL_NAMES) == builders
    for name in builders:
        assert getattr(ganet_tf, name) is getattr(models, name)
    assert set(models.MODEL_BUILDERS.values()) <= {getattr(models, name) for name in builders}


def test_all_lists_what_the_top_level_gives():
    expected = {*layers.__all__, *ganet_tf._MODEL_NAMES, *ganet_tf._INFERENCE_NAMES}
    assert set(ganet_tf.__all__) == expected | {"GANetInputError", "KerasBackendError", "TensorFlowRequiredError"}
    assert all(getattr(ganet_tf, name) is not None for name in ganet_tf.__all__)
