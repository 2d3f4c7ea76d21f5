"""The error raised for bad input: a file, a dataset, a flag."""


class GANetInputError(ValueError):
    """Bad user input. The message names the problem and the fix in one line.

    The command line prints it as `ganet_tf: error: <message>` and exits 2.
    """


class TensorFlowRequiredError(GANetInputError, ImportError):
    """A TensorFlow-only part used without TensorFlow or its Keras backend.

    The message is one line naming what needs TensorFlow, the Keras backend
    and the fix. It is a `GANetInputError`, so the command line prints it as
    `ganet_tf: error: <message>` and exits 2, and an `ImportError`, so a
    library caller can catch it as a missing dependency.
    """


class KerasBackendError(GANetInputError, ImportError):
    """Keras cannot run on the backend it is set to here.

    The backend (from `KERAS_BACKEND` or `keras.json`) is not one Keras
    knows, or its package is not installed. The message is one line naming
    the backend, where it was set and the fix; the command line prints it
    as `ganet_tf: error: <message>` and exits 2.
    """


class MissingExtraError(GANetInputError, ImportError):
    """An optional part of `ganet_tf` used without the extra that installs it.

    The message is one line naming the packages and the extra to install
    (`pip install 'ganet_tf[seq2seq]'`); the command line prints it as
    `ganet_tf: error: <message>` and exits 2 (`ganet_tf.extras`).
    """


def first_line(error, limit=160):
    """The first line of `error`'s message (its type's name if it has none),
    cut to `limit` characters: for a one-line error that quotes another."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:limit]
