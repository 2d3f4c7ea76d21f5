"""Stop signals that come while `python -m ganet_tf` is still starting.

The command line imports TensorFlow and Keras (seconds) before a command's
own signal handler (`ganet_tf.policy.interruption`) is installed. So that
Ctrl-C or SIGTERM in that window stops the command with its one line too,
instead of a traceback of the import (Ctrl-C) or a silent death (SIGTERM),
`ganet_tf/__main__.py` and `ganet_tf.cli.main` install `record` first thing
when, and only when, the interpreter was started as the command line
(`python -m ganet_tf` or the `ganet-tf` script); `import ganet_tf` in a
user's program never touches its handlers. The command's handler takes the
signal over (`received`), and its first check raises it.
"""

import os
import signal
import sys

# The signals `record` has seen, oldest first.
received = []
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def record(signum, frame):
    """The handler of the import window: remembers the signal, raises nothing."""
    received.append(signum)


# Set by `ganet_tf.__main__`: this interpreter runs the command line,
# however it started it (`python -m ganet_tf`, `runpy.run_module`).
_RUNNING_MAIN = [False]


def mark_command():
    """Records that `ganet_tf.__main__` runs in this interpreter."""
    _RUNNING_MAIN[0] = True


def started_as_command(orig_argv=None, argv0=None):
    """Whether this interpreter runs `python -m ganet_tf` (or `ganet_tf.__main__`
    another way) or the `ganet-tf` script.

    Args:
        orig_argv: the interpreter's command line (default `sys.orig_argv`).
        argv0: the script's path (default `sys.argv[0]`).

    Returns:
        True for `python [options] -m ganet_tf ...` and `ganet-tf ...`.
    """
    if _RUNNING_MAIN[0] and orig_argv is None and argv0 is None:
        return True
    orig_argv = list(getattr(sys, "orig_argv", []) if orig_argv is None else orig_argv)
    argv0 = (sys.argv[:1] or [""])[0] if argv0 is None else argv0
    if "-m" in orig_argv[1:]:
        start = orig_argv.index("-m", 1)
        return orig_argv[start + 1 : start + 2] == ["ganet_tf"]
    return os.path.basename(argv0) == "ganet-tf"


def install_if_command():
    """Installs `record` for SIGINT and SIGTERM if this is the command line,
    the handlers are still Python's defaults, and this is the main thread."""
    if not started_as_command():
        return
    defaults = (signal.default_int_handler, signal.SIG_DFL)
    for number in _STOP_SIGNALS:
        if signal.getsignal(number) in defaults:
            try:
                signal.signal(number, record)
            except ValueError:  # not the main thread
                return
