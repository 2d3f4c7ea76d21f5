"""`python -m ganet_tf predict` and `translate`: a trained run on new texts.

Both write one JSON line per input text to stdout (or `--out FILE`),
read `--file` in batches of `--batch-size` lines, so a file of any length
streams through in constant memory, with a progress bar on stderr.
"""

import argparse
import contextlib
import json
import os
import sys
import textwrap

from ganet_tf.data.file_formats import warn
from ganet_tf.errors import GANetInputError
from ganet_tf.policy.inference_gate_flags import add_test_gate_arguments
from ganet_tf.policy.inference_gate_flags import inference_rule_of

INPUT_RULES = (
    "Input rules: --file is read one text a line in --encoding (a UTF-8 byte-order mark is dropped; "
    "lines end at \\n, \\r\\n or \\r only). A line with bytes not valid in --encoding is kept: those bytes "
    "are read as latin-1{raw}, and one 'ganet_tf: warning:' line names such lines. Every input line (and every "
    "--text) gets exactly one output line, in order; a blank one (empty or only spaces) gets {blank}. "
    "--out FILE is written to a hidden file beside it and renamed into place when all lines are done, "
    "so an error or Ctrl-C leaves FILE as it was; --out may not be the input file or a folder."
)
PREDICT_FORMAT = (
    'Output: one JSON object a line: {"line": N (with --file), "text": ..., "label": ..., '
    '"probabilities": {CLASS: p, ...}, "attended": [[TOKEN, ALPHA], ...]} where "attended" lists the '
    "tokens with a non-zero attention weight, in text order (null for models without attention). "
    "Line breaks inside a text are escaped, so each object is one line."
)
TRANSLATE_FORMAT = (
    'Output: one JSON object a line: {"line": N (with --file), "source": ..., "translation": ...}. '
    "Line breaks inside a text are escaped, so each object is one line."
)
EXPLAIN_FORMAT = (
    'With --explain each line adds "explain": for a gated run {"words": [[WORD, OPEN], ...], "open": [...], '
    '"closed": [...], "open_share": S}, the source words its test gates leave open (a subword run\'s word is '
    'open if any of its pieces is; it adds "pieces", "open_pieces" and "piece_open_share"); for a hierarchical '
    'run (hier-*) {"blocks": [[TOKEN, ...], ...], "nodes": [N0, N1, ...]}, the source tokens grouped into the '
    "level-1 nodes and the nodes of each level; null for a blank line. A bahdanau run has nothing to explain."
)


# Line breaks to `str.splitlines` that JSON leaves unescaped (it escapes those below U+0020).
_UNICODE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def json_line(item):
    """`item` as one line of JSON: UTF-8 text, every line break escaped."""
    return json.dumps(item, ensure_ascii=False).translate(_UNICODE_BREAKS)


def _add_common_arguments(parser, model_help, batch_size):
    parser.add_argument("--model", required=True, metavar="RUN", help=model_help)
    texts = parser.add_mutually_exclusive_group(required=True)
    texts.add_argument("--text", action="append", metavar="T", help="a text; repeatable")
    texts.add_argument("--file", metavar="F", help="a file with one text a line")
    parser.add_argument("--encoding", default="utf-8", metavar="E", help="text encoding of --file (default: utf-8)")
    parser.add_argument(
        "--batch-size",
        type=int,
        default=batch_size,
        metavar="N",
        help=f"lines read and run at once (default: {batch_size})",
    )
    parser.add_argument("--out", metavar="FILE", help="write the JSON lines to FILE instead of stdout")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no summary on stderr")


def _paragraphs(*texts):
    return "\n\n".join(textwrap.fill(text, 100, break_on_hyphens=False) for text in texts)


def add_predict_arguments(parser):
    """The flags of `predict`."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = "Classify new texts with a run written by `python -m ganet_tf train --out`."
    raw = (
        " (a byte-level run, of train --tokenizer bytes, reads them as they are, as its SavedModel does, "
        'and its "text" shows them as \\xNN)'
    )
    rules = INPUT_RULES.format(raw=raw, blank='"label": null (nothing is skipped)')
    parser.epilog = _paragraphs(PREDICT_FORMAT, rules)
    _add_common_arguments(
        parser, "folder written by `train --out`, or its model.keras (preprocessing.json beside it)", 1024
    )
    add_test_gate_arguments(parser)


def add_translate_arguments(parser):
    """The flags of `translate`."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = "Translate sentences with a run written by `python -m ganet_tf seq2seq --out` (greedy)."
    parser.epilog = _paragraphs(
        TRANSLATE_FORMAT, EXPLAIN_FORMAT, INPUT_RULES.format(raw="", blank='"translation": null (nothing is skipped)')
    )
    _add_common_arguments(parser, "folder written by `seq2seq --out`", 64)
    parser.add_argument(
        "--explain",
        action="store_true",
        help='add "explain" to each line: the source words a gated run\'s test gates leave open, or the blocks '
        "a hierarchical run (hier-*) groups them in",
    )
    add_test_gate_arguments(parser)


def _inputs(args):
    """`(source, line count or None)`: the `TextLines` of --file, or the --text list."""
    from ganet_tf.inference.output_file import OutputFile
    from ganet_tf.inference.text_lines import TextLines

    if isinstance(args.batch_size, bool) or args.batch_size < 1:
        raise GANetInputError(f"--batch-size must be a positive integer, got {args.batch_size}.")
    if args.file is not None:
        source = TextLines(args.file, args.encoding, "--file")
    else:
        source = None
    OutputFile(args.out, inputs=[args.file]).check()
    return source


def _batches(args, source, keep_bytes=False):
    if source is not None:
        yield from source.batches(args.batch_size, keep_bytes)
        return
    texts = [command_line_text(text, keep_bytes) for text in args.text]
    for start in range(0, len(texts), args.batch_size):
        yield [(None, text) for text in texts[start : start + args.batch_size]]


def command_line_text(text, keep_bytes=False):
    """A `--text` value as a --file line with the same bytes is read.

    Python holds the bytes of an argument that are not valid UTF-8 as
    surrogates (`surrogateescape`), which no model reads. Such a text comes
    back as its bytes with `keep_bytes` (a byte-level run), else with them
    read as Latin-1 and a warning; any other text is returned as it is.
    """
    raw = text.encode("utf-8", "surrogateescape")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        if keep_bytes:
            return raw
        warn("a --text holds bytes that are not valid UTF-8: they were read as latin-1.")
        return raw.decode("latin-1")


def _stream(args, source, run_batch, keep_bytes=False):
    """Writes `run_batch(texts)`'s dicts as JSON lines; returns the line count.
    With `keep_bytes`, a --file line with bytes not valid in --encoding
    comes to `run_batch` as `bytes` (`TextLines.lines`)."""
    import keras

    from ganet_tf.inference.output_file import OutputFile

    total = source.count() if source is not None and not args.quiet else 0
    progress = None
    if total:
        with contextlib.redirect_stdout(sys.stderr):
            progress = keras.utils.Progbar(total, unit_name="line")
    done = 0
    try:
        with OutputFile(args.out, inputs=[args.file]) as out:
            for batch in _batches(args, source, keep_bytes):
                numbers = [number for number, _ in batch]
                for number, item in zip(numbers, run_batch([text for _, text in batch]), strict=True):
                    out.write(json_line({"line": number, **item} if number else item))
                out.flush()
                done += len(batch)
                if progress is not None:
                    with contextlib.redirect_stdout(sys.stderr):
                        progress.update(done, finalize=False)
            if progress is not None:
                with contextlib.redirect_stdout(sys.stderr):
                    progress.update(done, finalize=True)
    except BrokenPipeError:
        if args.out:
            raise
        # The reader of stdout has gone (`... | head`): stop quietly, as the Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if progress is not None:
            print(file=sys.stderr, flush=True)  # end the progress bar's line
        return done
    if source is not None:
        source.warn_decoding()
        if not done:
            warn(f"{args.file} has no lines: nothing to read.")
    if args.out and not args.quiet:
        print(json.dumps({"lines": done, "out": args.out}), file=sys.stderr, flush=True)
    return done


def predict_command(args):
    """`python -m ganet_tf predict`: writes the JSON lines; returns None (no summary on stdout)."""
    from ganet_tf.inference.text_classifier import TextClassifier

    test_gates = inference_rule_of(args)
    source = _inputs(args)
    classifier = TextClassifier.from_run(args.model, test_gates)
    # A byte-level run reads a line's bytes as they are, as its SavedModel does.
    keep_bytes = classifier.tokenizer == "bytes"
    _stream(args, source, lambda texts: classifier.classify(texts, batch_size=len(texts)), keep_bytes)


def translate_command(args):
    """`python -m ganet_tf translate`: writes the JSON lines; returns None (no summary on stdout)."""
    from ganet_tf.inference.text_translator import TextTranslator

    test_gates = inference_rule_of(args)
    source = _inputs(args)
    translator = TextTranslator.from_run(args.model, test_gates)
    if args.explain and translator.model.attention == "bahdanau":
        raise GANetInputError(
            f"--explain needs a gated or hierarchical run; {args.model} was trained with --attention bahdanau, "
            "which attends to every source word: drop --explain, or train with --attention gated "
            "(or hier-cnn, hier-rnn, hier-act)."
        )

    def translate(texts):
        kept = [text for text in texts if text.strip()]
        if args.explain:
            items = iter(translator.explain(kept, batch_size=max(len(kept), 1)) if kept else [])
            blank = {"translation": None, "explain": None}
            return [next(items) if text.strip() else {"source": text, **blank} for text in texts]
        translations = iter(translator.predict(kept, batch_size=max(len(kept), 1)) if kept else [])
        return [{"source": text, "translation": next(translations) if text.strip() else None} for text in texts]

    _stream(args, source, translate)
