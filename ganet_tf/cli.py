"""`python -m ganet_tf COMMAND ...`: the parser, and `main`, which runs one command under the policy.

Each command's flags and handler live beside its package, as
`add_X_arguments(parser)` and `X_command(args)`: `train` and `prepare` in
`ganet_tf.training.commands`, `explain` in `ganet_tf.interpret.commands`,
`export` in `ganet_tf.export.commands`, `seq2seq` in
`ganet_tf.seq2seq.commands`, `predict` and `translate` in
`ganet_tf.inference.commands`, `evaluate` in `ganet_tf.inference.evaluate_run`,
`tune` in `ganet_tf.tuning.search` (`add_arguments`, `run`). This module only
builds the parser from them, dispatches, and runs the command (`main`): the
one-line errors, the exit codes, the signal handlers.

Building the parser imports no Keras or TensorFlow (each command's flags
read their defaults and choices from light modules), so `--help` and a bad
flag answer at once; `main` imports TensorFlow once the flags are parsed,
quietly where the interpreter runs the command line (`ganet_tf.quiet_import`).
"""

import json
import sys

from ganet_tf import backends
from ganet_tf import early_signals
from ganet_tf.command_flags import OneLineParser
from ganet_tf.errors import GANetInputError
from ganet_tf.extras import require_extra

# Every command: its help line and what of TensorFlow it uses. All need
# TensorFlow and Keras on its backend (`ganet_tf.backends`); elsewhere
# `main` stops each in one line.
COMMANDS = {
    "train": ("train and evaluate a model; the last stdout line is a JSON summary", "tf.data, TextVectorization"),
    "prepare": (
        "write a dataset's token ids, vocabulary and embeddings to one .npz that every backend reads with NumPy",
        "tf.data, TextVectorization",
    ),
    "explain": ("per-token gates and attention of trained models, as HTML and PNG", "TextVectorization on strings"),
    "export": (
        "export a trained run (classifier or translator) as a TF Serving SavedModel; prints a JSON summary",
        "SavedModel",
    ),
    "seq2seq": (
        "train and evaluate an attentional encoder-decoder; the last stdout line is a JSON summary",
        "tf.data, string vocabularies",
    ),
    "predict": ("classify texts with a trained run; one JSON line per text", "TextVectorization on strings"),
    "evaluate": (
        "re-measure a trained run on its dataset's test or validation split; prints a JSON summary",
        "tf.data, TextVectorization",
    ),
    "translate": ("translate sentences with a seq2seq run; one JSON line each", "string vocabularies"),
    "tune": ("KerasTuner search; the last stdout line is a JSON summary", "tf.data, TextVectorization"),
}
# The commands of an optional part and the extra each needs (`ganet_tf.extras`):
# without it they stop in one line naming it, before any work.
COMMAND_EXTRAS = {"explain": "plots", "export": "serving", "seq2seq": "seq2seq", "translate": "seq2seq"}


def build_parser(tensorflow=True):
    """The parser of `python -m ganet_tf`.

    Args:
        tensorflow: whether to build the commands' flags, whose packages
            need the TensorFlow backend (building them imports neither Keras
            nor TensorFlow). False (for `main` where the commands cannot
            run) builds each command without flags and without `--help`, so
            that everything after its name is left unparsed.
    """
    parser = OneLineParser(
        prog="python -m ganet_tf",
        description="GA-Net, the Gated Attention Network, for Keras 3.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    if not tensorflow:
        for name, (help_line, _) in COMMANDS.items():
            commands.add_parser(name, help=help_line, add_help=False)
        return parser
    flags_and_handlers = _flags_and_handlers()
    for name, (help_line, _) in COMMANDS.items():
        add_arguments, run, description = flags_and_handlers[name]
        command = commands.add_parser(name, help=help_line, description=description)
        add_arguments(command)
        command.set_defaults(run=run)
    return parser


def _flags_and_handlers():
    """Each command's `(add_arguments, run, description)`, from beside its package."""
    from ganet_tf.export import commands as export
    from ganet_tf.inference import commands as inference
    from ganet_tf.inference import evaluate_run
    from ganet_tf.interpret import commands as interpret
    from ganet_tf.seq2seq import commands as seq2seq
    from ganet_tf.training import commands as training
    from ganet_tf.tuning import search

    return {
        "train": (training.add_train_arguments, training.train_command, None),
        "prepare": (training.add_prepare_arguments, training.prepare_command, None),
        "explain": (interpret.add_explain_arguments, interpret.explain_command, None),
        "export": (export.add_export_arguments, export.export_command, None),
        "seq2seq": (seq2seq.add_seq2seq_arguments, seq2seq.seq2seq_command, None),
        "predict": (inference.add_predict_arguments, inference.predict_command, None),
        "evaluate": (evaluate_run.add_evaluate_arguments, evaluate_run.evaluate_command, None),
        "translate": (inference.add_translate_arguments, inference.translate_command, None),
        "tune": (search.add_arguments, search.run, search.DESCRIPTION),
    }


def _config_from(args):
    """The `TrainConfig` of parsed `train` flags (`ganet_tf.training.commands.config_from`), for the
    experiments and scripts that build a config with `build_parser`."""
    from ganet_tf.training.commands import config_from

    return config_from(args)


def main(argv=None):
    """Runs one command; returns its exit code.

    The reliability policy of every command (`ganet_tf.policy`): bad input
    is one `ganet_tf: error:` line and exit code 2; a full disk, as any
    system error, is one line and exit code 1 (`ganet_tf.policy.
    os_error_message` names the fix); Ctrl-C and SIGTERM stop with one line
    and exit codes 130 and 143, nothing half-written. Without TensorFlow, on
    another Keras backend, or on a backend Keras cannot run (unknown, not
    installed), every command stops with one line naming the fix, exit code
    2 (`--help` still lists them).

    Where the interpreter runs the command line (`python -m ganet_tf`, the
    `ganet-tf` script), a stop signal while it starts is kept for the
    command (`ganet_tf.early_signals`) and TensorFlow imports without its
    C++ start-up log (`ganet_tf.quiet_import`); called from a program,
    `main` leaves the process's environment and file descriptors alone.
    """
    early_signals.install_if_command()
    argv = sys.argv[1:] if argv is None else list(argv)
    if not backends.tensorflow_backend():
        return _main_without_tensorflow(argv)
    parser = build_parser()
    args = parser.parse_args(argv)  # `--help` and bad flags end here, before TensorFlow
    if early_signals.started_as_command():
        from ganet_tf.quiet_import import import_tensorflow

        import_tensorflow()
    from ganet_tf.policy.disk_space import os_error_message
    from ganet_tf.policy.interruption import check_stop_signal
    from ganet_tf.policy.interruption import install_signal_handlers
    from ganet_tf.policy.interruption import interruption_message
    from ganet_tf.policy.interruption import restore_signal_handlers
    from ganet_tf.policy.out_of_memory import is_out_of_memory
    from ganet_tf.policy.out_of_memory import out_of_memory_line

    previous = install_signal_handlers()
    try:
        check_stop_signal()  # one that came while `python -m ganet_tf` was importing
        from ganet_tf.policy.flag_values import explicit_flags

        args.given_flags = explicit_flags(build_parser(), argv)
        if args.command in COMMAND_EXTRAS:
            require_extra(COMMAND_EXTRAS[args.command], args.command)
        result = args.run(args)
    except GANetInputError as error:
        print(f"ganet_tf: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as error:
        code, line = interruption_message(error)
        print(f"ganet_tf: error: {line}", file=sys.stderr)
        return code
    except OSError as error:  # disk full, permissions: one line
        code, line = os_error_message(error)
        print(f"ganet_tf: error: {line}", file=sys.stderr)
        return code
    except Exception as error:
        # A stop signal raised inside a library call can come out as that
        # call's own error (NumPy converting a variable gives a TypeError):
        # the command still stops with the interruption's line.
        try:
            check_stop_signal()
        except KeyboardInterrupt as interruption:
            code, line = interruption_message(interruption)
            print(f"ganet_tf: error: {line}", file=sys.stderr)
            return code
        if is_out_of_memory(error):  # one line naming the command's own flags
            print(f"ganet_tf: error: {out_of_memory_line(args.command)}", file=sys.stderr)
            return 1
        raise
    finally:
        restore_signal_handlers(previous)
    if result is not None:  # `predict` and `translate` wrote their own lines
        print(json.dumps(result), flush=True)
    return 0


def _main_without_tensorflow(argv):
    """`main` where no command can run: the command's one error line, before
    its flags are read (reading them needs TensorFlow); writes nothing."""
    args, _ = build_parser(tensorflow=False).parse_known_args(argv)
    error = backends.backend_problem() or backends.missing_tensorflow(args.command, COMMANDS[args.command][1])
    print(f"ganet_tf: error: {error}", file=sys.stderr)
    return 2
