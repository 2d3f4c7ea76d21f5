"""A full disk stops every command the same way: one line naming it and the
fix, the earlier output kept.

Python's own writes (`model.save`, `open`) raise an `OSError` with the
system's error number; `main()` prints it with `os_error_message`.
TensorFlow's (SaveV2 of a SavedModel's variables, its graph) raise a
`tf.errors.OpError` that names the system's error only in its text:
`tensorflow_disk_errors` raises that one as the same `OSError`.
"""

import contextlib
import errno
import os

# The system's errors of a write that found no room: disk full, a file over
# the file size limit (`ulimit -f`), a disk quota used up.
DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
# A full disk is a system error, not bad input: exit code 1, as every
# `OSError` that stops a command.
DISK_FULL_EXIT_CODE = 1


def os_error_message(error):
    """`(exit code, one line)` for an `OSError` that stopped a command.

    A full disk (`DISK_FULL_ERRNOS`) names what was written, the problem
    and the fix; any other error is the system's line. Both exit with
    code 1.
    """
    if error.errno not in DISK_FULL_ERRNOS:
        return 1, str(error)
    what = error.filename or "the output"
    line = (
        f"no room to write {what} ({error.strerror or os.strerror(error.errno)}): free space on its disk "
        "(or raise the file size limit, ulimit -f) and run the command again; no output was replaced."
    )
    return DISK_FULL_EXIT_CODE, line


@contextlib.contextmanager
def tensorflow_disk_errors(path):
    """Raises TensorFlow's error of a full disk as Python's `OSError`.

    Inside the block, a `tf.errors.OpError` whose text holds the system's
    message of one of `DISK_FULL_ERRNOS` (e.g. `File too large [Op:SaveV2]`)
    is raised as `OSError(errno, message, path)`, `path` being the output
    the block writes; other errors pass unchanged.

    Example:

    >>> # Not run by the tests: `module` and `staging` stand for an export's own.
    >>> with tensorflow_disk_errors("saved_models/m/1"):  # doctest: +SKIP
    ...     tf.saved_model.save(module, staging)
    """
    import tensorflow as tf

    try:
        yield
    except tf.errors.OpError as error:
        for code in DISK_FULL_ERRNOS:
            if os.strerror(code) in str(error.message):
                raise OSError(code, os.strerror(code), path) from None
        raise
