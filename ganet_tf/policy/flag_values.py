"""Flag values: finite, in range, and only flags the chosen model reads."""

import argparse
import contextlib
import dataclasses
import io
import math
import numbers

from ganet_tf.errors import GANetInputError


def flag_name(name):
    """`"batch_size"` -> `"--batch-size"`; a name with its dashes is kept."""
    return name if name.startswith("-") else "--" + name.replace("_", "-")


def _wanted(integer, above, at_least, below, at_most):
    """The range in words: "positive", ">= 0", "in [0, 1)", "a positive integer"."""
    low = ("(", above) if above is not None else ("[", at_least) if at_least is not None else None
    high = (")", below) if below is not None else ("]", at_most) if at_most is not None else None
    if low and high:
        phrase = f"in {low[0]}{low[1]}, {high[1]}{high[0]}"
    elif low:
        phrase = "positive" if low == ("(", 0) else f"{'>' if low[0] == '(' else '>='} {low[1]}"
    elif high:
        phrase = f"{'<' if high[0] == ')' else '<='} {high[1]}"
    else:
        phrase = ""
    if not integer:
        return phrase or "a finite number"
    if low in (("[", 1), ("(", 0)) and not high:
        return "a positive integer"
    return f"an integer {phrase}".strip()


def check_number(flag, value, *, above=None, at_least=None, below=None, at_most=None, integer=False, optional=False):
    """Returns `value`, or raises one error line if it is not a number in range.

    A float must be finite (no NaN, no infinity); an integer flag must hold
    an integer (not a bool). The bounds hold together.

    Args:
        flag: the flag or config field, e.g. `"--lr"` or `"lr"`.
        value: its value.
        above, at_least, below, at_most: bounds, `>`, `>=`, `<`, `<=`.
        integer: whether the value must be an integer.
        optional: whether None (flag left out) is allowed.

    Returns:
        `value`.

    Example:

    >>> check_number("--lr", 1e-3, above=0)
    0.001
    >>> check_number("--lr", float("nan"), above=0)
    Traceback (most recent call last):
    ...
    ganet_tf.errors.GANetInputError: --lr must be a finite number, got nan.
    >>> check_number("--dropout", 1.0, at_least=0, below=1)
    Traceback (most recent call last):
    ...
    ganet_tf.errors.GANetInputError: --dropout must be in [0, 1), got 1.0.
    """
    flag = flag_name(flag)
    if value is None:
        if optional:
            return None
        raise GANetInputError(f"{flag} needs a value.")
    wanted = _wanted(integer, above, at_least, below, at_most)
    kind = numbers.Integral if integer else numbers.Real
    if not integer and isinstance(value, numbers.Real) and not math.isfinite(value):
        raise GANetInputError(f"{flag} must be a finite number, got {value}.")
    good = isinstance(value, kind) and not isinstance(value, bool)
    if good:
        good = (
            (above is None or value > above)
            and (at_least is None or value >= at_least)
            and (below is None or value < below)
            and (at_most is None or value <= at_most)
        )
    if not good:
        raise GANetInputError(f"{flag} must be {wanted}, got {value}.")
    return value


def check_finite_fields(config):
    """Raises one error line for the first float field of the dataclass
    `config` that is NaN or infinite."""
    for name, value in dataclasses.asdict(config).items():
        if isinstance(value, float) and not math.isfinite(value):
            raise GANetInputError(f"{flag_name(name)} must be a finite number, got {value}.")


def check_choice(flag, value, choices):
    """Returns `value`, or raises one error line naming the `choices`."""
    if value not in choices:
        raise GANetInputError(f"Unknown {flag_name(flag)} {value!r}: choose one of {', '.join(map(str, choices))}.")
    return value


def _suppress_defaults(parser):
    parser._defaults = {}  # `set_defaults` values (the command's function)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                _suppress_defaults(subparser)
        elif action.option_strings:
            action.default = argparse.SUPPRESS


def explicit_flags(parser, argv):
    """The destinations of the options given in `argv` (not left to defaults).

    Args:
        parser: a FRESH parser of the command line (its defaults are
            suppressed in place), e.g. `ganet_tf.cli.build_parser()`.
        argv: the arguments, without the program name.

    Returns:
        A set of names such as `{"lr", "halting_penalty"}`; abbreviated and
        `--flag=value` options count as given.
    """
    _suppress_defaults(parser)
    # The command line parsed once already: its lines (a deprecated
    # spelling's warning) are not said twice.
    with contextlib.redirect_stderr(io.StringIO()):
        return set(vars(parser.parse_args(argv))) - {"command"}


def flags_not_applying(given, applies, choice):
    """The names in `given` whose `applies[name]` does not hold `choice`."""
    return [name for name in applies if name in given and choice not in applies[name]]


def check_flags_apply(given, applies, choice_flag, choice, refuse=True):
    """Refuses (or warns about) a given flag that the chosen model ignores.

    Args:
        given: names of the flags the user gave (`explicit_flags`).
        applies: `{name: choices of choice_flag that read the flag}`.
        choice_flag: the flag that chose, e.g. `"--attention"`.
        choice: its value, e.g. `"bahdanau"`.
        refuse: raise one error line (True) or print one warning line per
            flag (False).

    Example:

    >>> applies = {"halting_penalty": ("hier-act",)}
    >>> check_flags_apply({"halting_penalty"}, applies, "--attention", "gated")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ganet_tf.errors.GANetInputError: --halting-penalty applies to --attention hier-act only, not gated: ...
    """
    for name in flags_not_applying(given, applies, choice):
        users = " or ".join(applies[name])
        message = f"{flag_name(name)} applies to {choice_flag} {users} only, not {choice}"
        if refuse:
            raise GANetInputError(f"{message}: leave it out, or choose {choice_flag} {users}.")
        from ganet_tf.data.file_formats import warn

        warn(f"{message}: it is ignored.")
