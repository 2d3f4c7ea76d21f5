"""The error raised for bad input: a file, a dataset, a flag."""


class GANetInputError(ValueError):
    """Bad user input. The message names the problem and the fix in one line.

    The command line prints it as `ganet_tf: error: <message>` and exits 2.
    """
