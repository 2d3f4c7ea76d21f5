"""The command line's import of TensorFlow, without its C++ start-up log on stderr.

TensorFlow 2.21 logs through absl, and its shared libraries log while they
load, before absl is initialised: such lines ("I0000 ... cudart_stub.cc:31]
Could not find cuda drivers on your machine", oneDNN and CPU-feature notes,
factory registrations) ignore `TF_CPP_MIN_LOG_LEVEL`. `import_tensorflow`
sets `TF_CPP_MIN_LOG_LEVEL` to 3 unless the user set it (3 also silences
the "failed call to cuInit" error that a CPU-only machine logs at its first
operation), imports TensorFlow with stderr going to a temporary file, then
writes back everything except the absl lines below that level. So
`TF_CPP_MIN_LOG_LEVEL=0` shows all of TensorFlow's log again, and an
import that fails still shows why.

Only `python -m ganet_tf` (and the `ganet-tf` script) calls it, once its
flags are parsed (`ganet_tf.cli.main`): it changes the process (an
environment variable, file descriptor 2 for the import), which `import
ganet_tf` in a user's program never does.
"""

import contextlib
import os
import re
import sys
import tempfile

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
