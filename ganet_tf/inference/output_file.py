"""Where `predict` and `translate` write their lines: stdout, or a file replaced whole."""

import os
import sys

from ganet_tf.errors import GANetInputError
from ganet_tf.policy.interruption import check_stop_signal
from ganet_tf.policy.interruption import critical_section
from ganet_tf.policy.run_folder import FolderLock
from ganet_tf.policy.run_folder import check_outside_runs
from ganet_tf.policy.run_folder import check_writable_folder
from ganet_tf.policy.run_folder import clean_stale
from ganet_tf.policy.run_folder import hidden_name


class OutputFile:
    """Standard output, or a file written staged and renamed into place.

    With a `path`, the lines go to a hidden file beside it
    (`.NAME.ganet-new-PID-*`), which replaces `path` in one `os.replace`
    only when the command succeeds: an error or Ctrl-C leaves `path` as it
    was. A lock file beside it (`.NAME.ganet-lock`) refuses a second
    process writing the same file; staging files of killed processes are
    removed. `check()` refuses, before any work, a `path` that is a folder,
    lies under a file, or is one of the input files.

    Args:
        path: the output file, or None for standard output.
        inputs: the files the command reads.
        flag: the flag that named `path`, for the messages.

    Example:

    >>> with OutputFile("predictions.jsonl", inputs=["questions.txt"]) as out:
    ...     out.write('{"label": "LOC"}')
    >>> with open("predictions.jsonl", encoding="utf-8") as handle:
    ...     print(handle.read(), end="")
    {"label": "LOC"}
    """

    def __init__(self, path=None, inputs=(), flag="--out"):
        self.path = path
        self.inputs = [file for file in inputs if file]
        self.flag = flag
        self.lines = 0
        self._handle = None
        self._staging = None
        self._lock = None

    def check(self):
        """Raises one error line if `path` may not be written."""
        if self.path is None:
            return
        path = self.path
        if os.path.isdir(path):
            raise GANetInputError(f"{self.flag} {path} is a folder: give a file, e.g. {path}/predictions.jsonl.")
        folder = os.path.dirname(os.path.abspath(path))
        check_writable_folder(folder, f"{self.flag}'s folder")
        check_outside_runs(folder, self.flag, path)  # never into a run folder
        for file in self.inputs:
            same = os.path.realpath(file) == os.path.realpath(path)
            if os.path.exists(path) and os.path.exists(file):
                same = same or os.path.samefile(file, path)
            if same:
                raise GANetInputError(
                    f"{self.flag} {path} is the input file: give another file (the input is never overwritten)."
                )

    def __enter__(self):
        self.check()
        self.lines = 0
        if self.path is None:
            self._handle = sys.stdout
            return self
        self._lock = FolderLock(self.path, self.flag).acquire()
        try:
            clean_stale(self.path)
            self._staging = hidden_name(self.path, "new")
            self._handle = open(self._staging, "w", encoding="utf-8", newline="\n")
        except BaseException:
            self._lock.release()
            raise
        return self

    def write(self, line):
        """Writes `line` and a line break (after Ctrl-C or SIGTERM, raises
        the interruption instead: `check_stop_signal`)."""
        check_stop_signal()
        self._handle.write(line + "\n")
        self.lines += 1

    def flush(self):
        self._handle.flush()

    def __exit__(self, kind, error, traceback):
        if self.path is None:
            self._handle.flush()
            return
        try:
            self._handle.close()
            if kind is None:
                check_stop_signal()
                with critical_section():
                    os.replace(self._staging, self.path)
        finally:
            if os.path.exists(self._staging):
                os.remove(self._staging)
            self._lock.release()
