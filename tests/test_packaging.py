import os
import re

import pytest

from ganet_tf.extras import EXTRAS
from tests.conftest import REPO

# The standard library reads TOML from Python 3.11.
tomllib = pytest.importorskip("tomllib")


def _pyproject(table="tool"):
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as handle:
        project = tomllib.load(handle)
    return project["tool"]["setuptools"] if table == "tool" else project[table]


def test_every_package_is_installed_under_ganet_tf():
    # A package: a folder with an `__init__.py`, or one of data that ships
    # with the package (listed, so that setuptools does not warn about it).
    setuptools = _pyproject()
    found = {"ganet_tf.tuning"}
    for root, folders, files in os.walk(os.path.join(REPO, "ganet_tf")):
        folders[:] = [folder for folder in folders if folder != "__pycache__"]
        if "__init__.py" in files or (files and not any(file.endswith(".py") for file in files)):
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


def _name(requirement):
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0]


def test_every_extra_is_one_that_the_code_names():
    # `ganet_tf.extras` names the extra to install for each optional part:
    # its packages are those of pyproject.toml's extra, and `all` holds them all.
    extras = _pyproject("project")["optional-dependencies"]
    (everything,) = extras.pop("all")
    assert everything.startswith("ganet_tf[") and set(everything[9:-1].split(",")) == set(EXTRAS)
    assert {extra: sorted(map(_name, requirements)) for extra, requirements in extras.items()} == {
        extra: sorted(packages.values()) for extra, packages in EXTRAS.items()
    }


# Lower bounds that `.ci/oldest` does not install (requirements-oldest.txt
# leaves pyarrow unpinned and has no matplotlib): untested at that end.
NOT_PINNED_IN_OLDEST = ("pyarrow", "matplotlib")
# The subword stack of the seq2seq extra needs TensorFlow 2.21: its lower
# bounds are the versions requirements.txt pins, which CI runs.
NEWEST_ONLY = ("keras-hub", "tensorflow-text", "sentencepiece")


def _pins(file):
    """`{name: Version}` of the `name==version` lines of `file`."""
    from packaging.utils import canonicalize_name
    from packaging.version import Version

    pinned = {}
    with open(os.path.join(REPO, file), encoding="utf-8") as handle:
        for line in handle:
            line = line.split("#")[0].strip()
            if "==" in line:
                name, version = line.split("==")
                pinned[canonicalize_name(name)] = Version(version)
    return pinned


def test_lower_bounds_are_what_the_oldest_job_installs():
    # Every declared lower bound (dependencies and extras) is the version
    # requirements-oldest.txt pins, so `.ci/oldest` tests the declared minimums.
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version

    pinned, newest = _pins("requirements-oldest.txt"), _pins("requirements.txt")
    project = _pyproject("project")
    extras = [r for extra, rs in project["optional-dependencies"].items() if extra != "all" for r in rs]
    for text in [*project["dependencies"], *extras]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        lower = [Version(s.version) for s in requirement.specifier if s.operator in (">=", "==")]
        if name in NOT_PINNED_IN_OLDEST:
            assert name not in pinned, name
        elif name in NEWEST_ONLY:
            assert name not in pinned and newest[name] == lower[0], (text, newest[name])
        else:
            assert lower and pinned.get(name) == lower[0], (text, pinned.get(name))
