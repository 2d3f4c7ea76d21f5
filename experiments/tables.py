"""The one table renderer and the statistics of the studies' tables: a table is columns `(header, cell)`, `cell(group)`
the text of a group of run summaries (`groups`); `fill` writes tables into a committed README's generated blocks."""

import os
import re
import shutil
from itertools import product

import numpy as np


def number(value, digits=2):
    """`value` with `digits` decimals, `-` where it is None."""
    return "-" if value is None else f"{value:.{digits}f}"


def mean_std(values, digits=4):
    """'mean ± sample std' of the non-None values ('-' without any, a single value alone)."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{np.mean(values):.{digits}f} ± {np.std(values, ddof=1):.{digits}f}"


def seeds(runs):
    """The seeds of `runs`, sorted, as '0,1,2'."""
    return ",".join(str(run["seed"]) for run in sorted(runs, key=lambda run: run["seed"]))


def get(run, path):
    """`run[path]`, `path` a key, a tuple of keys (nested dicts) or a function of the run; None where one is missing."""
    if callable(path):
        try:
            return path(run)
        except (KeyError, TypeError):
            return None
    for key in path if isinstance(path, tuple) else (path,):
        if not isinstance(run, dict) or key not in run:
            return None
        run = run[key]
    return run


def stat(path, digits=4):
    """A cell: `mean_std` of `get(run, path)` over the group."""
    return lambda group: mean_std([get(run, path) for run in group], digits)


def field(path, spec=".1f"):
    """A cell: the mean of the non-None `get(run, path)` over the group, formatted with `spec` ('-' without any)."""

    def cell(group):
        values = [value for value in (get(run, path) for run in group) if value is not None]
        return format(float(np.mean(values)), spec) if values else "-"

    return cell


def groups(runs, by, order):
    """`runs` grouped by the keys `by`, a group per combination of the values `order` (a tuple per key, in row order);
    empty groups are left out."""
    found = ([run for run in runs if [run.get(key) for key in by] == list(values)] for values in product(*order))
    return [group for group in found if group]


def markdown(columns, rows):
    """A Markdown table: the headers of `columns`, then a line per group of `rows`."""
    lines = ["| " + " | ".join(header for header, _ in columns) + " |", "|" + "---|" * len(columns)]
    for group in rows:
        lines.append("| " + " | ".join(cell(group) for _, cell in columns) + " |")
    return lines


def write_text(path, lines):
    """Writes `lines` (and a final newline) to `path`, creating its folder."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


_BLOCK = re.compile(r"(<!-- begin (\S+) -->\n)(.*?)(<!-- end \2 -->)", re.S)


def fill(path, blocks):
    """Rewrites the generated blocks of the committed Markdown file `path`: the lines between `<!-- begin NAME -->` and
    `<!-- end NAME -->` become `blocks[NAME]`; the prose around them stays. A missing block or file stops it."""
    if not os.path.exists(path):
        raise SystemExit(f"error: {path} is missing: its prose is written by hand; restore it with git")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    for name in sorted(set(blocks) - {found for _, found, _, _ in _BLOCK.findall(text)})[:1]:
        raise SystemExit(f"error: {path} has no block {name}: mark it <!-- begin {name} --> ... <!-- end {name} -->")

    def filled(match):
        begin, name, _, end = match.groups()
        return match.group(0) if name not in blocks else begin + "".join(f"{line}\n" for line in blocks[name]) + end

    with open(path, "w", encoding="utf-8") as handle:
        handle.write(_BLOCK.sub(filled, text))


def grid(headers, rows):
    """A Markdown table of `headers` (a list, or one string 'a | b | c') and rows of cells (each written with `str`)."""
    headers = headers.split(" | ") if isinstance(headers, str) else headers
    return markdown([(header, lambda cells, i=i: str(cells[i])) for i, header in enumerate(headers)], rows)


def fill_copy(path, committed, blocks):
    """`fill(path, blocks)`; a `path` not there yet (a smoke run's folder) starts as a copy of `committed`."""
    if not os.path.exists(path) and os.path.exists(committed):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.copyfile(committed, path)
    fill(path, blocks)
