"""Output folders: checked and locked before any work, replaced all or nothing."""

import contextlib
import dataclasses
import json
import os
import shutil
from collections.abc import Callable

from ganet_tf.errors import GANetInputError
from ganet_tf.policy.interruption import check_stop_signal
from ganet_tf.policy.interruption import critical_section
from ganet_tf.policy.non_finite_guard import TrainingDivergedError
from ganet_tf.policy.run_folder import FolderLock
from ganet_tf.policy.run_folder import check_output_folder
from ganet_tf.policy.run_folder import clean_stale
from ganet_tf.policy.run_folder import is_inside
from ganet_tf.policy.run_folder import is_run_folder


@dataclasses.dataclass
class OutputFolder:
    """A folder a command writes, and the rules it is written by.

    Args:
        path: the folder (None: the flag was not given).
        flag: the flag that named it, e.g. `"--out"`.
        owned: `owned(path)` says whether an existing non-empty folder was
            written by this command, and so may be replaced.
        keep_on_failure: `keep_on_failure(path)` says whether a folder this
            run made is kept when the run fails or is interrupted (a backup
            with a finished epoch, to resume from); None: a folder the run
            made is removed.

    Example:

    >>> # Not run by the tests: `write_files` stands for a command's writer.
    >>> with locked_output_folders([OutputFolder("runs/a", "--out")]):  # doctest: +SKIP
    ...     write_run_folder("runs/a", write_files)
    """

    path: str
    flag: str = "--out"
    owned: Callable = is_run_folder
    keep_on_failure: Callable = None


def _inputs(inputs):
    # `(flag, path)` pairs; a bare path is an input file.
    return [(item, None) if isinstance(item, str) else (item[1], item[0]) for item in inputs if item]


def check_output_folders(folders, inputs=()):
    """Raises one error line unless every folder in `folders` may be written.

    Before any work: each folder must be new, empty or one its command
    wrote (`OutputFolder.owned`), not a file nor under one, not the working
    folder; it must not hold an input nor lie inside an input folder (a run
    folder it reads), and no two folders may be the same or nested.

    Args:
        folders: `OutputFolder`s; those whose path is None are skipped.
        inputs: what the command reads: paths, or `(flag, path)` pairs
            (files or folders), e.g. `("--model", "runs/trec")`.

    Returns:
        The `OutputFolder`s that were given.
    """
    given = [folder for folder in folders if folder and folder.path]
    for index, first in enumerate(given):
        for second in given[index + 1 :]:
            if is_inside(first.path, second.path) or is_inside(second.path, first.path):
                relation = (
                    "are the same folder"
                    if os.path.realpath(first.path) == os.path.realpath(second.path)
                    else "lie one inside the other"
                )
                raise GANetInputError(
                    f"{first.flag} {first.path} and {second.flag} {second.path} {relation}: "
                    "give each a folder of its own, neither inside the other."
                )
    for folder in given:
        for path, flag in _inputs(inputs):
            named = f"{flag} {path}" if flag else f"the input file {path}"
            if is_inside(path, folder.path):
                raise GANetInputError(
                    f"{folder.flag} {folder.path} holds {named}: give a folder of its own, e.g. runs/NAME."
                )
            if os.path.isdir(path) and is_inside(folder.path, path):
                raise GANetInputError(
                    f"{folder.flag} {folder.path} lies inside {named}, which it reads: give a folder outside it."
                )
        check_output_folder(folder.path, folder.flag, owned=folder.owned)
    return given


@contextlib.contextmanager
def locked_output_folders(folders, inputs=()):
    """Checks (`check_output_folders`) and locks the folders for the block.

    Each folder is locked against a second process (`FolderLock`) and the
    left-overs of a killed writer are cleaned (`clean_stale`) before the
    block runs. If the block fails or is interrupted, a folder this run
    made is removed unless its `keep_on_failure` says to keep it (never
    after a `TrainingDivergedError`).

    Example:

    >>> # Not run by the tests: `out`, `path` and `work` stand for a command's own.
    >>> with locked_output_folders([OutputFolder(out, "--out")], inputs=[("--file", path)]):  # doctest: +SKIP
    ...     result = work()
    """
    given = check_output_folders(folders, inputs)
    fresh = [folder for folder in given if not os.path.exists(folder.path)]
    locks = []
    try:
        for folder in given:
            locks.append(FolderLock(folder.path, folder.flag).acquire())
            clean_stale(folder.path)
        yield given
    except BaseException as error:
        # A diverged run is not resumed (it would diverge again): even a
        # backup with finished epochs goes.
        resumable = not isinstance(error, TrainingDivergedError)
        with critical_section():
            for folder in fresh:
                keep = resumable and folder.keep_on_failure and os.path.isdir(folder.path)
                keep = keep and folder.keep_on_failure(folder.path)
                if os.path.isdir(folder.path) and not keep:
                    shutil.rmtree(folder.path, ignore_errors=True)
        raise
    finally:
        for lock in reversed(locks):
            lock.release()


def write_file_atomically(path, write, mode="w", encoding="utf-8"):
    """Writes the file `path` all or nothing.

    `write(handle)` writes to a temporary file beside `path`, which is then
    renamed over it: a reader, or a run killed at any moment, sees the old
    file or the new one, never half of one.
    """
    folder, name = os.path.split(os.path.abspath(path))
    temporary = os.path.join(folder, f".{name}.ganet-tmp-{os.getpid()}")
    try:
        with open(temporary, mode, encoding=None if "b" in mode else encoding) as handle:
            write(handle)
        check_stop_signal()
        with critical_section():
            os.replace(temporary, path)
    finally:
        if os.path.lexists(temporary):
            os.remove(temporary)
    return path


def write_json(path, value, indent=1, ensure_ascii=True):
    """Writes `value` as JSON (`json.dump` with `indent`, `ensure_ascii`) to
    `path` all or nothing (`write_file_atomically`)."""
    return write_file_atomically(
        path, lambda handle: json.dump(value, handle, indent=indent, ensure_ascii=ensure_ascii)
    )
