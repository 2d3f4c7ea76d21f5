"""`python -m ganet_tf predict` and `translate`: JSON lines, input rules, one-line errors."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from ganet_tf.cli import main
from tests.command_checks import error_text_line
from tests.gate_references import nucleus_open

TEXTS = ["good fine film 3", "bad awful film 8", "", "naïve café — 東京"]
# A BOM, CRLF, blank lines, a latin-1 byte in UTF-8, a lone CR, U+2028 inside a line, no final newline.
FILE_BYTES = b"\xef\xbb\xbfgood fine film 1\r\nbad awful film\n\n   \ncaf\xe9 film good\rawful \xe2\x80\xa8 bad\nfine"
FILE_TEXTS = ["good fine film 1", "bad awful film", "", "   ", "café film good", "awful \u2028 bad", "fine"]


def _lines(text):
    return [json.loads(line) for line in text.splitlines()]


def test_predict_prints_one_json_line_per_text_as_the_saved_model(classifier_run, saved_model, capsys):
    args = [item for text in TEXTS for item in ("--text", text)]
    assert main(["predict", "--model", classifier_run, *args]) == 0
    captured = capsys.readouterr()
    results = _lines(captured.out)  # nothing but the JSON lines: no summary
    assert [item["text"] for item in results] == TEXTS
    assert "━" not in captured.err  # no progress bar for --text
    served = tf.saved_model.load(saved_model).signatures["serving_default"](text=tf.constant(TEXTS))
    for row, item in enumerate(results):
        if not TEXTS[row]:
            assert (item["label"], item["probabilities"], item["attended"]) == (None, None, None)
            continue
        assert item["label"] == served["label"][row].numpy().decode()
        np.testing.assert_allclose(
            [item["probabilities"][name] for name in ("neg", "pos")], served["probabilities"][row], atol=1e-6
        )
        attention = served["attention"][row].numpy()
        np.testing.assert_allclose([w for _, w in item["attended"]], attention[attention > 0], atol=1e-6)


def test_a_file_gives_one_output_line_per_input_line(classifier_run, tmp_path, capsys):
    path = tmp_path / "texts.txt"
    path.write_bytes(FILE_BYTES)
    out = tmp_path / "new" / "predictions.jsonl"
    flags = ["--file", str(path), "--batch-size", "2", "--out", str(out)]
    assert main(["predict", "--model", classifier_run, *flags]) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("ganet_tf: warning:")]
    assert len(warnings) == 1 and "1 line is not valid utf-8 (line 5)" in warnings[0] and "latin-1" in warnings[0]
    results = _lines(out.read_text(encoding="utf-8"))
    assert [item["line"] for item in results] == list(range(1, 8))
    assert [item["text"] for item in results] == FILE_TEXTS
    assert [item["label"] is None for item in results] == [False, False, True, True, False, False, False]
    assert sorted(os.listdir(out.parent)) == ["predictions.jsonl"]  # no staging or lock file left

    # Streamed in batches of 2 or all at once: the same lines.
    assert main(["predict", "--model", classifier_run, "--file", str(path), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == warnings  # --quiet: the warning, no progress bar or summary
    whole = _lines(captured.out)
    assert [(item["line"], item["text"], item["label"]) for item in whole] == [
        (item["line"], item["text"], item["label"]) for item in results
    ]
    for one, other in zip(whole, results, strict=True):  # equal up to the float rounding of other batch sizes
        assert (one["probabilities"] is None) == (other["probabilities"] is None)
        if one["probabilities"] is not None:
            assert one["probabilities"] == pytest.approx(other["probabilities"], abs=1e-6)
    # The latin-1 line is classified as the text it was meant to be.
    assert main(["predict", "--model", classifier_run, "--text", "café film good"]) == 0
    (alone,) = _lines(capsys.readouterr().out)
    assert alone["probabilities"] == pytest.approx(results[4]["probabilities"], abs=1e-6)


def test_out_is_refused_for_the_input_file_and_a_folder_and_kept_on_errors(classifier_run, tmp_path, capsys):
    path = tmp_path / "texts.txt"
    path.write_bytes(FILE_BYTES)
    assert main(["predict", "--model", classifier_run, "--file", str(path), "--out", str(path)]) == 2
    assert "is the input file" in error_text_line(capsys.readouterr().err)
    assert path.read_bytes() == FILE_BYTES
    assert main(["predict", "--model", classifier_run, "--file", str(path), "--out", str(tmp_path)]) == 2
    assert "is a folder" in error_text_line(capsys.readouterr().err)
    earlier = tmp_path / "earlier.jsonl"
    earlier.write_text("kept\n")
    assert main(["predict", "--model", str(tmp_path / "no_run"), "--text", "x", "--out", str(earlier)]) == 2
    assert "No model.keras in" in error_text_line(capsys.readouterr().err)
    assert earlier.read_text() == "kept\n"
    assert main(["predict", "--model", classifier_run, "--text", "x", "--batch-size", "0"]) == 2
    assert "--batch-size must be a positive integer" in error_text_line(capsys.readouterr().err)
    assert main(["predict", "--model", classifier_run, "--file", str(tmp_path / "none.txt")]) == 2
    assert "File not found" in error_text_line(capsys.readouterr().err)
    assert main(["predict", "--model", classifier_run, "--file", str(path), "--encoding", "klingon"]) == 2
    assert "Unknown --encoding" in error_text_line(capsys.readouterr().err)
    assert sorted(os.listdir(tmp_path)) == ["earlier.jsonl", "texts.txt"]


def test_a_damaged_run_is_one_error_line_and_exit_2(classifier_run, translator_run, tmp_path, capsys):
    broken = tmp_path / "broken"
    shutil.copytree(classifier_run, broken)
    with open(broken / "model.keras", "r+b") as handle:
        handle.truncate(500)
    assert main(["predict", "--model", str(broken), "--text", "x"]) == 2
    line = error_text_line(capsys.readouterr().err)
    assert "model.keras is not a complete .keras file" in line and "retrain" in line
    assert main(["predict", "--model", translator_run, "--text", "x"]) == 2
    assert "python -m ganet_tf translate" in error_text_line(capsys.readouterr().err)
    assert main(["translate", "--model", classifier_run, "--text", "x"]) == 2
    assert "python -m ganet_tf predict" in error_text_line(capsys.readouterr().err)
    assert capsys.readouterr().out == ""


def test_translate_writes_one_line_per_sentence(translator_run, tmp_path, capsys):
    with open(os.path.join(translator_run, "examples.json"), encoding="utf-8") as handle:
        examples = json.load(handle)[:3]
    path = tmp_path / "sources.txt"
    path.write_text("\n".join([*(e["source"] for e in examples), "", ""]) + "\n")
    assert main(["translate", "--model", translator_run, "--file", str(path), "--batch-size", "2", "--quiet"]) == 0
    results = _lines(capsys.readouterr().out)
    assert [item["line"] for item in results] == [1, 2, 3, 4, 5]
    assert results[3] == {"line": 4, "source": "", "translation": None}
    from ganet_tf import load_translator

    # Other batches than the command's: a translation does not depend on its batch.
    translations = load_translator(translator_run).predict([e["source"] for e in examples], batch_size=3)
    assert [item["translation"] for item in results[:3]] == translations


def test_translate_serves_another_test_gate_rule(gated_translator_run, translator_run, capsys):
    from ganet_tf import load_translator

    with open(os.path.join(gated_translator_run, "examples.json"), encoding="utf-8") as handle:
        sources = [example["source"] for example in json.load(handle)]
    rule = ["--inference-mode", "top_k", "--inference-density", "1.0"]
    texts = [flag for source in sources for flag in ("--text", source)]
    assert main(["translate", "--model", gated_translator_run, *texts, *rule, "--quiet"]) == 0
    translations = [item["translation"] for item in _lines(capsys.readouterr().out)]
    every = load_translator(gated_translator_run, {"inference_mode": "top_k", "inference_density": 1.0})
    assert translations == every.predict(sources)
    assert main(["translate", "--model", translator_run, "--text", "1 2", *rule]) == 2
    assert "has no gates to serve under --inference-mode" in error_text_line(capsys.readouterr().err)
    assert main(["translate", "--model", gated_translator_run, "--text", "1 2", "--inference-density", "0.7"]) == 2
    assert "is the parameter of --inference-mode top_k" in error_text_line(capsys.readouterr().err)


def test_predict_runs_from_an_empty_folder_outside_the_repository(classifier_run, tmp_path):
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (tmp_path / "texts.txt").write_text("good fine film\n\nbad awful\n", encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    completed = subprocess.run(
        [sys.executable, "-m", "ganet_tf", "predict", "--model", classifier_run, "--file", "../texts.txt"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    results = _lines(completed.stdout)
    assert [item["line"] for item in results] == [1, 2, 3]
    assert results[1]["label"] is None and results[0]["label"] in ("neg", "pos")
    assert "3/3" in completed.stderr  # the progress bar, on stderr
    assert os.listdir(folder) == []


def test_predict_serves_another_test_gate_rule(classifier_run, capsys):
    from ganet_tf.interpret import explain_texts

    texts = ["good fine film 3 bad", "bad awful film 8", "fine"]
    args = [item for text in texts for item in ("--text", text)]
    assert main(["predict", "--model", classifier_run, *args]) == 0
    own = _lines(capsys.readouterr().out)
    ratio = 0.05
    assert (
        main(
            [
                "predict",
                "--model",
                classifier_run,
                *args,
                "--inference-mode",
                "relative",
                "--inference-ratio",
                str(ratio),
            ]
        )
        == 0
    )
    relative = _lines(capsys.readouterr().out)
    # p_t does not depend on the rule: the run's own explanation gives them.
    for item, default, explanation in zip(relative, own, explain_texts(classifier_run, texts), strict=True):
        p = np.array(explanation["gate_probabilities"])
        tokens = explanation["tokens"]
        assert [token for token, _ in default["attended"]] == [
            t for t, keep in zip(tokens, nucleus_open(p, 0.3), strict=True) if keep
        ]  # the run's own rule: nucleus at 0.3, the default
        assert [token for token, _ in item["attended"]] == [
            t for t, keep in zip(tokens, p >= ratio * p.max(), strict=True) if keep
        ]
    assert any(len(a["attended"]) != len(b["attended"]) for a, b in zip(relative, own, strict=True))
    assert main(["predict", "--model", classifier_run, "--text", "x", "--inference-ratio", "0.5"]) == 2
    assert "--inference-ratio is the parameter of --inference-mode relative" in error_text_line(capsys.readouterr().err)


def test_translate_explain_adds_what_the_gates_left_open(gated_translator_run, capsys):
    from ganet_tf import load_translator
    from ganet_tf.seq2seq.source_explanations import explain_sources

    with open(os.path.join(gated_translator_run, "examples.json"), encoding="utf-8") as handle:
        sources = [example["source"] for example in json.load(handle)][:3]
    texts = [flag for source in [*sources, " "] for flag in ("--text", source)]
    assert main(["translate", "--model", gated_translator_run, *texts, "--explain", "--batch-size", "2"]) == 0
    results = _lines(capsys.readouterr().out)
    translator = load_translator(gated_translator_run)
    assert [item["translation"] for item in results[:3]] == translator.predict(sources)
    explanations = explain_sources(translator.model, translator.source_vocabulary, sources)
    assert [item["explain"] for item in results[:3]] == explanations
    assert results[3] == {"source": " ", "translation": None, "explain": None}
    for item in results[:3]:
        explain = item["explain"]
        assert explain["open"] and explain["closed"]  # top_k at 0.5
        assert explain["open_share"] == len(explain["open"]) / len(explain["words"])
    assert translator.explain(sources) == results[:3]


def test_translate_explain_gives_a_hierarchical_runs_blocks(hierarchical_translator_run, capsys):
    argv = ["translate", "--model", hierarchical_translator_run, "--text", "s1 s2 s3 s4 s5", "--explain"]
    assert main(argv) == 0
    (result,) = _lines(capsys.readouterr().out)
    assert result["explain"] == {"blocks": [["s1", "s2"], ["s3", "s4"], ["s5"]], "nodes": [5, 3]}


def test_translate_explain_of_a_bahdanau_run_is_one_error_line(translator_run, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert main(["translate", "--model", translator_run, "--text", "1 2", "--explain"]) == 2
    captured = capsys.readouterr()
    line = error_text_line(captured.err)
    assert "--explain needs a gated or hierarchical run" in line and translator_run in line
    assert "--attention bahdanau" in line and "train with --attention gated" in line
    assert captured.out == ""
    assert main(["translate", "--model", translator_run, "--text", "1 2", "--explain", "--out", str(out)]) == 2
    assert not out.exists()
    with pytest.raises(SystemExit):
        main(["translate", "--help"])
    help_text = capsys.readouterr().out
    assert "--explain" in help_text and '"explain"' in help_text
