"""A run of `train --tokenizer bytes`: predict, explain and the SavedModel read the same bytes."""

import json

import numpy as np
import pytest
import tensorflow as tf

from ganet_tf.cli import main
from ganet_tf.inference import load_classifier
from tests.inference.conftest import train_classifier_run
from tests.made_once import made_once

LENGTH = 200  # bytes the run reads (LRA reads 4,000: the path is the same)
LONG = ("a fine film, good and warm. " * 10)[:LENGTH]
TEXTS = [LONG, "bad \x00 awful", "naïve café — 東京", "x" * 100_000]
# GA-Net on a BiLSTM, which traces in seconds (a gated Transformer's sparse buckets take minutes here).
MODEL = ["--model", "ganet", "--auxiliary", "conv", "--hidden", "4"]
INVALID_UTF8 = b"caf\xe9 \xff\xfe film"


@pytest.fixture(scope="module")
def byte_run(tmp_path_factory):
    flags = ["--tokenizer", "bytes", "--sequence-length", str(LENGTH), *MODEL]
    return made_once(tmp_path_factory, "byte_run", lambda root: train_classifier_run(root, flags))


@pytest.fixture(scope="module")
def byte_export(byte_run, tmp_path_factory):
    """The byte run's SavedModel version folder (`export_saved_model`)."""
    from ganet_tf.export import export_saved_model

    def export(folder):
        return export_saved_model(byte_run, "bytes", base=str(folder / "saved_models"))

    return made_once(tmp_path_factory, "byte_export", export)


def _served(exported, texts):
    """The SavedModel loaded by plain TensorFlow on `texts` (raw bytes or strings)."""
    return tf.saved_model.load(exported).signatures["serving_default"](text=tf.constant(texts))


def _assert_same_answers(results, served):
    assert len(results) == len(served["label"])
    for row, item in enumerate(results):
        assert item["label"] == served["label"][row].numpy().decode()
        np.testing.assert_allclose(
            list(item["probabilities"].values()), served["probabilities"][row].numpy(), rtol=1e-5, atol=1e-6
        )


def test_a_byte_run_records_its_tokenizer(byte_run):
    with open(f"{byte_run}/preprocessing.json", encoding="utf-8") as handle:
        preprocessing = json.load(handle)
    assert (preprocessing["tokenizer"], preprocessing["vocabulary"]) == ("bytes", [])
    with open(f"{byte_run}/metrics.json", encoding="utf-8") as handle:
        metrics = json.load(handle)
    assert (metrics["vocabulary_size"], metrics["config"]["tokenizer"]) == (258, "bytes")


def test_predict_and_the_saved_model_agree_on_long_and_odd_texts(byte_run, byte_export, capsys):
    assert main(["predict", "--model", byte_run, *[item for text in TEXTS for item in ("--text", text)]]) == 0
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    _assert_same_answers(results, _served(byte_export, TEXTS))
    # The open bytes, readable: the NUL byte as \x00, a byte of a multi-byte character as \xNN.
    shown = {token for token, _ in results[1]["attended"]} | {token for token, _ in results[2]["attended"]}
    assert shown <= set("bad awful") | {" ", "\\x00"} | set("naïvecaf—東京") | {f"\\x{b:02x}" for b in range(128, 256)}


def test_predict_file_reads_invalid_utf8_as_the_saved_model_does(byte_run, byte_export, tmp_path, capsys):
    # Invalid UTF-8 (a latin-1 byte, two bytes no UTF-8 text has), valid UTF-8, and both in one line.
    lines = [INVALID_UTF8, "naïve café".encode(), "é ok \xe9".encode() + b" \xe9"]
    path = tmp_path / "texts.txt"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert main(["predict", "--model", byte_run, "--file", str(path), "--quiet"]) == 0
    captured = capsys.readouterr()
    results = [json.loads(line) for line in captured.out.splitlines()]
    _assert_same_answers(results, _served(byte_export, lines))  # the raw bytes of each line
    assert [item["text"] for item in results] == ["caf\\xe9 \\xff\\xfe film", "naïve café", "é ok \xe9 \\xe9"]
    (warning,) = captured.err.splitlines()
    assert warning.startswith("ganet_tf: warning:") and "2 lines are not valid utf-8 (line 1, 3)" in warning
    assert "kept as they are" in warning and "latin-1" not in warning
    # The bytes of the line, not the text of its bytes read as latin-1 (what a word-level run reads).
    misread = _served(byte_export, [INVALID_UTF8.decode("latin-1")])["probabilities"][0].numpy()
    assert not np.allclose(list(results[0]["probabilities"].values()), misread, rtol=0, atol=1e-7)


def test_invalid_utf8_gives_an_answer(byte_run):
    classifier = load_classifier(byte_run)
    # Bytes a Python string cannot hold reach the model as a string tensor.
    probabilities = classifier.predict(tf.constant([b"caf\xe9 \xff\xfe film", b"\x00"]))
    assert probabilities.shape == (2, 2) and np.all(np.isfinite(probabilities))
    # So do Python bytes: as they are, not decoded.
    np.testing.assert_allclose(classifier.predict([b"caf\xe9 \xff\xfe film", b"\x00"]), probabilities, atol=1e-6)
    (item,) = classifier.classify([INVALID_UTF8])
    assert item["text"] == "caf\\xe9 \\xff\\xfe film" and item["label"] in ("neg", "pos")
    empty, nul = classifier.classify(["", "\x00"])
    assert empty["label"] is None and nul["label"] in ("neg", "pos")


def test_explain_shows_bytes(byte_run, tmp_path, capsys):
    out = tmp_path / "explain"
    assert main(["explain", "--model", byte_run, "--text", "ok é", "--out", str(out)]) == 0
    capsys.readouterr()
    with open(out / "explanations.json", encoding="utf-8") as handle:
        explanation = json.load(handle)[0][0]  # model 1, text 1
    assert explanation["tokens"] == ["o", "k", " ", "\\xc3", "\\xa9"]
    assert len(explanation["gates"]) == 5


@pytest.mark.parametrize("split", ["test", "validation"])
def test_evaluate_measures_the_recorded_figures_again(byte_run, split, capsys):
    assert main(["evaluate", "--model", byte_run, "--split", split]) == 0
    result = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert result["split"] == split and result["examples"] > 0
    assert result["accuracy"] == pytest.approx(result["recorded_accuracy"], abs=1e-9)
    with open(f"{byte_run}/metrics.json", encoding="utf-8") as handle:
        metrics = json.load(handle)
    assert result["attended_density"] == pytest.approx(metrics[f"{split}_attended_density"], abs=1e-9)


def test_evaluate_a_folder_that_is_no_run(tmp_path, capsys):
    assert main(["evaluate", "--model", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ganet_tf: error:") and "train --out" in err[0]


def test_predict_text_reads_invalid_utf8_as_predict_file_does(byte_run, byte_export, capsys):
    # Python holds an argument's bytes that are not UTF-8 as surrogates.
    argument = INVALID_UTF8.decode("utf-8", "surrogateescape")
    assert main(["predict", "--model", byte_run, "--text", argument]) == 0
    (result,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    _assert_same_answers([result], _served(byte_export, [INVALID_UTF8]))
    assert result["text"] == "caf\\xe9 \\xff\\xfe film"


def test_a_word_level_run_reads_such_an_argument_as_latin_1(capsys):
    from ganet_tf.inference.commands import command_line_text

    assert command_line_text("naïve") == "naïve" and command_line_text("naïve", keep_bytes=True) == "naïve"
    assert command_line_text("caf\udce9", keep_bytes=True) == b"caf\xe9"
    assert command_line_text("caf\udce9") == "café"
    assert "read as latin-1" in capsys.readouterr().err
