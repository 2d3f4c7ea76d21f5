"""Imports TensorFlow without its C++ start-up log on stderr.

TensorFlow 2.21 logs through absl, and its shared libraries log while they
load, before absl is initialised: such lines ("I0000 ... cudart_stub.cc:31]
Could not find cuda drivers on your machine", oneDNN and CPU-feature notes,
factory registrations) ignore `TF_CPP_MIN_LOG_LEVEL`. `import_tensorflow`
sets `TF_CPP_MIN_LOG_LEVEL` to 3 unless the user set it (3 also silences
the "failed call to cuInit" error that a CPU-only machine logs at its first
operation), imports TensorFlow with stderr going to a temporary file, then
writes back everything except the absl lines below that level. So
`TF_CPP_MIN_LOG_LEVEL=0` shows all of TensorFlow's log again, and an
import that fails still shows why. On another Keras backend, where Keras
or another package may import TensorFlow later, `quiet_later_import` makes
that first import quiet the same way.
"""

import contextlib
import importlib.abc
import os
import re
import sys
import tempfile

from ganet_tf.backends import tensorflow_installed

# Default level: 3 drops TensorFlow's INFO, WARNING and ERROR C++ lines.
DEFAULT_LOG_LEVEL = "3"
# "I0000 00:00:1795432609.045654    9387 port.cc:153] ..." (severity first).
_ABSL_LINE = re.compile(rb"^([IWEF])\d{4} \d\d:\d\d:[\d.]+ +\d+ [^ \]]+:\d+\] ")
_ABSL_NOTICE = b"WARNING: All log messages before absl::InitializeLog() is called"
# Python's own lines: a warning ("path.py:3: UserWarning: ...") or traceback.
_PYTHON_LINE = re.compile(rb"^(\S+:\d+: \w+: |Traceback )")
_SEVERITY = {b"I": 0, b"W": 1, b"E": 2, b"F": 3}


def import_tensorflow():
    """Imports and returns `tensorflow`, keeping only the wanted stderr."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", DEFAULT_LOG_LEVEL)
    if "tensorflow" not in sys.modules:
        with _quiet_stderr():
            import tensorflow  # noqa: F401
    return sys.modules["tensorflow"]


def quiet_later_import():
    """Makes the first import of `tensorflow`, by whichever package, quiet.

    On another Keras backend `ganet_tf` does not import TensorFlow, but Keras
    or a package may import it later (a `tf.data` input, a TensorFlow-based
    layer). This installs a `sys.meta_path` finder that runs that import as
    `import_tensorflow` does, then removes itself. Nothing happens where
    TensorFlow is already imported or is not installed.
    """
    if "tensorflow" in sys.modules or any(isinstance(finder, _QuietFinder) for finder in sys.meta_path):
        return
    if not tensorflow_installed():
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", DEFAULT_LOG_LEVEL)
    sys.meta_path.insert(0, _QuietFinder())


class _QuietFinder(importlib.abc.MetaPathFinder):
    """Finds `tensorflow` as the other finders do, with a loader that
    executes it under `_quiet_stderr`. A lookup alone (`find_spec`, which
    Keras makes to see what is installed) leaves it in place; the import
    removes it."""

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _QuietLoader(spec.loader)
                return spec
        return None


class _QuietLoader(importlib.abc.Loader):
    """Wraps a module loader: `exec_module` under `_quiet_stderr`, once the
    finder that made it is out of `sys.meta_path`."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, _QuietFinder)]
        with _quiet_stderr():
            self.loader.exec_module(module)


@contextlib.contextmanager
def _quiet_stderr():
    """Runs the block with file descriptor 2 going to a temporary file, then
    writes back the lines that `TF_CPP_MIN_LOG_LEVEL` keeps (all of them
    at level 0 or below)."""
    try:
        level = int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", DEFAULT_LOG_LEVEL))
    except ValueError:
        level = 0
    if level <= 0:
        yield
        return
    sys.stderr.flush()
    with tempfile.TemporaryFile() as captured:
        try:
            saved = os.dup(2)
        except OSError:  # no stderr to protect
            yield
            return
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = _kept_lines(captured, level)
            if kept:
                sys.stderr.flush()
                os.write(2, b"".join(kept))


def _kept_lines(lines, level):
    """Lines not from absl records below `level` (a record's continuation
    lines, such as the CPU-feature note's second line, go with it)."""
    kept, dropping = [], False
    for line in lines:
        match = _ABSL_LINE.match(line)
        if line.startswith(_ABSL_NOTICE):
            dropping = True
        elif match:
            dropping = _SEVERITY[match.group(1)] < level
        elif _PYTHON_LINE.match(line):
            dropping = False
        if not dropping:
            kept.append(line)
    return kept
