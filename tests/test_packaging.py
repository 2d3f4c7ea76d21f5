import os

import pytest

from tests.conftest import REPO

# The standard library reads TOML from Python 3.11.
tomllib = pytest.importorskip("tomllib")


def _pyproject():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as handle:
        return tomllib.load(handle)["tool"]["setuptools"]


def test_every_package_is_installed_under_ganet_tf():
    setuptools = _pyproject()
    found = {"ganet_tf.tuning"}
    for root, _, files in os.walk(os.path.join(REPO, "ganet_tf")):
        if "__init__.py" in files:
            found.add(os.path.relpath(root, REPO).replace(os.sep, "."))
    assert sorted(setuptools["packages"]) == sorted(found)
    # The top-level `tuning/` folder is installed as `ganet_tf.tuning` only.
    assert setuptools["package-dir"] == {"ganet_tf.tuning": "tuning"}
    assert not any(name.split(".")[0] != "ganet_tf" for name in setuptools["packages"])


def test_tuning_modules_import_each_other_relatively():
    # Absolute `tuning.` imports would break `ganet_tf.tuning` when installed.
    folder = os.path.join(REPO, "tuning")
    for file in sorted(os.listdir(folder)):
        if file.endswith(".py"):
            with open(os.path.join(folder, file), encoding="utf-8") as handle:
                lines = handle.read().splitlines()
            absolute = [line for line in lines if line.lstrip().startswith(("from tuning", "import tuning"))]
            assert absolute == [], file
