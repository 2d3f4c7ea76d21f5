"""The stop-signal handler records the signal and raises nothing; the
command's own code raises it (`check_stop_signal`)."""

import signal
import sys

import pytest

from ganet_tf.policy import Terminated
from ganet_tf.policy import check_stop_signal
from ganet_tf.policy import install_signal_handlers
from ganet_tf.policy import interruption_message
from ganet_tf.policy import restore_signal_handlers
from ganet_tf.policy.interruption import forget_stop_signal
from ganet_tf.policy.interruption import stop_handler
from tests.command_checks import SigtermWhileCollected
from tests.command_checks import send_sigterm


@pytest.mark.parametrize("number, name, code", [(signal.SIGTERM, "SIGTERM", 143), (signal.SIGINT, "Ctrl-C", 130)])
def test_the_handler_raises_nothing_and_the_check_raises_the_signal(number, name, code):
    previous = install_signal_handlers()
    try:
        stop_handler(number, None)  # returns: nothing raised where the signal landed
        with pytest.raises(KeyboardInterrupt) as raised:
            check_stop_signal()
        assert interruption_message(raised.value) == (
            code,
            f"interrupted ({name}): no output was replaced and nothing half-written was left; "
            "with --backup-dir, the same command resumes.",
        )
        check_stop_signal()  # reported: forgotten
    finally:
        restore_signal_handlers(previous)


def test_a_sigterm_inside_a_del_prints_no_traceback(monkeypatch):
    # Where CI met it: inside a garbage-collector callback, an exception of
    # the handler was printed as "Exception ignored in: ..." with a traceback.
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    previous = install_signal_handlers()
    try:
        send_sigterm()
        SigtermWhileCollected()
        assert unraisable == []
        with pytest.raises(Terminated):
            check_stop_signal()
    finally:
        restore_signal_handlers(previous)


def test_a_critical_section_runs_whole_and_raises_the_signal_as_it_ends(tmp_path):
    from ganet_tf.policy import critical_section
    from ganet_tf.policy import write_json

    previous = install_signal_handlers()
    try:
        with pytest.raises(Terminated):
            with critical_section():
                send_sigterm()
                write_json(str(tmp_path / "a.json"), {"epoch": 1})  # its check waits for the section's end
                write_json(str(tmp_path / "b.json"), {"epoch": 1})
        assert sorted(path.name for path in tmp_path.iterdir()) == ["a.json", "b.json"]
    finally:
        restore_signal_handlers(previous)


def test_a_second_ctrl_c_before_the_first_was_acted_on_raises_at_once_a_second_sigterm_not():
    # Ctrl-C pressed again while a long step (tracing) has reached no check.
    previous = install_signal_handlers()
    try:
        stop_handler(signal.SIGINT, None)
        with pytest.raises(KeyboardInterrupt):
            stop_handler(signal.SIGINT, None)
        forget_stop_signal()
        stop_handler(signal.SIGTERM, None)
        stop_handler(signal.SIGTERM, None)  # returns
        with pytest.raises(Terminated):
            check_stop_signal()
    finally:
        restore_signal_handlers(previous)


def test_a_second_signal_inside_a_critical_section_waits_for_its_end():
    from ganet_tf.policy import critical_section

    previous = install_signal_handlers()
    try:
        with pytest.raises(KeyboardInterrupt):
            with critical_section():
                stop_handler(signal.SIGINT, None)
                stop_handler(signal.SIGINT, None)  # returns: the renames run whole
    finally:
        restore_signal_handlers(previous)


def test_a_signal_of_the_import_window_is_the_commands_and_python_defaults_come_back(monkeypatch):
    from ganet_tf import early_signals

    monkeypatch.setattr(early_signals, "received", [signal.SIGTERM])
    outer = {number: signal.signal(number, early_signals.record) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        previous = install_signal_handlers()
        try:
            with pytest.raises(Terminated):
                check_stop_signal()
            assert early_signals.received == []
        finally:
            restore_signal_handlers(previous)
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        for number, handler in outer.items():
            signal.signal(number, handler)
