"""Imports flow one way: no module of `ganet_tf/` or `experiments/` imports
itself back through others, and every import goes down the layers that
`docs/architecture.md` lists (its `layers` block, the one place they are
written).

Read from the source, so nothing is imported; imports inside functions
count as much as those at the top of a module.
"""

import ast
import fnmatch
import os
import re

from tests.conftest import REPO

# Folders of the repository and the package each holds.
FOLDERS = {"ganet_tf": "ganet_tf", "experiments": "experiments"}
ARCHITECTURE = os.path.join("docs", "architecture.md")
# `experiments/reports.py` loads a study's module when a study calls for it
# (`lazy("adaptive_real", "after_run")`): such a call imports that module.
LAZY_LOADERS = {"lazy", "hooks", "folder_tables"}


def modules(repo):
    """`{module name: path}` of every Python file of `FOLDERS` under `repo`."""
    found = {}
    for folder, package in FOLDERS.items():
        for root, folders, files in os.walk(os.path.join(repo, folder)):
            folders[:] = [name for name in folders if not os.path.islink(os.path.join(root, name))]
            for file in files:
                if file.endswith(".py"):
                    path = os.path.join(root, file)
                    parts = os.path.relpath(path, os.path.join(repo, folder))[:-3].split(os.sep)
                    found[".".join([package, *parts]).removesuffix(".__init__")] = path
    return found


def _ancestors(name):
    parts = name.split(".")
    return {".".join(parts[:end]) for end in range(1, len(parts))}


def imports(name, path, known):
    """The modules of `known` that importing the module `name` (file `path`)
    runs, at its top or inside its functions: each named module, and the
    packages above it (importing `a.b.c` runs `a/b/__init__.py`) but those
    above `name` itself (already running) and the root `ganet_tf`, which
    every module passes through first."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    named = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module) if part)
            for alias in node.names:
                named.add(f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module)
        elif isinstance(node, ast.Call) and name.startswith("experiments.") and node.args:
            function = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            first = node.args[0]
            if function in LAZY_LOADERS and isinstance(first, ast.Constant) and isinstance(first.value, str):
                named.add(f"experiments.{first.value}")
    found = set()
    for target in named:
        found.add(target)
        found.update(_ancestors(target) - _ancestors(name))
    return (found & set(known)) - {name, "ganet_tf"}


def import_graph(repo):
    """`{module: the modules it imports}` over `modules(repo)`."""
    known = modules(repo)
    return {name: imports(name, path, known) for name, path in known.items()}


def cycles(graph):
    """The import cycles of `graph`: its strongly connected components of
    more than one module (Tarjan's, iteratively), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    for start in sorted(graph):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(graph[start])))]
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
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def layers(repo):
    """The layers of `docs/architecture.md`'s `layers` block, lowest first:
    a list of sets of unit patterns (fnmatch), one set a line."""
    with open(os.path.join(repo, ARCHITECTURE), encoding="utf-8") as handle:
        block = re.search(r"^```layers\n(.*?)^```", handle.read(), re.MULTILINE | re.DOTALL)
    assert block, f"{ARCHITECTURE} has no ```layers block"
    lines = (line.split("#")[0].split() for line in block.group(1).splitlines())
    return [set(line) for line in lines if line]


def unit(module):
    """What the layers order: a package of `ganet_tf` (`ganet_tf.policy`), one
    of its top modules (`ganet_tf.cli`), the root `ganet_tf`, or a module of
    `experiments`."""
    parts = module.split(".")
    return module if parts[0] == "experiments" else ".".join(parts[:2])


def level(name, table):
    """The line of `table` (from `layers`) whose patterns match the unit
    `name`, else None; an exact name wins over a pattern."""
    for exact in (True, False):
        for number, patterns in enumerate(table):
            if any(name == pattern if exact else fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
                return number
    return None


def wrong_way(repo):
    """`(importer, imported)` module pairs whose units are not on the
    importer's line or below it, and the units no line names."""
    table, graph = layers(repo), import_graph(repo)
    units = {unit(name) for name in graph}
    unplaced = sorted(name for name in units if level(name, table) is None)
    upward = sorted(
        (importer, imported)
        for importer, targets in graph.items()
        for imported in targets
        if unit(imported) != unit(importer)
        and None not in (level(unit(importer), table), level(unit(imported), table))
        and level(unit(imported), table) >= level(unit(importer), table)
    )
    return upward, unplaced


def test_no_module_imports_itself_back():
    assert cycles(import_graph(REPO)) == []


def test_imports_go_down_the_layers_of_the_architecture():
    upward, unplaced = wrong_way(REPO)
    assert unplaced == [], f"give these a line of the layers block of {ARCHITECTURE}"
    assert upward == [], f"these imports go up or sideways in the layers of {ARCHITECTURE}"


def _write(root, files):
    for name, text in files.items():
        os.makedirs(os.path.dirname(root / name), exist_ok=True)
        (root / name).write_text(text)


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path):
    _write(
        tmp_path,
        {
            "ganet_tf/__init__.py": "",
            "ganet_tf/policy/__init__.py": "from ganet_tf.policy.checks import check\n",
            "ganet_tf/policy/checks.py": "def check():\n    from ganet_tf.training.train import fit\n",
            "ganet_tf/training/__init__.py": "",
            "ganet_tf/training/train.py": "from ganet_tf.policy import check\nfit = 1\n",
            "ganet_tf/tuning/__init__.py": "",
            "experiments/__init__.py": "",
            "experiments/reports.py": "from experiments import studies\n",
            "experiments/studies.py": "from experiments.reports import lazy\nafter = lazy('adaptive', 'after')\n",
            "experiments/adaptive.py": "def after():\n    from experiments.studies import STUDIES\n",
        },
    )
    assert cycles(import_graph(str(tmp_path))) == [
        ["experiments.adaptive", "experiments.reports", "experiments.studies"],
        ["ganet_tf.policy", "ganet_tf.policy.checks", "ganet_tf.training.train"],
    ]


def test_an_import_up_the_layers_is_found(tmp_path):
    _write(
        tmp_path,
        {
            "docs/architecture.md": "```layers\nganet_tf.errors\nganet_tf.policy  # run folders\nexperiments*\n```\n",
            "ganet_tf/__init__.py": "",
            "ganet_tf/errors.py": "def fail():\n    from ganet_tf.policy import check\n",
            "ganet_tf/policy/__init__.py": "from ganet_tf.errors import fail\ncheck = 1\n",
            "ganet_tf/cli.py": "",
            "ganet_tf/tuning/__init__.py": "",
            "experiments/__init__.py": "",
        },
    )
    assert wrong_way(str(tmp_path)) == (
        [("ganet_tf.errors", "ganet_tf.policy")],
        ["ganet_tf", "ganet_tf.cli", "ganet_tf.tuning"],
    )
