"""Input files read as written: plain or gzip text, a BOM dropped, a damaged
file one error line naming it (and the line) and the fix."""

import gzip
import json
import os
import zipfile
import zlib

from ganet_tf.data.file_formats import check_input_file
from ganet_tf.data.file_formats import split_lines
from ganet_tf.errors import GANetInputError
from ganet_tf.errors import first_line


def _codec(encoding):
    # `utf-8-sig` reads UTF-8 with or without a byte-order mark.
    name = (encoding or "utf-8").lower().replace("_", "-")
    return "utf-8-sig" if name in ("utf-8", "utf8") else encoding


def read_input_bytes(path, flag=None, fix="copy or download it again"):
    """The bytes of `path`, unpacked when it ends in `.gz`.

    A missing file, a folder, or a truncated or corrupt gzip archive is one
    error line naming the file and `fix`.
    """
    check_input_file(path, flag)
    if not path.endswith(".gz"):
        with open(path, "rb") as handle:
            return handle.read()
    try:
        with gzip.open(path, "rb") as handle:
            return handle.read()
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise GANetInputError(
            f"{path} is a damaged gzip archive ({first_line(error)}): {fix}, or pass the unpacked file."
        ) from None


def decode_text(data, path, encoding="utf-8", fix=None):
    """`data` decoded with `encoding` (a UTF-8 BOM dropped); bytes that do not
    decode are one error line naming the file, the line and the fix."""
    try:
        return data.decode(_codec(encoding))
    except LookupError:
        raise GANetInputError(
            f"Unknown --encoding {encoding!r}: give a Python codec name such as utf-8, latin-1 or cp1252."
        ) from None
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        fix = fix or "pass its encoding with --encoding (e.g. --encoding latin-1), or save it as UTF-8"
        raise GANetInputError(
            f"{path}:{line} is not valid {encoding} text (byte {data[error.start]:#04x}): {fix}."
        ) from None


def read_input_text(path, encoding="utf-8", flag=None, fix=None):
    """The text of the plain or gzip file `path`, as written.

    A UTF-8 byte-order mark is dropped; line breaks are kept as they are
    (`read_input_lines` splits at `\\n`, `\\r\\n` and `\\r` only). A file
    that is missing, a folder, a damaged gzip archive or not valid
    `encoding` text is one `GANetInputError` line naming the file (and the
    line) and `fix`.

    Args:
        path: the file.
        encoding: its text encoding; `"utf-8"` also reads a BOM.
        flag: the flag that named it, for the message.
        fix: what to do about a line that does not decode (default: pass
            `--encoding` or save the file as UTF-8).

    Returns:
        The decoded text.
    """
    return decode_text(read_input_bytes(path, flag), path, encoding, fix)


def read_input_lines(path, encoding="utf-8", flag=None, fix=None):
    """`read_input_text(...)` split at `\\n`, `\\r\\n` and `\\r` only."""
    return split_lines(read_input_text(path, encoding, flag, fix))


def read_run_json(path, what="a run folder", fix="copy the run folder again, or train it again"):
    """The JSON value in the file `path` of a run; a missing, truncated or
    corrupt file is one error line naming it and `fix`."""
    if not os.path.isfile(path):
        raise GANetInputError(f"{path} is missing: it is not {what}; {fix}.")
    try:
        with open(path, "rb") as handle:
            return json.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError) as error:
        raise GANetInputError(f"{path} is damaged ({type(error).__name__}: {first_line(error)}): {fix}.") from None


def load_model_file(path):
    """`keras.models.load_model(path)`, or one error line saying what is wrong."""
    if os.path.isdir(path):
        raise GANetInputError(f"{path} is a folder, not a .keras model file.")
    if not os.path.isfile(path):
        raise GANetInputError(f"No model file at {path}: give a folder written by `python -m ganet_tf train --out`.")
    if not zipfile.is_zipfile(path):
        raise GANetInputError(
            f"{path} is not a complete .keras file (truncated or corrupt, "
            f"{os.path.getsize(path)} bytes): copy it again, or retrain."
        )
    import keras

    # The classes of `ganet_tf` that a trained run's model names register
    # with Keras as their packages import (`import ganet_tf` imports none).
    import ganet_tf.layers
    import ganet_tf.models  # noqa: F401

    try:
        return keras.models.load_model(path)
    except Exception as error:
        raise GANetInputError(f"Cannot load {path}: {first_line(error, 200)}") from error
