"""Imports flow one way between the packages of `ganet_tf`.

The command line imports the tuning (`tuning/` installs as
`ganet_tf.tuning`), never the reverse; the training imports the policy,
never the reverse. Read from the source, so nothing is imported.
"""

import ast
import os

from tests.conftest import REPO

# Folders of the repository and the package each installs as.
FOLDERS = {"ganet_tf": "ganet_tf", "tuning": "ganet_tf.tuning"}


def _modules(repo):
    """`{module name: path}` of every Python file of `FOLDERS` under `repo`."""
    modules = {}
    for folder, package in FOLDERS.items():
        for root, _, files in os.walk(os.path.join(repo, folder)):
            for file in files:
                if file.endswith(".py"):
                    path = os.path.join(root, file)
                    parts = os.path.relpath(path, os.path.join(repo, folder))[:-3].split(os.sep)
                    name = ".".join([package, *parts]).removesuffix(".__init__")
                    if package == "ganet_tf" and parts[0] == "tuning":
                        continue
                    modules[name] = path
    return modules


def imports(name, path, top_level_only):
    """The modules that the module `name` in `path` imports, with every
    package above them (importing `a.b.c` runs `a/b/__init__.py`) but not
    the root `ganet_tf`, which every module passes through."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    found = set()
    for node in tree.body if top_level_only else ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module) if part)
            targets = [module, *(f"{module}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in targets:
            target = "ganet_tf." + target if target.split(".")[0] == "tuning" else target
            parts = target.split(".")
            found.update(".".join(parts[:end]) for end in range(2, len(parts) + 1))
    return found


def cross_package_cycles(repo):
    """The import cycles (at module level) that join modules of different
    packages, as sorted lists of module names."""
    modules = _modules(repo)
    graph = {name: imports(name, path, True) & set(modules) - {name} for name, path in modules.items()}
    # Tarjan's strongly connected components, iteratively.
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len({".".join(member.split(".")[:2]) for member in component}) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_no_import_cycle_crosses_packages():
    assert cross_package_cycles(REPO) == []


def test_a_cycle_across_packages_is_found(tmp_path):
    # The check itself: a policy module importing the training back.
    for folder, text in {
        "ganet_tf": "",
        "ganet_tf/policy": "from ganet_tf.policy.checks import check\n",
        "ganet_tf/training": "",
        "tuning": "",
    }.items():
        os.makedirs(tmp_path / folder, exist_ok=True)
        (tmp_path / folder / "__init__.py").write_text(text)
    (tmp_path / "ganet_tf/policy/checks.py").write_text("from ganet_tf.training.train import fit\ncheck = 1\n")
    (tmp_path / "ganet_tf/training/train.py").write_text("from ganet_tf.policy import check\nfit = 1\n")
    assert cross_package_cycles(str(tmp_path)) == [
        ["ganet_tf.policy", "ganet_tf.policy.checks", "ganet_tf.training.train"]
    ]


def test_tuning_does_not_import_the_command_line():
    modules = _modules(REPO)
    for name, path in modules.items():
        if name.startswith("ganet_tf.tuning"):
            assert "ganet_tf.cli" not in imports(name, path, False), name


def test_policy_does_not_import_the_training():
    # Only the run-folder helpers and the two guarding callbacks of
    # `ganet_tf.training` that it gives.
    helpers = {"backup", "non_finite_guard", "run_folder", "stop_signal_check"}
    modules = _modules(REPO)
    for name, path in modules.items():
        if name.startswith("ganet_tf.policy"):
            training = {module for module in imports(name, path, False) if module.startswith("ganet_tf.training.")}
            assert {module.split(".")[2] for module in training} <= helpers, name
