"""The documentation holds together: its relative links resolve, the README
stays a short page, and no committed text names a folder of the machine that
wrote it."""

import os
import re
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README_LIMIT = 15 * 1024

# [text](target) and ![alt](target); the target ends at a space or ")".
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# Code spans and blocks may show link-like text that is no link.
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_SPAN = re.compile(r"`[^`\n]*`")

# Built from pieces so that this file does not match itself.
_SEP = "/"
_ABSOLUTE_HOME = re.compile(
    _SEP + "(?:" + "|".join(["home", "root", "work", "Users"]) + ")" + _SEP + "|" + r"[A-Za-z]:\\" + "Users" + r"\\"
)


def _git_files():
    try:
        completed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return [name for name in completed.stdout.decode("utf-8").split("\0") if name]


def _markdown_pages():
    pages = [os.path.join(REPO, name) for name in ("README.md", "saved_models/README.md", "ganet_tf/tuning/README.md")]
    for folder in ("docs", "results"):
        for root, _, files in os.walk(os.path.join(REPO, folder)):
            pages += [os.path.join(root, name) for name in files if name.endswith(".md")]
    return sorted(page for page in pages if os.path.isfile(page))


def broken_links(path):
    """The relative link targets of the Markdown file `path` that name no
    existing file or folder of the repository (web, mail and in-page
    links are not checked; a `#fragment` is ignored)."""
    with open(path, encoding="utf-8") as handle:
        text = _SPAN.sub("", _FENCE.sub("", handle.read()))
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
            continue
        relative = target.split("#", 1)[0].split("?", 1)[0]
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), relative))
        if not resolved.startswith(REPO + os.sep) or not os.path.exists(resolved):
            broken.append(target)
    return broken


def test_relative_links_resolve():
    pages = _markdown_pages()
    assert any(page.endswith(os.path.join("docs", "gates.md")) for page in pages)
    broken = {os.path.relpath(page, REPO): links for page in pages if (links := broken_links(page))}
    assert not broken, f"links to files that do not exist: {broken}"


def test_broken_link_is_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](https://example.org) [anchor](#x) `[code](nowhere.md)` [bad](docs/no_such_guide.md#part)\n",
        encoding="utf-8",
    )
    # The page lies outside the repository, so every relative link is broken.
    assert broken_links(str(page)) == ["docs/no_such_guide.md#part"]


def test_readme_is_short():
    size = os.path.getsize(os.path.join(REPO, "README.md"))
    assert size <= README_LIMIT, f"README.md is {size} bytes; move detail to docs/ (limit {README_LIMIT})"


def test_absolute_home_pattern():
    assert _ABSOLUTE_HOME.search("--data-dir " + _SEP + "work" + _SEP + "shared/data")
    assert _ABSOLUTE_HOME.search("C:" + "\\" + "Users" + "\\" + "me")
    assert not _ABSOLUTE_HOME.search("--data-dir ../shared/data --out runs/trec")


def absolute_paths(root, names):
    """`name:line: text` of each line of the text files `names` (under
    `root`) that holds an absolute path of a home or work folder."""
    found = []
    for name in names:
        path = os.path.join(root, name)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, "rb") as handle:
            data = handle.read()
        if b"\0" in data[:8192]:
            continue  # binary
        text = data.decode("utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if _ABSOLUTE_HOME.search(line):
                found.append(f"{name}:{number}: {line.strip()[:120]}")
    return found


def test_absolute_path_is_found(tmp_path):
    (tmp_path / "run.json").write_text('{"data_dir": "' + _SEP + "work" + _SEP + 'shared/data"}\n', encoding="utf-8")
    (tmp_path / "ok.md").write_text("`--data-dir ../shared/data`\n", encoding="utf-8")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\0" + (_SEP + "root" + _SEP).encode())
    assert absolute_paths(str(tmp_path), ["run.json", "ok.md", "image.png"]) == [
        "run.json:1: " + '{"data_dir": "' + _SEP + "work" + _SEP + 'shared/data"}'
    ]


def test_no_absolute_paths_of_this_machine():
    files = _git_files()
    if files is None:
        pytest.skip("not a git checkout: the committed files are unknown")
    found = absolute_paths(REPO, files)
    assert not found, "absolute paths of a home or work folder; use repository-relative ones:\n" + "\n".join(found[:20])


def _table_rows(text):
    """The cells of each row of the Markdown tables in `text`."""
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("|")
    ]


def _lra_figures():
    """`{setting: (seeds, validation, test)}` from the generated table of results/lra_text/README.md."""
    with open(os.path.join(REPO, "results", "lra_text", "README.md"), encoding="utf-8") as handle:
        table = handle.read().split("<!-- begin table -->")[1].split("<!-- end table -->")[0]
    header, _, *rows = _table_rows(table)
    at = {name: header.index(name) for name in ("setting", "seeds", "validation accuracy", "test accuracy")}
    return {row[at["setting"]]: tuple(row[at[name]] for name in list(at)[1:]) for row in rows}


def test_the_long_documents_guide_quotes_the_lra_table():
    # The guide's headline table is written by hand: each setting's seeds and
    # accuracies must be those the study's table generates.
    figures = _lra_figures()
    with open(os.path.join(REPO, "docs", "long_documents.md"), encoding="utf-8") as handle:
        guide = handle.read().split("**Where the controls leave the gates**")[1]
    quoted = [row for row in _table_rows(guide.split("\n\n", 2)[1]) if row[1].startswith("`")]
    assert len(quoted) >= 8
    for row in quoted:
        setting = row[1].strip("`")
        seeds, validation, test = figures[setting]
        assert (row[2].replace(" ", ""), row[4], row[3].replace("**", "")) == (seeds, validation, test), setting
