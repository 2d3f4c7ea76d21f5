import argparse
import importlib
import types

import pytest

from ganet_tf.command_flags import CHOICES
from ganet_tf.command_flags import add_flag


def _parser():
    parser = argparse.ArgumentParser(prog="demo")
    defaults = types.SimpleNamespace(temperature=0.5, auxiliary="bilstm")
    add_flag(parser, "--temperature", defaults, float, deprecated=("--tau",), help="the temperature")
    add_flag(parser, "--auxiliary", defaults, choices=("bilstm", "fnn"), deprecated=("--aux",))
    return parser


def test_the_new_spelling_sets_the_value_silently(capsys):
    arguments = _parser().parse_args(["--temperature", "0.2"])
    assert arguments.temperature == 0.2
    assert arguments.auxiliary == "bilstm"
    assert capsys.readouterr().err == ""


def test_a_deprecated_spelling_sets_the_same_value_and_says_one_line(capsys):
    arguments = _parser().parse_args(["--tau", "0.2", "--aux", "fnn"])
    assert (arguments.temperature, arguments.auxiliary) == (0.2, "fnn")
    assert capsys.readouterr().err.splitlines() == [
        "ganet_tf: warning: --tau is deprecated: use --temperature.",
        "ganet_tf: warning: --aux is deprecated: use --auxiliary.",
    ]


def test_a_deprecated_spelling_keeps_the_type_and_choices_and_stays_out_of_help(capsys):
    parser = _parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["--aux", "lstm"])
    assert "invalid choice" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["--tau", "warm"])
    assert "invalid float value" in capsys.readouterr().err
    usage = parser.format_help()
    assert "--temperature" in usage and "--tau" not in usage and "--aux " not in usage


@pytest.mark.parametrize("constant", sorted(CHOICES))
def test_each_spelled_out_choice_is_its_constant(constant):
    # The parsers offer these without importing Keras: a new layer option,
    # model or tokenizer goes into `CHOICES` too.
    module, _, name = constant.rpartition(".")
    assert CHOICES[constant] == tuple(getattr(importlib.import_module(module), name)), constant
