"""`python -m ganet_tf export` of a seq2seq run: its translator for TF Serving."""

import json
import os
import shutil

import pytest
import tensorflow as tf

from ganet_tf import load_translator
from ganet_tf.cli import main
from ganet_tf.export import export_translator
from ganet_tf.export.warmup import read_warmup_requests
from tests.command_checks import check_full_disk_changes_nothing


def _summary(capsys):
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_a_seq2seq_run_exports_as_a_served_translator(translator_run, tmp_path, capsys):
    base = tmp_path / "saved_models"
    assert main(["export", "--model", translator_run, "--name", "copy", "--base", str(base)]) == 0
    assert _summary(capsys) == {
        "name": "copy",
        "version": 1,
        "path": str(base / "copy" / "1"),
        "models_config": str(base / "models.config"),
    }
    version = base / "copy" / "1"
    assert sorted(os.listdir(version / "assets.extra")) == ["ganet_tf_metrics.json", "tf_serving_warmup_requests"]
    assert 'name: "copy"' in (base / "models.config").read_text()
    with open(os.path.join(translator_run, "examples.json"), encoding="utf-8") as handle:
        sources = [example["source"] for example in json.load(handle)]
    # The warmup requests send the run's example sources to `sentences`.
    requests = read_warmup_requests(str(version / "assets.extra" / "tf_serving_warmup_requests"))
    assert [[text.decode() for text in request.inputs["sentences"].string_val] for request in requests] == [
        sources[:1],
        sources,
    ]
    serve = tf.saved_model.load(str(version)).signatures["serving_default"]
    served = [text.decode() for text in serve(sentences=tf.constant(sources))["translations"].numpy()]
    assert served == load_translator(translator_run).predict(sources)

    # The model.keras file stands for its run folder; the next version is 2,
    # and its warmup requests send the given texts (the `export_translator`
    # function exports in the full-disk test below).
    (tmp_path / "texts.txt").write_text("s1 s2 s3\n\ns4\n", encoding="utf-8")
    keras_file = os.path.join(translator_run, "model.keras")
    warmup = ["--warmup-texts", str(tmp_path / "texts.txt")]
    assert main(["export", "--model", keras_file, "--name", "copy", "--base", str(base), *warmup]) == 0
    assert _summary(capsys)["path"] == str(base / "copy" / "2")
    assert sorted(os.listdir(base / "copy")) == ["1", "2"]
    requests = read_warmup_requests(str(base / "copy" / "2" / "assets.extra" / "tf_serving_warmup_requests"))
    sent = [[text.decode() for text in request.inputs["sentences"].string_val] for request in requests]
    assert sent == [["s1 s2 s3"], ["s1 s2 s3", "s4"]]


def test_a_gated_run_exports_under_another_test_gate_rule(gated_translator_run, tmp_path, capsys):
    base = tmp_path / "saved_models"
    rule = ["--inference-mode", "top_k", "--inference-density", "1.0"]
    assert main(["export", "--model", gated_translator_run, "--name", "m", "--base", str(base), *rule]) == 0
    assert _summary(capsys)["test_gates"] == {"inference_mode": "top_k", "inference_density": 1.0}
    version = base / "m" / "1"
    metrics = json.loads((version / "assets.extra" / "ganet_tf_metrics.json").read_text())
    assert metrics["served_test_gates"] == {"inference_mode": "top_k", "inference_density": 1.0}
    with open(os.path.join(gated_translator_run, "examples.json"), encoding="utf-8") as handle:
        sources = [example["source"] for example in json.load(handle)]
    serve = tf.saved_model.load(str(version)).signatures["serving_default"]
    served = [text.decode() for text in serve(sentences=tf.constant(sources))["translations"].numpy()]
    every = {"inference_mode": "top_k", "inference_density": 1.0}
    assert served == load_translator(gated_translator_run, every).predict(sources)


def test_a_full_disk_is_one_error_line_and_keeps_the_earlier_version(translator_run, tmp_path):
    base = tmp_path / "saved_models"
    export_translator(translator_run, "copy", base=str(base))
    argv = ["export", "--model", translator_run, "--name", "copy", "--base", str(base)]
    check_full_disk_changes_nothing(argv, base, base / "copy" / "2")


@pytest.mark.parametrize(
    "change, argv, message",
    [
        (None, ["--inference-mode", "top_k"], "has no gates to serve under --inference-mode (a bahdanau"),
        ("no_model", [], "No model.keras"),
        ("corrupt_vocabularies", [], "is not a valid vocabulary file"),
    ],
)
def test_bad_seq2seq_exports_give_one_error_line_and_write_nothing(
    translator_run, tmp_path, capsys, change, argv, message
):
    run = tmp_path / "run"
    shutil.copytree(translator_run, run)
    if change == "no_model":
        os.remove(run / "model.keras")
    if change == "corrupt_vocabularies":
        text = (run / "vocabularies.json").read_text(encoding="utf-8")
        (run / "vocabularies.json").write_text(text[: len(text) // 2], encoding="utf-8")
    base = tmp_path / "saved_models"
    assert main(["export", "--model", str(run), "--name", "m", "--base", str(base), *argv]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("ganet_tf: error: ") and message in captured.err
    assert captured.err.count("\n") == 1
    assert not base.exists()
