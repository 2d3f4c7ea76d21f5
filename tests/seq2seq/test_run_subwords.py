"""`seq2seq` on Multi30k with subword vocabularies: what a reader gets back."""

import json
import os
import subprocess
import sys

import pytest

from ganet_tf.cli import main
from ganet_tf.inference.text_translator import load_translator
from ganet_tf.seq2seq.evaluation import decoded_split_scores
from ganet_tf.seq2seq.vocabulary import holds_unknown
from tests.command_checks import error_text_line
from tests.command_checks import tree
from tests.made_once import made_once

TINY = ["--limit", "50", "--epochs", "1", "--hidden", "8", "--embedding-dim", "8", "--batch-size", "50"]
# Lines a reader may paste: empty, punctuation only, 2,000 characters, other scripts.
HARD_LINES = ["", "!!! ... ???", ("Ein Mann fährt Fahrrad. " * 84)[:2000], "Δύο γάτες κοιμούνται.", "两只猫在睡觉。"]


@pytest.fixture(scope="module")
def subword_run(tmp_path_factory, data_dir):
    def train(folder):
        out, export = folder / "run", folder / "sm"
        # Gated with word gates: its SavedModel and `translate` must agree on them too.
        flags = ["--task", "multi30k", "--data-dir", data_dir, *TINY, "--vocabulary-size", "500"]
        flags += ["--attention", "gated", "--gate-unit", "word"]
        assert main(["seq2seq", *flags, "--verbose", "0", "--out", str(out), "--export", str(export)]) == 0
        return str(out), str(export)

    return tuple(made_once(tmp_path_factory, "subword_run", train))


def _json_lines(text):
    return [json.loads(line) for line in text.splitlines()]


def test_a_multi30k_run_saves_one_joint_subword_model_and_writes_no_unknown_token(subword_run, capsys):
    run, _ = subword_run
    with open(os.path.join(run, "vocabularies.json"), encoding="utf-8") as handle:
        saved = json.load(handle)
    assert saved["tokenizer"] == "bpe" and isinstance(saved["model"], str)
    assert saved["source"] == saved["target"] and len(saved["source"]) + 2 <= 500
    with open(os.path.join(run, "metrics.json"), encoding="utf-8") as handle:
        metrics = json.load(handle)
    assert metrics["tokenizer"] == metrics["config"]["tokenizer"] == "bpe"
    assert metrics["source_vocabulary"] == metrics["target_vocabulary"] == len(saved["source"]) + 2
    assert metrics["test_unknown_translations"] == 0  # of every test translation, not only the examples
    with open(os.path.join(run, "examples.json"), encoding="utf-8") as handle:
        hypotheses = [example["hypothesis"] for example in json.load(handle)]
    assert hypotheses and not any(holds_unknown(text) for text in hypotheses)


def test_translate_prints_detokenised_text_and_the_saved_model_gives_the_same(subword_run, capsys):
    run, export = subword_run
    sentence = "Ein Mann fährt Fahrrad."
    assert main(["translate", "--model", run, "--text", sentence]) == 0
    (line,) = _json_lines(capsys.readouterr().out)
    assert line["source"] == sentence and isinstance(line["translation"], str)
    assert not holds_unknown(line["translation"])
    assert load_translator(run).predict([sentence]) == [line["translation"]]
    # The exported SavedModel, in a fresh interpreter with TensorFlow and tensorflow-text only.
    script = (
        "import json, sys, tensorflow as tf, tensorflow_text\n"
        f"serve = tf.saved_model.load({export!r}).signatures['serving_default']\n"
        f"out = serve(sentences=tf.constant([{sentence!r}]))['translations']\n"
        "assert 'ganet_tf' not in sys.modules\n"
        "print(json.dumps([t.decode() for t in out.numpy()]))\n"
    )
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert json.loads(completed.stdout.strip().splitlines()[-1]) == [line["translation"]]


def test_hard_lines_each_get_a_translation_or_nothing_never_a_traceback(subword_run, tmp_path, capsys):
    run, _ = subword_run
    path = tmp_path / "hard.txt"
    path.write_text("\n".join(HARD_LINES) + "\n", encoding="utf-8")
    assert main(["translate", "--model", run, "--file", str(path), "--quiet"]) == 0
    captured = capsys.readouterr()
    results = _json_lines(captured.out)
    assert [item["source"] for item in results] == HARD_LINES
    assert results[0]["translation"] is None  # an empty line has nothing to translate
    for item in results[1:]:
        assert isinstance(item["translation"], str)
        assert not holds_unknown(item["translation"])
    assert "Traceback" not in captured.err


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--vocabulary-size", "100"], "--vocabulary-size must be"),
        (["--tokenizer", "word", "--vocabulary-size", "500"], "--vocabulary-size"),
        (["--tokenizer", "word", "--attention", "gated", "--gate-unit", "word"], "--gate-unit"),
    ],
)
def test_a_bad_tokenizer_flag_is_one_error_line_and_writes_nothing(tmp_path, capsys, flags, message):
    out = tmp_path / "run"
    code = main(["seq2seq", "--task", "multi30k", "--data-dir", str(tmp_path), *flags, "--out", str(out)])
    assert code == 2
    assert message in error_text_line(capsys.readouterr().err)
    assert tree(tmp_path) == []


def test_an_older_word_level_run_still_loads_scores_and_translates(tmp_path, data_dir, capsys):
    run = tmp_path / "words"
    flags = ["--task", "multi30k", "--data-dir", data_dir, *TINY, "--tokenizer", "word"]
    assert main(["seq2seq", *flags, "--verbose", "0", "--out", str(run)]) == 0
    capsys.readouterr()
    # As a run written before subwords: no tokenizer anywhere.
    with open(run / "metrics.json", encoding="utf-8") as handle:
        metrics = json.load(handle)
    del metrics["tokenizer"], metrics["config"]["tokenizer"], metrics["config"]["vocabulary_size"]
    (run / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    with open(run / "vocabularies.json", encoding="utf-8") as handle:
        assert set(json.load(handle)) == {"source", "target"}
    assert decoded_split_scores(str(run), "val", data_dir)["bleu"] is not None
    (translation,) = load_translator(str(run)).predict(["Ein Mann fährt Fahrrad."])
    assert isinstance(translation, str)
    # Starting a subword run from it is refused in one line that names the difference.
    out = tmp_path / "next"
    assert main(["seq2seq", "--task", "multi30k", "--data-dir", data_dir, *TINY, "--init-from", str(run)]) == 2
    assert "--tokenizer word there, bpe here" in error_text_line(capsys.readouterr().err)
    assert not out.exists()
