"""Ctrl-C and SIGTERM stop every command the same way: one line, nothing
half-written, a `--backup-dir` run resumable.

The handler (`stop_handler`) raises nothing: it records the signal, and
`check_stop_signal` raises its interruption where the command is ready to
stop: after every batch and epoch of a fit (`StopSignalCheck`), before an
output is swapped into place, and as a `critical_section` ends. A signal
that arrives inside a garbage-collector callback or a `__del__` method
(JAX and TensorFlow run some) so never prints a traceback there.
"""

import contextlib
import signal
import threading

from ganet_tf import early_signals

# The signals that stop a command (Ctrl-C, `kill`).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised by `check_stop_signal` as Ctrl-C raises `KeyboardInterrupt`.

    A `KeyboardInterrupt`, so every cleanup written for Ctrl-C (staging
    folders removed, fresh folders removed, locks released) runs for it too.
    """

    signal_name = "SIGTERM"


# depth: nested critical sections; pending: a signal that came inside them;
# received: the last stop signal since `forget_stop_signal`.
_held = {"depth": 0, "pending": None, "received": None}


def _interruption(signum):
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def stop_handler(signum, frame):
    """The handler of `STOP_SIGNALS` that `main()` installs: records the
    signal, raises nothing (`check_stop_signal` raises it).

    A second Ctrl-C before the first was acted on (pressed again while a
    long step, such as tracing a model, has not reached a check yet) raises
    at once, outside a `critical_section`: the user insists. SIGTERM never
    raises here, however often it comes (a supervisor may repeat it).
    """
    if signum == signal.SIGINT and _held["received"] is not None and not _held["depth"]:
        raise _interruption(signum)
    _held["received"] = signum
    if _held["depth"]:
        _held["pending"] = signum


def check_stop_signal():
    """Raises `KeyboardInterrupt` (Ctrl-C) or `Terminated` (SIGTERM) if a
    stop signal came since `forget_stop_signal`.

    Called where the command may stop: between batches, before an output
    is swapped into place; not inside a `critical_section`, which runs
    whole. Only while `stop_handler` is installed (by `main()`): a library
    call outside a command never raises a signal recorded by an earlier
    one.
    """
    installed = signal.getsignal(signal.SIGTERM) is stop_handler
    if installed and _held["received"] is not None and not _held["depth"]:
        raise _interruption(_held["received"])


def forget_stop_signal():
    """Forgets the last stop signal: for `main()`, once it has reported it
    (or before it starts a command)."""
    _held["received"] = _held["pending"] = None


@contextlib.contextmanager
def critical_section(raise_after=True):
    """Runs the block (a few renames) whole, so an interruption cannot fall
    between moving an old run aside and the new one in; a stop signal that
    came meanwhile is raised as the block ends (with `stop_handler`
    installed, as `main()` does), or, with `raise_after=False`, by the next
    `check_stop_signal` after it (the files of an epoch's backup, written
    by callbacks one after the other, then all stay or all go: the next
    batch stops the fit)."""
    _held["depth"] += 1
    try:
        yield
    finally:
        _held["depth"] -= 1
    if not _held["depth"] and _held["pending"] is not None:
        signum, _held["pending"] = _held["pending"], None
        if raise_after:
            raise _interruption(signum)


# Exit codes: 128 + the signal's number, as a shell reports a killed process.
EXIT_CODES = {"Ctrl-C": 128 + signal.SIGINT, "SIGTERM": 128 + signal.SIGTERM}


def install_signal_handlers():
    """Makes Ctrl-C and SIGTERM record themselves for `check_stop_signal`,
    which raises `KeyboardInterrupt` and `Terminated` (a no-op outside the
    main thread); returns the previous handlers."""
    if threading.current_thread() is not threading.main_thread():
        return None
    forget_stop_signal()
    previous = {number: signal.signal(number, stop_handler) for number in STOP_SIGNALS}
    # A signal that came while `python -m ganet_tf` was importing
    # (`ganet_tf.early_signals`) is this command's: the first check raises it.
    if early_signals.received:
        _held["received"] = early_signals.received[-1]
        early_signals.received.clear()
    python_defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    return {
        number: python_defaults[number] if handler is early_signals.record else handler
        for number, handler in previous.items()
    }


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
