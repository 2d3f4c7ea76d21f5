"""The code passes `ruff check` and `ruff format --check` with the project's
configuration (pyproject.toml)."""

import ast
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


def _long_functions(root, limit):
    """`path:line name (N lines)` of the functions under the folder `root`
    whose body, docstring left out, is longer than `limit` lines."""
    found = []
    for folder, _, files in os.walk(root):
        for file in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(folder, file)
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read())
            for node in ast.walk(tree):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                body = node.body
                if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                    body = body[1:]
                lines = node.end_lineno - body[0].lineno + 1
                if lines > limit:
                    found.append(f"{os.path.relpath(path, root)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_long_functions_are_found(tmp_path):
    # The check itself: a 61-line body is reported, a 60-line one (with a
    # docstring, which does not count) is not.
    long = ["def long():", *[f"    print({i})" for i in range(61)]]
    short = ["def short():", '    """Sixty lines."""', *[f"    print({i})" for i in range(60)]]
    (tmp_path / "sample.py").write_text("\n".join([*long, "", *short]) + "\n")
    assert _long_functions(str(tmp_path), 60) == ["sample.py:1 long (61 lines)"]


def test_no_function_body_is_longer_than_60_lines():
    assert _long_functions(os.path.join(REPO, "ganet_tf"), 60) == []
