"""The shared reliability helpers, one by one (the per-command suite is tests/reliability)."""

import errno
import gzip
import os

import pytest

from ganet_tf.cli import build_parser
from ganet_tf.errors import GANetInputError
from ganet_tf.policy import OutputFolder
from ganet_tf.policy import Terminated
from ganet_tf.policy import check_flags_apply
from ganet_tf.policy import check_number
from ganet_tf.policy import check_output_folders
from ganet_tf.policy import check_stop_signal
from ganet_tf.policy import critical_section
from ganet_tf.policy import explicit_flags
from ganet_tf.policy import install_signal_handlers
from ganet_tf.policy import os_error_message
from ganet_tf.policy import read_input_lines
from ganet_tf.policy import read_run_json
from ganet_tf.policy import restore_signal_handlers
from ganet_tf.policy import tensorflow_disk_errors
from ganet_tf.policy import write_file_atomically
from tests.command_checks import SigtermWhileCollected
from tests.command_checks import send_sigterm


@pytest.mark.parametrize(
    "value, bounds, message",
    [
        (float("nan"), {"above": 0}, "--x must be a finite number, got nan."),
        (float("-inf"), {}, "--x must be a finite number, got -inf."),
        (0.0, {"above": 0}, "--x must be positive, got 0.0."),
        (1.0, {"at_least": 0, "below": 1}, "--x must be in [0, 1), got 1.0."),
        (0, {"above": 0, "at_most": 1}, "--x must be in (0, 1], got 0."),
        (0, {"at_least": 1, "integer": True}, "--x must be a positive integer, got 0."),
        (2.5, {"at_least": 1, "integer": True}, "--x must be a positive integer, got 2.5."),
        (True, {"integer": True}, "--x must be an integer, got True."),
        (-1, {"at_least": 0, "integer": True}, "--x must be an integer >= 0, got -1."),
        (None, {}, "--x needs a value."),
    ],
)
def test_check_number_names_the_flag_the_range_and_the_value(value, bounds, message):
    with pytest.raises(GANetInputError) as error:
        check_number("x", value, **bounds)
    assert str(error.value) == message


def test_check_number_returns_good_values():
    assert check_number("--lr", 1e-3, above=0) == 1e-3
    assert check_number("--limit", None, at_least=1, integer=True, optional=True) is None
    assert check_number("--dropout", 0, at_least=0, below=1) == 0


def test_explicit_flags_tells_typed_flags_from_defaults():
    argv = ["seq2seq", "--attention=gated", "--halting", "0.1", "--straight-through", "--lr", "0.001"]
    assert explicit_flags(build_parser(), argv) == {"attention", "halting_penalty", "straight_through", "lr"}


def test_check_flags_apply_refuses_or_warns(capsys):
    applies = {"halting_penalty": ("hier-act",), "gate_bias": ("gated",)}
    check_flags_apply({"gate_bias"}, applies, "--attention", "gated")
    with pytest.raises(GANetInputError, match="--halting-penalty applies to --attention hier-act only, not gated"):
        check_flags_apply({"halting_penalty", "gate_bias"}, applies, "--attention", "gated")
    check_flags_apply({"halting_penalty"}, applies, "--attention", "gated", refuse=False)
    assert capsys.readouterr().err.startswith("ganet_tf: warning: --halting-penalty applies to")


def test_outputs_that_are_the_same_nested_or_inside_an_input_are_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    cases = [
        ([OutputFolder(str(tmp_path / "a")), OutputFolder(str(tmp_path / "a"), "--export")], (), "the same folder"),
        ([OutputFolder(str(tmp_path / "a")), OutputFolder(str(tmp_path / "a" / "b"), "--b")], (), "one inside"),
        ([OutputFolder(str(run / "o"))], [("--model", str(run))], "lies inside --model"),
        ([OutputFolder(str(tmp_path))], [("--file", str(tmp_path / "x.txt"))], "holds --file"),
    ]
    for folders, inputs, words in cases:
        with pytest.raises(GANetInputError, match=words):
            check_output_folders(folders, inputs)
    assert check_output_folders([OutputFolder(None), OutputFolder(str(tmp_path / "new"))])[0].flag == "--out"


def test_input_text_as_written_and_damaged_files_in_one_line(tmp_path):
    path = tmp_path / "a.txt.gz"
    with gzip.open(path, "wb") as handle:
        handle.write("\ufeffone\r\ntwo\u2028half\rthree\n".encode())
    assert read_input_lines(str(path)) == ["one", "two\u2028half", "three"]
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(GANetInputError, match="a.txt.gz is a damaged gzip archive"):
        read_input_lines(str(path))
    (tmp_path / "b.txt").write_bytes("ok\nstill ok\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(GANetInputError, match=r"b.txt:3 is not valid utf-8 text \(byte 0xe9\)"):
        read_input_lines(str(tmp_path / "b.txt"))
    assert read_input_lines(str(tmp_path / "b.txt"), "latin-1")[2] == "caf\xe9"
    (tmp_path / "c.json").write_text('{"config": ')
    with pytest.raises(GANetInputError, match="c.json is damaged"):
        read_run_json(str(tmp_path / "c.json"))


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("send", [send_sigterm, SigtermWhileCollected], ids=["raised", "lost_in_del"])
def test_a_sigterm_mid_write_replaces_nothing_and_is_forgotten_once_restored(tmp_path, send):
    # Lost in a `__del__`, the handler's exception is raised again before the swap.
    previous = install_signal_handlers()
    try:
        path = tmp_path / "f.txt"
        path.write_text("old")

        def write(handle):
            handle.write("new")
            send()

        with pytest.raises(Terminated):
            write_file_atomically(str(path), write)
        assert path.read_text() == "old" and os.listdir(tmp_path) == ["f.txt"]
        with pytest.raises(Terminated):  # until `main` reports it
            check_stop_signal()
    finally:
        restore_signal_handlers(previous)
    check_stop_signal()  # handlers restored: the signal is forgotten, library calls go on


def test_sigterm_is_held_back_during_a_swap(tmp_path):
    previous = install_signal_handlers()
    try:
        path = tmp_path / "f.txt"
        with pytest.raises(Terminated):
            with critical_section():
                send_sigterm()
                path.write_text("swapped")  # still runs: the signal waits for the block's end
        assert path.read_text() == "swapped"
    finally:
        restore_signal_handlers(previous)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full, where every write finds no space")
def test_a_full_disk_is_one_line_naming_the_fix_from_tensorflow_or_python(tmp_path):
    import tensorflow as tf

    with pytest.raises(OSError) as raised:
        with tensorflow_disk_errors("out/model"):
            tf.io.write_file("/dev/full", "x")  # TensorFlow's file system meets ENOSPC
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == "out/model"
    assert os_error_message(raised.value) == (
        1,
        "no room to write out/model (No space left on device): free space on its disk (or raise the file size "
        "limit, ulimit -f) and run the command again; no output was replaced.",
    )
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(tf.errors.OpError):  # not a full disk: as TensorFlow raised it
        with tensorflow_disk_errors("out/model"):
            tf.io.write_file(str(tmp_path / "notes.txt" / "x"), "x")
    # Python's own writes (`model.save`) may name no file; other errors are the system's line, exit code 1.
    assert os_error_message(OSError(errno.EFBIG, "File too large"))[1].startswith(
        "no room to write the output (File too large): free space"
    )
    assert os_error_message(PermissionError(errno.EACCES, "Permission denied", "x")) == (
        1,
        "[Errno 13] Permission denied: 'x'",
    )
