"""The lines of an input file, streamed in batches under the project's input rules."""

import re

from ganet_tf.data.file_formats import open_text
from ganet_tf.data.file_formats import warn
from ganet_tf.errors import GANetInputError

# Line numbers a warning names before "...".
SHOWN_LINES = 5
# What `surrogateescape` makes of an undecodable byte 0x80-0xFF: U+DC80-U+DCFF.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
_CHUNK = 1 << 20


def _as_latin1(match):
    return chr(ord(match.group()) - 0xDC00)


def shown_numbers(numbers):
    """`"3, 7, 9"`, or the first `SHOWN_LINES` numbers and `", ..."`."""
    shown = ", ".join(str(number) for number in numbers[:SHOWN_LINES])
    return shown + (", ..." if len(numbers) > SHOWN_LINES else "")


class TextLines:
    """One text a line from a file, read lazily, nothing lost.

    The rules of the project's readers (`ganet_tf.data.file_formats`): a
    UTF-8 byte-order mark is dropped; lines end only at `\\n`, `\\r\\n` or
    `\\r`; `encoding` names the file's encoding. Unlike a training file, a
    line with bytes that are not valid in `encoding` is kept: those bytes
    are read as latin-1 (one character each; the valid text around them is
    kept) and the line numbers are named in one warning line at the end
    (`warn_decoding`). Blank lines are yielded too, so each input line has
    its output line.

    For a byte-level model, which reads the bytes of a text (as its
    SavedModel reads the bytes a client sends), `batches(size,
    keep_bytes=True)` yields such a line as `bytes` instead: its text in
    UTF-8, the bytes that are not valid in `encoding` as they are in the
    file (a line of a UTF-8 file: exactly its bytes). The warning then
    says so.

    Args:
        path: the file.
        encoding: its encoding (a Python codec name). Defaults to `"utf-8"`.
        flag: the flag that named the file, for the messages.

    Example:

    >>> # Not run by the tests: needs a file questions.txt.
    >>> lines = TextLines("questions.txt")  # doctest: +SKIP
    >>> for batch in lines.batches(256):  # doctest: +SKIP
    ...     numbers, texts = zip(*batch)
    >>> lines.warn_decoding()  # doctest: +SKIP
    """

    def __init__(self, path, encoding="utf-8", flag="--file"):
        self.path = path
        self.encoding = encoding
        self.flag = flag
        self.fallback_lines = []
        self.kept_bytes = False
        # Checks the file and the encoding name now, one error line each.
        open_text(path, encoding, flag).close()

    def count(self):
        """The number of lines, counted on the bytes (for a progress bar)."""
        count, last, carriage_return = 0, b"", False
        with open(self.path, "rb") as handle:
            while block := handle.read(_CHUNK):
                count += block.count(b"\n") + block.count(b"\r") - block.count(b"\r\n")
                if carriage_return and block.startswith(b"\n"):
                    count -= 1
                carriage_return, last = block.endswith(b"\r"), block[-1:]
        return count + (1 if last and last not in b"\r\n" else 0)

    def __iter__(self):
        """Yields `(line number from 1, text without its line break)`."""
        return self.lines()

    def lines(self, keep_bytes=False):
        """Yields `(line number from 1, text without its line break)`; with
        `keep_bytes`, a line with bytes that are not valid in `encoding`
        comes as `bytes` (its text in UTF-8, those bytes as they are)."""
        self.fallback_lines = []
        self.kept_bytes = keep_bytes
        handle = open_text(self.path, self.encoding, self.flag)
        handle.reconfigure(errors="surrogateescape")
        number = 0
        with handle:
            try:
                for line in handle:
                    number += 1
                    if line.endswith("\r\n"):
                        line = line[:-2]
                    elif line.endswith(("\n", "\r")):
                        line = line[:-1]
                    if _ESCAPED_BYTE.search(line):
                        self.fallback_lines.append(number)
                        if keep_bytes:
                            line = line.encode("utf-8", errors="surrogateescape")
                        else:
                            line = _ESCAPED_BYTE.sub(_as_latin1, line)
                    yield number, line
            except UnicodeDecodeError as error:
                raise GANetInputError(
                    f"{self.path}:{number + 1} is not valid {self.encoding} text ({error.reason}): pass its "
                    "encoding with --encoding (e.g. --encoding utf-16), or save it as UTF-8."
                ) from None

    def batches(self, size, keep_bytes=False):
        """Lists of up to `size` `(number, text)` pairs, in file order (`lines`)."""
        batch = []
        for item in self.lines(keep_bytes):
            batch.append(item)
            if len(batch) == size:
                yield batch
                batch = []
        if batch:
            yield batch

    def warn_decoding(self):
        """One warning line naming the lines with bytes not valid in `encoding`, if any."""
        lines = self.fallback_lines
        if lines:
            what = f"{len(lines)} lines are" if len(lines) > 1 else "1 line is"
            read = "kept as they are (byte-level model)" if self.kept_bytes else "read as latin-1"
            warn(
                f"{self.path}: {what} not valid {self.encoding} (line {shown_numbers(lines)}); "
                f"their undecodable bytes were {read}: pass --encoding if the file has another encoding."
            )
