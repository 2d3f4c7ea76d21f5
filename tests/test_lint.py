"""The code passes `ruff check` and `ruff format --check` with the project's
configuration (pyproject.toml)."""

import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _ruff(*arguments):
    ruff = shutil.which("ruff") or os.path.join(os.path.dirname(sys.executable), "ruff")
    if not os.path.exists(ruff):
        pytest.fail("ruff is not installed: python -m pip install -r requirements.txt")
    return subprocess.run([ruff, *arguments, REPO], capture_output=True, text=True, cwd=REPO)


def test_ruff_check_passes():
    completed = _ruff("check", "--no-cache")
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-1000:]


def test_code_is_formatted():
    completed = _ruff("format", "--check", "--no-cache")
    assert completed.returncode == 0, "run `ruff format .`:\n" + completed.stdout[-3000:]
