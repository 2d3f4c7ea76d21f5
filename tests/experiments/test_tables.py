"""Every table that needs no trained model rebuilds, from the committed
summaries alone, into exactly the committed files: `python -m experiments
table NAME` in a copy of `experiments/` and `results/`."""

import filecmp
import json
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from experiments.studies import STUDIES  # noqa: E402

REBUILT = [name for name, study in STUDIES.items() if study.rebuilt]


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """A folder with copies of `experiments/` and `results/` (the study
    scripts write beside themselves), `ganet_tf` read from the repository."""
    root = tmp_path_factory.mktemp("studies")
    for folder in ("experiments", "results"):
        shutil.copytree(os.path.join(REPO, folder), root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def differences(left, right):
    """Paths under the folder `left` whose file differs from, or is missing
    in, the folder `right`, and those of `right` missing in `left`."""
    found = []
    for folder, _, files in os.walk(left):
        for name in files:
            path = os.path.join(folder, name)
            other = os.path.join(right, os.path.relpath(path, left))
            if not os.path.isfile(other) or not filecmp.cmp(path, other, shallow=False):
                found.append(os.path.relpath(path, left))
    for folder, _, files in os.walk(right):
        found += [
            os.path.relpath(os.path.join(folder, n), right)
            for n in files
            if not os.path.exists(os.path.join(left, os.path.relpath(os.path.join(folder, n), right)))
        ]
    return sorted(found)


# Renders every study of argv[2:] into the results root argv[1] in one
# process; prints the errors by study and whether TensorFlow got imported.
RENDER = """
import json, sys, traceback
from experiments.studies import STUDIES
from experiments.study import render_study
errors = {}
for name in sys.argv[2:]:
    try:
        render_study(STUDIES[name], sys.argv[1])
    except BaseException:
        errors[name] = traceback.format_exc()[-3000:]
print(json.dumps({"errors": errors, "tensorflow": "tensorflow" in sys.modules}))
"""


def test_every_table_rebuilds_byte_identical(copy):
    """Every study in REBUILT, rendered in one process (one test, so that
    parallel workers do not render them twice): no error, every file equal
    to the committed one, and TensorFlow never imported."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy), REPO])}
    command = [sys.executable, "-c", RENDER, str(copy / "results"), *REBUILT]
    completed = subprocess.run(command, cwd=copy, env=environment, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr[-3000:]
    rebuilt = json.loads(completed.stdout.strip().splitlines()[-1])
    assert not rebuilt["errors"], rebuilt["errors"]
    changed = {}
    for name in REBUILT:
        folder = STUDIES[name].folder
        changed[name] = differences(str(copy / "results" / folder), os.path.join(REPO, "results", folder))
    changed = {name: paths for name, paths in changed.items() if paths}
    assert not changed, f"python -m experiments table NAME changed files: {changed}"
    assert not rebuilt["tensorflow"], "a table imported TensorFlow: tables read the committed files only"


def test_unknown_study_lists_the_known_ones():
    completed = subprocess.run(
        [sys.executable, "-m", "experiments", "table", "no_such_study"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": REPO},
        capture_output=True,
        text=True,
    )
    assert completed.returncode != 0
    assert "unknown study 'no_such_study'; known: selection, core" in completed.stderr


def test_a_study_names_its_runs_and_flags():
    study = STUDIES["core"]
    points = list(study.points(only=["sst1_ganet_seed0"]))
    assert [point["name"] for point in points] == ["sst1_ganet_seed0"]
    flags = study.run_flags(points[0], "../shared/data")
    assert flags[:4] == ["--seed", "0", "--dataset", "sst1"]
    assert flags[-6:] == ["--dropout", "0.5", "--penalty", "3e-3", "--data-dir", "../shared/data"]
