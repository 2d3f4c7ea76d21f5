"""The folders the commands write: owned, locked, replaced all or nothing.

- `check_output_folder` decides before any training whether a folder may be
  written: it may if it does not exist, is empty, or is an earlier run of
  this project (it holds the `RUN_MARKER` file and only files a run writes).
  Anything else (a file, a folder under a file, the working folder, a folder
  holding the input files, a folder with the user's files) is one error line.
- `FolderLock` is an `O_EXCL` lock file beside the folder, so a second
  process that writes the same folder is refused at its start.
- `write_run_folder` writes a staging folder beside the target, renames an
  earlier run aside, renames the new one in and only then deletes the old
  one. Staging and aside folders of processes that died are cleaned up (an
  earlier run left aside with no run in its place is put back) by the next
  run that takes the lock.
"""

import json
import os
import secrets
import shutil

from ganet_tf.errors import GANetInputError
from ganet_tf.policy.interruption import check_stop_signal
from ganet_tf.policy.interruption import critical_section

# The file that marks a folder as written (and owned) by a ganet_tf command.
RUN_MARKER = ".ganet_tf_run"
# The files of a run: the Keras model, the vectorizer's vocabulary with the
# class names, and the scores with the config (`trained_run` reads them back).
MODEL_FILE = "model.keras"
PREPROCESSING_FILE = "preprocessing.json"
METRICS_FILE = "metrics.json"
RUN_FILES = frozenset({RUN_MARKER, MODEL_FILE, PREPROCESSING_FILE, METRICS_FILE})


def pid_alive(pid):
    """Whether a process `pid` runs on this machine."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def hidden_name(target, kind):
    """A fresh hidden path beside `target`: `.NAME.ganet-KIND-PID-RANDOM`."""
    parent, name = os.path.split(os.path.abspath(target))
    return os.path.join(parent, f".{name}.ganet-{kind}-{os.getpid()}-{secrets.token_hex(4)}")


def stale_paths(target, kind):
    """`hidden_name(target, kind)` paths left by processes that are gone."""
    parent, name = os.path.split(os.path.abspath(target))
    prefix = f".{name}.ganet-{kind}-"
    found = []
    if os.path.isdir(parent):
        for entry in sorted(os.listdir(parent)):
            pid = entry[len(prefix) :].split("-", 1)[0] if entry.startswith(prefix) else ""
            if pid.isdigit() and not pid_alive(int(pid)):
                found.append(os.path.join(parent, entry))
    return found


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.remove(path)


def _first_file_on_the_way(path):
    """The first existing non-folder among `path`'s ancestors, else None."""
    current = os.path.dirname(path)
    while current and current != os.path.dirname(current):
        if os.path.exists(current) and not os.path.isdir(current):
            return current
        current = os.path.dirname(current)
    return None


def check_writable_folder(path, flag):
    """Raises one line if `path` is, or lies under, something not a folder,
    or lies inside a folder a ganet_tf command owns (`RUN_MARKER`)."""
    absolute = os.path.abspath(path)
    if os.path.exists(absolute) and not os.path.isdir(absolute):
        raise GANetInputError(f"{flag} {path} is a file: give a folder.")
    blocker = _first_file_on_the_way(absolute)
    if blocker:
        raise GANetInputError(f"{flag} {path} cannot be made: {blocker} is a file, not a folder.")
    check_outside_runs(os.path.dirname(absolute), flag, path)
    return absolute


def owning_run(path):
    """The nearest of `path` and its ancestors that holds `RUN_MARKER` (a
    folder a ganet_tf command owns and replaces whole), else None."""
    current = os.path.abspath(path)
    while True:
        if os.path.isfile(os.path.join(current, RUN_MARKER)):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def check_outside_runs(folder, flag, path=None):
    """Raises one line if `folder` is, or lies inside, a folder a ganet_tf
    command owns: whatever is added there would be lost when that run is
    replaced, and would make it a folder of the user's.

    Args:
        folder: the folder something is written into (`export --base`, the
            folder of `predict --out FILE`, `tune --directory`).
        flag: the flag that named it, for the message.
        path: what the flag named, when not `folder` itself.
    """
    run = owning_run(folder)
    if run:
        raise GANetInputError(
            f"{flag} {path or folder} lies inside {run}, a folder ganet_tf writes and replaces whole: "
            "give a folder outside it."
        )


def is_inside(path, folder):
    """Whether `path` is `folder` or lies inside it (links resolved)."""
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _is_earlier_version_run(path, entries):
    # Written before the marker existed: exactly the three run files, with
    # the metrics.json that `train` writes.
    if entries != RUN_FILES - {RUN_MARKER}:
        return False
    try:
        with open(os.path.join(path, METRICS_FILE), encoding="utf-8") as handle:
            metrics = json.load(handle)
    except (OSError, ValueError):
        return False
    return isinstance(metrics, dict) and {"test_accuracy", "config"} <= set(metrics)


def is_run_folder(path):
    """Whether `path` is an empty folder or an earlier `train --out` folder."""
    entries = set(os.listdir(path))
    if not entries or (RUN_MARKER in entries and entries <= RUN_FILES):
        return True
    return _is_earlier_version_run(path, entries)


def check_output_folder(path, flag="--out", inputs=(), owned=is_run_folder):
    """Raises one error line unless a command may (re)write the folder `path`.

    Args:
        path: the folder.
        flag: the flag that named it, for the message.
        inputs: files the run reads; they must not lie inside `path`.
        owned: `owned(path)` says whether an existing non-empty folder is
            one this project wrote and may replace.
    """
    absolute = check_writable_folder(path, flag)
    if is_inside(os.getcwd(), absolute):
        raise GANetInputError(f"{flag} {path} is the working folder (or holds it): give a new folder, e.g. runs/NAME.")
    for file in inputs:
        if file and is_inside(file, absolute):
            raise GANetInputError(
                f"{flag} {path} holds the input file {file}: give a folder of its own, e.g. runs/NAME."
            )
    if os.path.isdir(absolute) and not owned(absolute):
        raise GANetInputError(
            f"{flag} {path} holds files ganet_tf did not write: give a new or "
            "empty folder (ganet_tf only replaces folders it wrote)."
        )
    return absolute


class FolderLock:
    """An `O_EXCL` lock file `.NAME.ganet-lock` beside the folder `path`.

    Held while a process writes the folder; a second process is refused
    with one error line. A lock whose process is gone is taken over.

    Example:

    >>> with FolderLock("runs/trec", "--out"):
    ...     pass
    """

    def __init__(self, path, flag="--out"):
        parent, name = os.path.split(os.path.abspath(path))
        self.path = os.path.join(parent, f".{name}.ganet-lock")
        self.folder = path
        self.flag = flag
        self.held = False
        self.created = []

    def acquire(self):
        parent = os.path.dirname(self.path)
        while not os.path.isdir(parent):
            self.created.append(parent)
            parent = os.path.dirname(parent)
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        for _ in range(2):
            try:
                descriptor = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                owner = self._owner()
                if owner is not None and pid_alive(owner) and owner != os.getpid():
                    raise GANetInputError(
                        f"{self.flag} {self.folder} is being written by another "
                        f"ganet_tf process (pid {owner}): wait for it, or give "
                        "another folder."
                    ) from None
                if owner == os.getpid():
                    raise GANetInputError(
                        f"{self.flag} {self.folder} is already in use by this run: "
                        "give --out and --backup-dir different folders."
                    ) from None
                _remove(self.path)  # its process is gone
                continue
            with os.fdopen(descriptor, "w") as handle:
                handle.write(str(os.getpid()))
            self.held = True
            return self
        raise GANetInputError(f"Could not lock {self.folder}: remove {self.path}.")

    def _owner(self):
        try:
            with open(self.path) as handle:
                return int(handle.read().strip() or "0")
        except (OSError, ValueError):
            return None

    def release(self):
        if self.held:
            self.held = False
            if self._owner() == os.getpid():
                os.remove(self.path)
        for folder in self.created:  # innermost first; only if still empty
            try:
                os.rmdir(folder)
            except OSError:
                break
        self.created = []

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc_info):
        self.release()


def clean_stale(path):
    """Removes what killed writers of `path` left beside it.

    A run renamed aside whose replacement never arrived is renamed back, so
    an earlier run is never lost; every other staging or aside folder of a
    dead process is deleted. Call it while holding the folder's lock.
    """
    for aside in stale_paths(path, "old"):
        if not os.path.exists(path):
            os.rename(aside, path)
        else:
            _remove(aside)
    for staging in stale_paths(path, "new"):
        _remove(staging)


def write_run_folder(path, write_files, owned=is_run_folder):
    """Writes a run folder all or nothing.

    `write_files(staging)` writes the files into a fresh staging folder
    beside `path`; `RUN_MARKER` is added, then an earlier `path` is renamed
    aside, the staging folder renamed to `path` and the earlier one deleted.
    A failure before the swap leaves `path` as it was.
    """
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    clean_stale(path)
    staging = hidden_name(path, "new")
    os.mkdir(staging)
    try:
        write_files(staging)
        with open(os.path.join(staging, RUN_MARKER), "w", encoding="utf-8") as handle:
            handle.write("Written by ganet_tf train; replaced as a whole by the next run.\n")
        os.chmod(staging, 0o755)
        if os.path.isdir(path) and not owned(path):
            raise GANetInputError(
                f"{path} got files ganet_tf did not write while training: "
                "nothing replaced; train again with a new --out."
            )
        aside = None
        check_stop_signal()
        with critical_section():
            if os.path.exists(path):
                aside = hidden_name(path, "old")
                os.rename(path, aside)
            try:
                os.rename(staging, path)
            except BaseException:
                if aside is not None:
                    os.rename(aside, path)
                raise
    except BaseException:
        _remove(staging)
        raise
    if aside is not None:
        _remove(aside)
    return path
