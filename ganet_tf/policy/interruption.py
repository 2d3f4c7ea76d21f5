"""Ctrl-C and SIGTERM stop every command the same way: one line, nothing
half-written, a `--backup-dir` run resumable."""

import signal
import threading

# Exit codes: 128 + the signal's number, as a shell reports a killed process.
EXIT_CODES = {"Ctrl-C": 128 + signal.SIGINT, "SIGTERM": 128 + signal.SIGTERM}


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, as Ctrl-C raises `KeyboardInterrupt`.

    A `KeyboardInterrupt`, so every cleanup written for Ctrl-C (staging
    folders removed, fresh folders removed, locks released) runs for it too.
    """

    signal_name = "SIGTERM"


def _raise_terminated(signum, frame):
    raise Terminated()


def install_signal_handlers():
    """Makes SIGTERM raise `Terminated` in the main thread (a no-op outside
    it); returns the previous handler, for `restore_signal_handlers`."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _raise_terminated)


def restore_signal_handlers(previous):
    """Puts back the SIGTERM handler `install_signal_handlers` replaced."""
    if previous is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, previous)


def interruption_message(error):
    """`(exit code, one line)` for a `KeyboardInterrupt` (Ctrl-C or SIGTERM)."""
    name = getattr(error, "signal_name", "Ctrl-C")
    line = (
        f"interrupted ({name}): no output was replaced and nothing half-written was left; "
        "with --backup-dir, the same command resumes."
    )
    return EXIT_CODES[name], line
