"""Readers of the user's labelled text files: `LABEL text` lines, CSV, TSV.

What they guarantee, so that no input is silently mangled:

- Text is decoded with the given encoding (`--encoding`, UTF-8 by default);
  a UTF-8 byte-order mark is dropped (`utf-8-sig`), never read as part of the
  first label or column name. A file that does not decode is one error line
  naming the byte and `--encoding`.
- Lines end only at `\\n`, `\\r\\n` or `\\r`. U+0085, U+2028 and the other
  characters that `str.splitlines` also breaks at are text.
- CSV/TSV go through the standard library's `csv` module on a file opened
  with `newline=""`: a quoted field keeps its line breaks, fields of any size
  are read, and a quote that is never closed is one error line naming the
  line where the field started.
- A line or row with a label but no text is skipped; all skipped lines of a
  file are counted in one warning line on stderr.
- Texts are kept as written. A control character inside a text (NUL, BEL,
  ESC, any of Unicode's category Cc but tab and the line breaks) stays in
  it, and the texts holding one are counted in one warning line: the
  standardisation (`ganet_tf.data.vectorizer.standardize_text`) turns
  each control character into a space.
"""

import csv
import os
import re
import sys

import numpy as np

from ganet_tf.errors import GANetInputError

DATA_DIR_ENV = "GANET_DATA_DIR"
FORMATS = ("csv", "tsv", "label_text")
# Fewer training examples than this in a class draws a warning.
MIN_EXAMPLES_PER_CLASS = 10

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# A label, then spaces or TABs, then the text.
_LABEL_TEXT = re.compile(r"([^ \t]+)(?:[ \t]+(.*))?$", re.DOTALL)
# Unicode's control characters (category Cc) but TAB, LF and CR.
_CONTROL_CHARACTER = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

# Fields are as long as the file needs (a review can pass csv's 128 KiB).
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


def warn(message):
    """Prints `ganet_tf: warning: <message>` as one line on stderr."""
    print(f"ganet_tf: warning: {message}", file=sys.stderr, flush=True)


def check_input_file(path, flag=None):
    """Raises one line if `path` is not an existing regular file."""
    if os.path.isdir(path):
        raise GANetInputError(f"{path} is a folder, not a file: give {flag or 'the flag'} the path of a file.")
    if not os.path.isfile(path):
        raise GANetInputError(
            f"File not found: {path}. Check the path, or --data-dir / {DATA_DIR_ENV} for the shared datasets."
        )


def _python_encoding(encoding):
    # `utf-8-sig` reads UTF-8 with or without a byte-order mark.
    name = (encoding or "utf-8").lower().replace("_", "-")
    return "utf-8-sig" if name in ("utf-8", "utf8") else encoding


def open_text(path, encoding="utf-8", flag=None):
    """`path` opened for reading with `newline=""` (line breaks kept as is)."""
    check_input_file(path, flag)
    try:
        return open(path, encoding=_python_encoding(encoding), newline="")
    except LookupError:
        raise GANetInputError(
            f"Unknown --encoding {encoding!r}: give a Python codec name such as utf-8, latin-1 or cp1252."
        ) from None


def _decode_error(path, encoding, error):
    return GANetInputError(
        f"{path} is not valid {encoding} text (byte {error.start}): pass its "
        "encoding with --encoding (e.g. --encoding latin-1), or save it as UTF-8."
    )


def read_text(path, encoding="utf-8", flag=None):
    """The whole text of `path`, decoded; one error line if it does not decode."""
    handle = open_text(path, encoding, flag)
    try:
        with handle:
            return handle.read()
    except UnicodeDecodeError as error:
        raise _decode_error(path, encoding, error) from None


def split_lines(text):
    """`text` split at `\\n`, `\\r\\n` and `\\r` only (not at U+0085, U+2028...)."""
    lines = _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def read_lines(path, encoding="utf-8", flag=None):
    """`(number, line)` of the non-blank lines of `path`, numbered from 1."""
    lines = [
        (number, line)
        for number, line in enumerate(split_lines(read_text(path, encoding, flag)), start=1)
        if line.strip()
    ]
    if not lines:
        raise GANetInputError(f"{path} is empty: it needs one example a line.")
    return lines


def _warn_skipped(path, skipped, what):
    if skipped:
        shown = ", ".join(str(number) for number in skipped[:5])
        more = ", ..." if len(skipped) > 5 else ""
        what = what if len(skipped) > 1 else what.rstrip("s")
        warn(f"{path}: skipped {len(skipped)} {what} with a label but no text (line {shown}{more}).")


def _warn_control_characters(path, texts, numbers):
    """One warning line counting the `texts` (at line `numbers`) that hold a
    control character."""
    found = [
        (number, match)
        for number, text in zip(numbers, texts, strict=True)
        if (match := _CONTROL_CHARACTER.search(text))
    ]
    if found:
        number, match = found[0]
        warn(
            f"{path}: {len(found)} text(s) hold control characters (first at line {number}: "
            f"U+{ord(match.group()):04X}); each becomes a space when the texts are tokenised."
        )


def read_label_text(path, encoding="utf-8", label_separator=None):
    """Reads `LABEL text` lines; returns `(texts, labels)` as strings.

    The label ends at the first space or TAB (or at `label_separator` when
    given). Blank lines are skipped; so are lines with a label and no text,
    counted in one warning line.
    """
    texts, labels, skipped, numbers = [], [], [], []
    for number, line in read_lines(path, encoding):
        line = line.strip(" \t")
        if label_separator is None:
            label, text = _LABEL_TEXT.match(line).groups()
        else:
            label, _, text = line.partition(label_separator)
        text = (text or "").strip()
        if not label:
            raise GANetInputError(f"{path}:{number}: expected 'LABEL text', got {line[:60]!r}.")
        if not text:
            skipped.append(number)
            continue
        texts.append(text)
        labels.append(label)
        numbers.append(number)
    _warn_skipped(path, skipped, "lines")
    _warn_control_characters(path, texts, numbers)
    if not texts:
        raise GANetInputError(f"{path} has no line with both a label and a text.")
    return texts, labels


def read_delimited(path, delimiter=",", text_column="text", label_column="label", encoding="utf-8"):
    """Reads a CSV/TSV file with a header row; returns `(texts, labels)`.

    Quoted fields may hold the delimiter, quotes (doubled) and line breaks.
    Rows with a label and a blank text are skipped and counted in one
    warning line.
    """
    handle = open_text(path, encoding)
    texts, labels, skipped, spanning, numbers = [], [], [], [], []
    with handle:
        reader = csv.reader(handle, delimiter=delimiter, strict=True)
        start = 1
        try:
            header = next(reader, None)
            if header is None:
                raise GANetInputError(f"{path} is empty: it needs a header row.")
            header = [name.strip() for name in header]
            for column in (text_column, label_column):
                if column not in header:
                    raise GANetInputError(
                        f"{path}: no column {column!r} in the header {header}; the "
                        f"file needs a header with {text_column!r} and "
                        f"{label_column!r} columns (or pass --text-column and "
                        "--label-column)."
                    )
            text_index, label_index = header.index(text_column), header.index(label_column)
            start = reader.line_num + 1
            for row in reader:
                number, start = start, reader.line_num + 1
                if not any(field.strip() for field in row):
                    continue
                label = row[label_index].strip() if label_index < len(row) else ""
                if not label:
                    raise GANetInputError(f"{path}:{number}: the label is missing.")
                text = row[text_index] if text_index < len(row) else ""
                if not text.strip():
                    skipped.append(number)
                    continue
                if reader.line_num > number:
                    spanning.append(number)
                texts.append(text)
                labels.append(label)
                numbers.append(number)
        except UnicodeDecodeError as error:
            raise _decode_error(path, encoding, error) from None
        except csv.Error as error:
            if "unexpected end of data" in str(error):
                raise GANetInputError(
                    f"{path}:{start}: a quoted field starts here and its quote is "
                    'never closed: close it, or double the quotes inside it ("").'
                ) from None
            raise GANetInputError(
                f"{path}:{start}: not valid {'TSV' if delimiter == chr(9) else 'CSV'} "
                f"({error}): check the quotes on this row."
            ) from None
    _warn_skipped(path, skipped, "rows")
    _warn_control_characters(path, texts, numbers)
    if spanning:
        warn(
            f"{path}: {len(spanning)} row(s) span several lines (a quoted field with line "
            f"breaks, first at line {spanning[0]}); if that is not meant, a quote is not closed there."
        )
    if not texts:
        raise GANetInputError(f"{path} has a header but no examples.")
    return texts, labels


def encode_labels(labels, class_names, path):
    """`labels` (strings) as the int64 ids of their places in `class_names`."""
    index = {name: i for i, name in enumerate(class_names)}
    encoded = []
    for label in labels:
        if label not in index:
            raise GANetInputError(f"{path}: unknown label {label!r}; expected one of {class_names}.")
        encoded.append(index[label])
    return np.asarray(encoded, dtype="int64")


def class_order(labels):
    """The sorted distinct labels: by number when every label is a number."""
    names = set(labels)
    try:
        numbers = {name: float(name) for name in names}
    except ValueError:
        return sorted(names)
    return sorted(names, key=lambda name: (numbers[name], name))


def warn_small_classes(path, labels, minimum=MIN_EXAMPLES_PER_CLASS):
    """One warning line when a class has fewer than `minimum` examples."""
    counts = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    small = sorted((count, label) for label, count in counts.items() if count < minimum)
    if small:
        listed = ", ".join(f"{label!r}: {count}" for count, label in small[:5])
        warn(
            f"{path}: {len(small)} class(es) have fewer than {minimum} examples "
            f"({listed}); the scores will mostly be noise."
        )


def read_labelled_file(path, fmt, encoding="utf-8", text_column="text", label_column="label"):
    """`(texts, labels)` of a file in format `fmt` (one of `FORMATS`)."""
    if fmt == "label_text":
        return read_label_text(path, encoding)
    return read_delimited(path, "\t" if fmt == "tsv" else ",", text_column, label_column, encoding)
