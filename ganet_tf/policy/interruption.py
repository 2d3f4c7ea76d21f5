"""Ctrl-C and SIGTERM stop every command the same way: one line, nothing
half-written, a `--backup-dir` run resumable."""

import signal
import threading

from ganet_tf.training.run_folder import STOP_SIGNALS
from ganet_tf.training.run_folder import Terminated  # noqa: F401 - part of the policy's API
from ganet_tf.training.run_folder import forget_stop_signal
from ganet_tf.training.run_folder import stop_handler

# Exit codes: 128 + the signal's number, as a shell reports a killed process.
EXIT_CODES = {"Ctrl-C": 128 + signal.SIGINT, "SIGTERM": 128 + signal.SIGTERM}


def install_signal_handlers():
    """Makes Ctrl-C raise `KeyboardInterrupt` and SIGTERM `Terminated` in the
    main thread, both held back inside a `critical_section` (a no-op outside
    the main thread); returns the previous handlers."""
    if threading.current_thread() is not threading.main_thread():
        return None
    forget_stop_signal()
    return {number: signal.signal(number, stop_handler) for number in STOP_SIGNALS}


def restore_signal_handlers(previous):
    """Puts back the handlers `install_signal_handlers` replaced and
    forgets any stop signal they recorded."""
    forget_stop_signal()
    if previous is not None and threading.current_thread() is threading.main_thread():
        for number, handler in previous.items():
            if handler is not None:  # None: a handler set outside Python, not restorable
                signal.signal(number, handler)


def interruption_message(error):
    """`(exit code, one line)` for a `KeyboardInterrupt` (Ctrl-C or SIGTERM);
    the signal is then forgotten (`check_stop_signal` no longer raises it)."""
    forget_stop_signal()
    name = getattr(error, "signal_name", "Ctrl-C")
    line = (
        f"interrupted ({name}): no output was replaced and nothing half-written was left; "
        "with --backup-dir, the same command resumes."
    )
    return EXIT_CODES[name], line
