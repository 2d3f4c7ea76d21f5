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


@pytest.fixture(scope="module")
def byte_run(tmp_path_factory):
    flags = ["--tokenizer", "bytes", "--sequence-length", str(LENGTH), *MODEL]
    return made_once(tmp_path_factory, "byte_run", lambda root: train_classifier_run(root, flags))


def test_a_byte_run_records_its_tokenizer(byte_run):
    with open(f"{byte_run}/preprocessing.json", encoding="utf-8") as handle:
        preprocessing = json.load(handle)
    assert (preprocessing["tokenizer"], preprocessing["vocabulary"]) == ("bytes", [])
    with open(f"{byte_run}/metrics.json", encoding="utf-8") as handle:
        metrics = json.load(handle)
    assert (metrics["vocabulary_size"], metrics["config"]["tokenizer"]) == (258, "bytes")


def test_predict_and_the_saved_model_agree_on_long_and_odd_texts(byte_run, tmp_path, capsys):
    from ganet_tf.export import export_saved_model

    exported = export_saved_model(byte_run, "bytes", base=str(tmp_path / "saved_models"))  # its version folder
    served = tf.saved_model.load(exported).signatures["serving_default"](text=tf.constant(TEXTS))
    assert main(["predict", "--model", byte_run, *[item for text in TEXTS for item in ("--text", text)]]) == 0
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(results) == len(TEXTS)
    for row, item in enumerate(results):
        assert item["label"] == served["label"][row].numpy().decode()
        np.testing.assert_allclose(
            list(item["probabilities"].values()), served["probabilities"][row].numpy(), rtol=1e-5, atol=1e-6
        )
    # The open bytes, readable: the NUL byte as \x00, a byte of a multi-byte character as \xNN.
    shown = {token for token, _ in results[1]["attended"]} | {token for token, _ in results[2]["attended"]}
    assert shown <= set("bad awful") | {" ", "\\x00"} | set("naïvecaf—東京") | {f"\\x{b:02x}" for b in range(128, 256)}


def test_invalid_utf8_gives_an_answer(byte_run):
    classifier = load_classifier(byte_run)
    # Bytes a Python string cannot hold reach the model as a string tensor.
    probabilities = classifier.predict(tf.constant([b"caf\xe9 \xff\xfe film", b"\x00"]))
    assert probabilities.shape == (2, 2) and np.all(np.isfinite(probabilities))
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
