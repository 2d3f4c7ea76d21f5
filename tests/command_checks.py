"""Checks shared by the command-line tests: what a command left on disk and
the one error line it printed."""

import os


def tree(root):
    """Every path under `root`, relative, sorted (what a refused run must not change)."""
    return sorted(
        os.path.relpath(os.path.join(folder, name), root)
        for folder, folders, files in os.walk(root)
        for name in folders + files
    )


def error_text_line(err):
    """The one `ganet_tf: error:` line of the stderr text `err` (warning lines aside)."""
    lines = [line for line in err.splitlines() if not line.startswith("ganet_tf: warning:")]
    assert len(lines) == 1 and lines[0].startswith("ganet_tf: error: "), err
    return lines[0]


def error_line(capsys):
    """The one `ganet_tf: error:` line that the command printed to stderr (`capsys`)."""
    return error_text_line(capsys.readouterr().err)
