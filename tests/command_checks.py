"""Checks shared by the command-line tests: what a command left on disk and
the one error line it printed."""

import os
import signal
import subprocess
import sys

from tests.conftest import REPO

# Run in a fresh interpreter before the code under test: files may grow to
# `sys.argv[1]` bytes, and a write past that fails with EFBIG (SIGXFSZ
# ignored, so it does not kill the process), as a write to a full disk fails.
FILE_SIZE_LIMIT = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = int(sys.argv.pop(1))
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
"""


def send_sigterm():
    """SIGTERM to this process: its handler records it where the code is."""
    os.kill(os.getpid(), signal.SIGTERM)


class SigtermWhileCollected:
    """Made and collected at once, it sends SIGTERM from `__del__`: the
    handler runs there, as in a garbage-collector callback (where CI met
    it), where Python would print and ignore an exception it raised."""

    def __del__(self):
        send_sigterm()


def tree(root):
    """Every path under `root`, relative, sorted (what a refused run must not change)."""
    return sorted(
        os.path.relpath(os.path.join(folder, name), root)
        for folder, folders, files in os.walk(root)
        for name in folders + files
    )


def error_text_line(err):
    """The one `ganet_tf: error:` line of the stderr text `err` (warning lines aside)."""
    lines = [line for line in err.splitlines() if not line.startswith("ganet_tf: warning:")]
    assert len(lines) == 1 and lines[0].startswith("ganet_tf: error: "), err
    return lines[0]


def error_line(capsys):
    """The one `ganet_tf: error:` line that the command printed to stderr (`capsys`)."""
    return error_text_line(capsys.readouterr().err)


def snapshot(root):
    """`{path under root: its bytes, None for a folder}`: what a failed write
    must leave as it was."""
    found = {}
    for folder, folders, files in os.walk(root):
        found.update({os.path.relpath(os.path.join(folder, name), root): None for name in folders})
        for name in files:
            with open(os.path.join(folder, name), "rb") as handle:
                found[os.path.relpath(os.path.join(folder, name), root)] = handle.read()
    return found


def run_with_file_size_limit(limit, code, *args):
    """Runs the Python `code` with `args` (`sys.argv[1:]`) in a fresh
    interpreter whose files may grow to `limit` bytes (`FILE_SIZE_LIMIT`)."""
    # TensorFlow's C++ log at ganet_tf's default level, as a user sees it
    # (tests/conftest.py sets 2, which lets through a CPU's "failed call to cuInit").
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", FILE_SIZE_LIMIT + code, str(limit), *args],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
    )


def check_full_disk_changes_nothing(argv, root, target, limit=16_000):
    """Runs `python -m ganet_tf ARGV` with files limited to `limit` bytes
    (default: below the variables of any SavedModel the tests export);
    asserts exit code 1, no traceback, one error line naming `target`, the
    problem and the fix, and nothing changed under `root`."""
    before = snapshot(root)
    done = run_with_file_size_limit(limit, "import runpy; runpy.run_module('ganet_tf', run_name='__main__')", *argv)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    line = error_text_line(done.stderr)
    assert line.startswith(f"ganet_tf: error: no room to write {target} (File too large): free space on its disk")
    assert line.endswith("run the command again; no output was replaced.")
    assert snapshot(root) == before
