"""One reliability policy for every command (`ganet_tf.policy`): each case runs
for every command of `COMMANDS` it applies to, before any work or with
nothing written."""

import gzip
import itertools
import os
import shutil

import pytest

from ganet_tf.cli import main
from ganet_tf.seq2seq.datasets import read_parallel
from tests.command_checks import error_line
from tests.command_checks import tree
from tests.reliability.conftest import COMMANDS
from tests.reliability.conftest import SEQ2SEQ_SIZES


def _argv(data, command, tmp_path, **paths):
    """The command's valid line with its first output below `tmp_path`, and
    `paths` (`{"--flag": path}`) for other outputs."""
    spec = COMMANDS[command]
    first = next(iter(spec.outputs))
    outputs = {first: str(tmp_path / spec.outputs[first]), **paths}
    return [*spec.argv(data), *itertools.chain.from_iterable((flag, str(path)) for flag, path in outputs.items())]


def _refused(data, tmp_path, capsys, argv, *words):
    """Runs `argv`; asserts exit 2, one error line with `words`, nothing changed."""
    before, shared = tree(tmp_path), (tree(data.root), tree(data.seq2seq_run))
    assert main(argv) == 2
    line = error_line(capsys)
    for word in words:
        assert word in line, line
    assert tree(tmp_path) == before and (tree(data.root), tree(data.seq2seq_run)) == shared
    return line


NUMBERS = [(command, *case) for command, spec in COMMANDS.items() for case in spec.numbers]


@pytest.mark.parametrize("command, flag, value, words", NUMBERS)
def test_a_bad_number_is_one_error_line_before_any_work(data, tmp_path, capsys, command, flag, value, words):
    *choice, flag = flag.split()
    argv = [*_argv(data, command, tmp_path), *choice, f"{flag}={value}"]
    _refused(data, tmp_path, capsys, argv, flag, words)


def test_a_flag_the_model_does_not_read_is_named_in_a_warning_by_train(data, tmp_path, capsys):
    # `train` warns (recorded commands pass every model the same flags) and
    # here stops at the bad --lr, so nothing trains.
    argv = [*_argv(data, "train", tmp_path), "--model", "bilstm", "--temperature", "0.7", "--lr=nan"]
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    warning = "ganet_tf: warning: --temperature applies to --model ganet or ganet_transformer only, not bilstm"
    assert err[0].startswith(warning)
    assert err[1].startswith("ganet_tf: error: --lr must be a finite number") and len(err) == 2


FOLDER_CASES = [
    (command, flag, case)
    for command, spec in COMMANDS.items()
    for flag in spec.outputs
    for case in (("is_folder", "under_file") if spec.writes_files else ("user_files", "is_file", "under_file"))
    if case != "user_files" or flag in spec.owned
]


@pytest.mark.parametrize("command, flag, case", FOLDER_CASES)
def test_an_output_it_may_not_write_is_refused_before_any_work(data, tmp_path, capsys, command, flag, case):
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "thesis.tex").write_text("years of work")
    (tmp_path / "notes.txt").write_text("mine")
    path = {
        "user_files": "thesis",
        "is_folder": "thesis",
        "is_file": "notes.txt",
        "under_file": os.path.join("notes.txt", "x"),
    }[case]
    _refused(data, tmp_path, capsys, _argv(data, command, tmp_path, **{flag: tmp_path / path}), flag)


PAIRS = [
    (command, first, second, nested)
    for command, spec in COMMANDS.items()
    for first, second in itertools.permutations(spec.owned, 2)
    for nested in (False, True)
]


@pytest.mark.parametrize("command, first, second, nested", PAIRS)
def test_two_outputs_that_are_the_same_or_nested_are_refused_before_any_work(
    data, tmp_path, capsys, command, first, second, nested
):
    paths = {first: tmp_path / "a", second: tmp_path / "a" / "b" if nested else tmp_path / "a"}
    words = "lie one inside the other" if nested else "are the same folder"
    _refused(data, tmp_path, capsys, _argv(data, command, tmp_path, **paths), first, second, words)


READERS = [command for command, spec in COMMANDS.items() if spec.reads_run]


def _reader_argv(data, command, tmp_path, run, **paths):
    argv = _argv(data, command, tmp_path, **paths)
    if command == "seq2seq":
        return [*argv, "--init-from", str(run)]
    return [str(run) if item in (data.train_run, data.seq2seq_run) else item for item in argv]


@pytest.mark.parametrize("command", READERS)
def test_an_output_inside_the_run_it_reads_is_refused(data, tmp_path, capsys, command):
    spec = COMMANDS[command]
    run = data.seq2seq_run if command == "seq2seq" else data.train_run
    first = next(iter(spec.outputs))
    argv = _reader_argv(data, command, tmp_path, run, **{first: os.path.join(run, "inside")})
    _refused(data, tmp_path, capsys, argv, first, "inside")


DAMAGED = [
    ("export", "model.keras"),
    ("export", "preprocessing.json"),
    ("explain", "model.keras"),
    ("explain", "preprocessing.json"),
    ("predict", "model.keras"),
    ("predict", "preprocessing.json"),
    ("seq2seq", "metrics.json"),
    ("seq2seq", "vocabularies.json"),
    ("seq2seq", "model.keras"),
]


@pytest.mark.parametrize("command, name", DAMAGED)
def test_a_damaged_run_is_one_error_line_naming_the_file(data, tmp_path, capsys, command, name):
    source = data.seq2seq_run if command == "seq2seq" else data.train_run
    run = tmp_path / "run"
    shutil.copytree(source, run)
    content = (run / name).read_bytes()
    (run / name).write_bytes(content[: len(content) // 2])  # a copy cut short
    _refused(data, tmp_path, capsys, _reader_argv(data, command, tmp_path, run), name)


def _gz(path, data):
    with gzip.open(path, "wb") as handle:
        handle.write(data)


def _multi30k(folder, damage=None):
    """A tiny Multi30k folder; `damage(folder)` spoils one of its files."""
    folder.mkdir(parents=True)
    for stem in ("train", "val", "test_2016_flickr"):
        _gz(folder / f"{stem}.de.gz", "".join(f"ein hund {i} .\n" for i in range(6)).encode())
        _gz(folder / f"{stem}.en.gz", "".join(f"a dog {i} .\n" for i in range(6)).encode())
    if damage:
        damage(folder)
    return ["seq2seq", "--task", "multi30k", "--data-dir", str(folder.parent), *SEQ2SEQ_SIZES]


def _truncated(folder):
    data = (folder / "val.en.gz").read_bytes()
    (folder / "val.en.gz").write_bytes(data[: len(data) - 12])


def _latin1_line(folder):
    _gz(folder / "val.en.gz", "a dog .\na cat .\nthe caf\xe9 .\n".encode("latin-1") * 2)


@pytest.mark.parametrize(
    "damage, words",
    [(_truncated, ("val.en.gz", "damaged gzip archive")), (_latin1_line, ("val.en.gz:3", "not valid utf-8", "UTF-8"))],
)
def test_a_damaged_data_file_is_one_error_line_naming_it_and_the_fix(data, tmp_path, capsys, damage, words):
    argv = [*_multi30k(tmp_path / "d" / "multi30k", damage), "--out", str(tmp_path / "out")]
    _refused(data, tmp_path, capsys, argv, *words)


def test_a_line_in_another_encoding_is_one_error_line_naming_the_line(data, tmp_path, capsys):
    (tmp_path / "texts.txt").write_bytes("a good film\nthe caf\xe9 was bad\n".encode("latin-1"))
    argv = [*_argv(data, "explain", tmp_path), "--file", str(tmp_path / "texts.txt")]
    _refused(data, tmp_path, capsys, argv, "texts.txt:2", "--encoding")


def test_a_bom_is_dropped_from_multi30k_files(tmp_path):
    folder = tmp_path / "multi30k"
    folder.mkdir()
    _gz(folder / "a.de.gz", "\ufeffein hund .\r\nzwei\u2028hunde .\n".encode())
    _gz(folder / "a.en.gz", "\ufeffa dog .\ntwo dogs .\n".encode())
    sources, targets = read_parallel(str(folder / "a.de.gz"), str(folder / "a.en.gz"))
    assert sources == ["ein hund .", "zwei\u2028hunde ."] and targets == ["a dog .", "two dogs ."]


@pytest.mark.usefixtures("eager_functions")  # a step or two: tracing would cost more
@pytest.mark.parametrize("command", [command for command, spec in COMMANDS.items() if spec.trains])
def test_a_diverged_training_writes_nothing_and_says_so(data, tmp_path, capsys, command):
    paths = {flag: tmp_path / name for flag, name in COMMANDS[command].outputs.items()}
    # 1e38: Adam's first step makes the weights ~1e38, the next batch's loss NaN.
    argv = [*_argv(data, command, tmp_path, **paths), "--lr", "1e38"]
    if command == "seq2seq":
        argv += ["--limit", "8"]  # two batches: it diverges in the first epoch
    _refused(data, tmp_path, capsys, argv, "training diverged", "nothing was saved")
