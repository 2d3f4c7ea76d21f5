"""An out-of-memory error stops each command with one line that names only
flags the command accepts."""

import re

import pytest
import tensorflow as tf

from ganet_tf import cli
from ganet_tf.policy.out_of_memory import is_out_of_memory
from ganet_tf.policy.out_of_memory import out_of_memory_line

# The least each command's parser takes.
REQUIRED = {
    "prepare": ["--out", "trec.npz"],
    "explain": ["--model", "run", "--out", "explained"],
    "export": ["--model", "run", "--name", "trec"],
    "predict": ["--model", "run", "--text", "a text"],
    "evaluate": ["--model", "run"],
    "translate": ["--model", "run", "--text", "a text"],
}
# The flags each line must name: those that shrink the command's tensors.
NAMED = {
    "train": {"--batch-size", "--gradient-accumulation-steps", "--validation-batch-size", "--sequence-length"},
    "prepare": {"--sequence-length", "--length-percentile", "--limit"},
    "explain": set(),
    "export": {"--warmup-texts"},
    "seq2seq": {"--batch-size", "--beam-size"},
    "predict": {"--batch-size"},
    "evaluate": {"--batch-size"},
    "translate": {"--batch-size"},
    "tune": {"--values", "--fix"},
}


def _command_flags(command):
    parser = cli.build_parser()
    (commands,) = [action for action in parser._actions if action.choices and command in action.choices]
    return {flag for action in commands.choices[command]._actions for flag in action.option_strings}


def _named_flags(line):
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", line))


def test_every_command_has_its_line():
    assert set(NAMED) == set(cli.COMMANDS)


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_the_line_names_only_flags_of_the_command(command):
    line = out_of_memory_line(command)
    assert line.startswith("out of memory: ") and "\n" not in line
    assert _named_flags(line) == NAMED[command]
    assert _named_flags(line) <= _command_flags(command)


def _out_of_memory(args):
    raise tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor with shape[1024,4096,200]")


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_main_stops_the_command_with_its_line(command, monkeypatch, capsys):
    flags_and_handlers = cli._flags_and_handlers

    def failing():
        return {name: (add, _out_of_memory, text) for name, (add, _, text) in flags_and_handlers().items()}

    monkeypatch.setattr(cli, "_flags_and_handlers", failing)
    monkeypatch.setattr(cli, "require_extra", lambda *args: None)  # the extras need not be installed
    assert cli.main([command, *REQUIRED.get(command, [])]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [f"ganet_tf: error: {out_of_memory_line(command)}"]
    assert captured.out == ""


def test_out_of_memory_is_told_by_the_class_name():
    assert is_out_of_memory(tf.errors.ResourceExhaustedError(None, None, "OOM"))

    class ResourceExhaustedError(RuntimeError):  # as another library might name it
        pass

    class Subclass(ResourceExhaustedError):
        pass

    assert is_out_of_memory(ResourceExhaustedError()) and is_out_of_memory(Subclass())
    assert not is_out_of_memory(RuntimeError("out of memory")) and not is_out_of_memory(MemoryError())


def test_another_error_is_not_turned_into_the_line(monkeypatch):
    def broken(args):
        raise RuntimeError("a bug")

    flags_and_handlers = cli._flags_and_handlers
    monkeypatch.setattr(
        cli,
        "_flags_and_handlers",
        lambda: {name: (add, broken, text) for name, (add, _, text) in flags_and_handlers().items()},
    )
    with pytest.raises(RuntimeError, match="a bug"):
        cli.main(["predict", *REQUIRED["predict"]])
