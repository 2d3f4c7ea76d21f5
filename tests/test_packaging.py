import email
import os
import re
import shutil
import subprocess
import sys
import zipfile

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
    found = set()
    for root, folders, files in os.walk(os.path.join(REPO, "ganet_tf")):
        folders[:] = [folder for folder in folders if folder != "__pycache__"]
        if "__init__.py" in files or (files and not any(file.endswith(".py") for file in files)):
            found.add(os.path.relpath(root, REPO).replace(os.sep, "."))
    assert sorted(setuptools["packages"]) == sorted(found)
    # Each package installs from its own folder (`ganet_tf/tuning/` as `ganet_tf.tuning`).
    assert "package-dir" not in setuptools
    assert not any(name.split(".")[0] != "ganet_tf" for name in setuptools["packages"])


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


def test_keras_is_bounded_on_both_sides():
    # Keras is held to the releases tested: from the version `.ci/oldest`
    # installs to the minor release requirements.txt pins, no further (an
    # untested Keras has broken the layers before: docs/devices.md).
    from packaging.requirements import Requirement
    from packaging.version import Version

    (keras,) = [Requirement(r) for r in _pyproject("project")["dependencies"] if _name(r) == "keras"]
    lower = [Version(s.version) for s in keras.specifier if s.operator == ">="]
    upper = [Version(s.version) for s in keras.specifier if s.operator == "<"]
    assert lower and upper, f"keras needs a lower and an upper bound: {keras}"
    oldest, newest = _pins("requirements-oldest.txt")["keras"], _pins("requirements.txt")["keras"]
    assert oldest in keras.specifier and newest in keras.specifier, (keras, oldest, newest)
    assert upper[0] == Version(f"{newest.major}.{newest.minor + 1}"), (keras, newest)


def test_no_installed_module_is_named_like_a_test():
    # pytest collects `test_*.py`: a module of the package must not look like one.
    named = []
    for root, folders, files in os.walk(os.path.join(REPO, "ganet_tf")):
        folders[:] = [name for name in folders if name != "__pycache__"]
        named += [os.path.join(root, file) for file in files if file.startswith("test_") and file.endswith(".py")]
    assert named == []


# What building the wheel reads: the metadata, the texts it names, the packages.
WHEEL_SOURCES = ("pyproject.toml", "README.md", "LICENSE", "ganet_tf")


def test_the_wheel_names_its_licence_and_holds_it(tmp_path):
    # The wheel a user installs (`.ci/wheel` builds it the same way), built
    # from a copy so that the checkout gets no build/ or egg-info: its
    # METADATA names the licence (PEP 639, which `pip show` prints), carries
    # LICENSE, and bounds Keras.
    source = tmp_path / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    for name in WHEEL_SOURCES:
        path = os.path.join(REPO, name)
        if os.path.isdir(path):
            shutil.copytree(path, source / name, ignore=ignore)
        else:
            shutil.copy(path, source / name)
    completed = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(source), "-w", str(tmp_path / "dist")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stdout[-2000:] + completed.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("ganet_tf-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata_name,) = [name for name in names if name.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(archive.read(metadata_name))
        info = metadata_name.rsplit("/", 1)[0]
        assert f"{info}/licenses/LICENSE" in names, names
        with open(os.path.join(REPO, "LICENSE"), "rb") as handle:
            assert archive.read(f"{info}/licenses/LICENSE") == handle.read()
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata.get_all("License-File") == ["LICENSE"]
    (keras,) = [r for r in metadata.get_all("Requires-Dist") if _name(r) == "keras"]
    assert "<" in keras, keras
