"""Layout, versions, atomic writes, models.config and bad input of `export`."""

import importlib
import json
import os
import shutil

import pytest

from ganet_tf.cli import main
from ganet_tf.errors import GANetInputError
from ganet_tf.export import export_saved_model
from ganet_tf.export.model_config import model_config_text
from ganet_tf.export.warmup import read_warmup_requests
from tests.command_checks import check_full_disk_changes_nothing
from tests.command_checks import tree

# The module, not the function of the same name that the package exports.
exporter = importlib.import_module("ganet_tf.export.export_saved_model")


def test_layout_and_model_config(exports):
    base, paths = exports
    assert paths == {
        "ganet": os.path.join(base, "trec_ganet", "1"),
        "soft": os.path.join(base, "trec_soft", "1"),
    }
    assert sorted(os.listdir(base)) == ["models.config", "trec_ganet", "trec_soft"]
    version = paths["ganet"]
    assert {"saved_model.pb", "variables", "assets.extra"} <= set(os.listdir(version))
    assert sorted(os.listdir(os.path.join(version, "assets.extra"))) == [
        "ganet_tf_metrics.json",
        "tf_serving_warmup_requests",
    ]
    assert oct(os.stat(version).st_mode & 0o777) == "0o755"

    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    with open(os.path.join(base, "models.config"), encoding="utf-8") as handle:
        config = text_format.Parse(handle.read(), model_server_config_pb2.ModelServerConfig())
    entries = [(entry.name, entry.base_path, entry.model_platform) for entry in config.model_config_list.config]
    assert entries == [
        (name, os.path.abspath(os.path.join(base, name)), "tensorflow") for name in ("trec_ganet", "trec_soft")
    ]


def test_versions_refusal_and_overwrite(runs, exports, tmp_path, capsys):
    base = tmp_path / "saved_models"
    run = runs["ganet"]
    shutil.copytree(exports[1]["ganet"], base / "m" / "1")
    (base / "m" / "1" / "marker").write_text("old")

    with pytest.raises(GANetInputError, match="Version 1 of m exists .* --overwrite"):
        export_saved_model(run, "m", version=1, base=str(base))
    assert (base / "m" / "1" / "marker").exists()

    code = main(["export", "--model", run, "--name", "m", "--version", "1", "--base", str(base), "--overwrite"])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and summary["version"] == 1
    assert not (base / "m" / "1" / "marker").exists()
    assert (base / "m" / "1" / "saved_model.pb").exists()
    # No staging or retired folders are left beside the version.
    assert sorted(os.listdir(base / "m")) == ["1"]
    assert sorted(os.listdir(base)) == ["m", "models.config"]
    assert 'name: "m"' in (base / "models.config").read_text()


def test_next_version_follows_the_highest_integer_folder(tmp_path):
    from ganet_tf.export.model_config import version_numbers

    root = tmp_path / "m"
    for name in ("1", "3", "10", ".export-11-x", "notes", "12"):
        (root / name).mkdir(parents=True)
    for name in ("1", "3", "10", ".export-11-x"):
        (root / name / "saved_model.pb").write_bytes(b"")
    assert version_numbers(str(root)) == [1, 3, 10]  # "12" holds no SavedModel
    assert 'name: "m"' in model_config_text(str(tmp_path))


def test_interrupted_export_leaves_nothing(runs, tmp_path, monkeypatch):
    base = tmp_path / "saved_models"

    def fail(saved_model_dir, *args, **kwargs):
        assert os.path.isfile(os.path.join(saved_model_dir, "saved_model.pb"))
        raise KeyboardInterrupt  # midway: the SavedModel is already written

    monkeypatch.setattr(exporter, "write_warmup_requests", fail)
    with pytest.raises(KeyboardInterrupt):
        export_saved_model(runs["ganet"], "m", base=str(base))
    assert not base.exists()


def test_an_export_cleans_dead_staging_folders_and_takes_a_model_keras_file_warmup_texts_and_top_k(
    runs, exports, tmp_path, capsys
):
    import subprocess
    import sys

    import numpy as np
    import tensorflow as tf

    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    base = tmp_path / "saved_models"
    shutil.copytree(os.path.dirname(exports[1]["ganet"]), base / "m")
    dead, alive = process.pid, os.getpid()
    (base / "m" / f".export-2-{dead}-abc").mkdir()  # killed while writing
    (base / "m" / f".export-2-{alive}-def").mkdir()  # still running
    os.rename(base / "m" / "1", base / "m" / f".replaced-1-{dead}-ghi")  # killed mid-swap
    # The export is given the run's model.keras file: it stands for its run
    # folder. Its warmup requests send the given texts, and top_k without
    # --inference-density takes the run's target density (0.3), which the
    # summary and the metrics copy name.
    keras_file = os.path.join(runs["ganet"], "model.keras")
    texts = ["Who wrote Hamlet ?", "", "naïve café — 東京", "How far is the moon ?"]
    (tmp_path / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    flags = ["--warmup-texts", str(tmp_path / "texts.txt"), "--inference-mode", "top_k"]
    code = main(["export", "--model", keras_file, "--name", "m", "--base", str(base), *flags])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and summary == {
        "name": "m",
        "version": 2,
        "path": str(base / "m" / "2"),
        "models_config": str(base / "models.config"),
        "test_gates": {"inference_mode": "top_k", "inference_density": 0.3},
    }
    metrics = json.loads((base / "m" / "2" / "assets.extra" / exporter.METRICS_COPY).read_text())
    assert metrics["served_test_gates"] == summary["test_gates"]
    served = tf.saved_model.load(str(base / "m" / "2")).signatures["serving_default"](text=tf.constant(texts))
    lengths = (served["gate_probabilities"].numpy() > 0).sum(axis=1)
    opened = np.where(lengths > 0, np.maximum(np.round(0.3 * lengths), 1), 0)  # none of the empty text
    np.testing.assert_array_equal(served["gates"].numpy().sum(axis=1), opened)
    assert sorted(os.listdir(base / "m")) == [f".export-2-{alive}-def", "1", "2"]
    assert sorted(os.listdir(base)) == ["m", "models.config"]
    assert 'name: "m"' in (base / "models.config").read_text()
    assert os.path.isfile(base / "m" / "1" / "saved_model.pb")
    assert os.path.isfile(base / "m" / "2" / "saved_model.pb")
    requests = read_warmup_requests(str(base / "m" / "2" / "assets.extra" / "tf_serving_warmup_requests"))
    sent = [[text.decode() for text in request.inputs["text"].string_val] for request in requests]
    assert sent == [texts[:1], [text for text in texts if text]]
    # Without preprocessing.json beside it, one error line and nothing written.
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(keras_file, lone / "model.keras")
    code = main(["export", "--model", str(lone / "model.keras"), "--name", "n", "--base", str(base)])
    assert code == 2 and "No preprocessing.json beside" in capsys.readouterr().err
    assert not (base / "n").exists()


def test_failed_overwrite_keeps_the_old_version(runs, exports, tmp_path, monkeypatch):
    base = tmp_path / "saved_models"
    shutil.copytree(os.path.dirname(exports[1]["ganet"]), base / "m")
    before = tree(base)
    real_rename = os.rename

    def fail_on_the_new_version(source, target):
        if os.path.basename(source).startswith(".export-"):
            raise OSError("disk full")
        real_rename(source, target)

    monkeypatch.setattr(exporter.os, "rename", fail_on_the_new_version)
    with pytest.raises(OSError, match="disk full"):
        export_saved_model(runs["ganet"], "m", version=1, base=str(base), overwrite=True)
    assert tree(base) == before


def test_a_full_disk_is_one_error_line_and_keeps_the_earlier_version(runs, exports, tmp_path):
    # TensorFlow's SaveV2 fails (`File too large [Op:SaveV2]`) in a real
    # process whose files may not grow past 16,000 bytes.
    base = tmp_path / "saved_models"
    shutil.copytree(os.path.dirname(exports[1]["ganet"]), base / "m")
    argv = ["export", "--model", runs["ganet"], "--name", "m", "--base", str(base)]
    check_full_disk_changes_nothing(argv, base, base / "m" / "2")


@pytest.mark.parametrize(
    "change, argv, message",
    [
        (None, ["--model", "/nonexistent/run"], "Model folder not found"),
        ("no_preprocessing", [], "No preprocessing file"),
        ("no_model", [], "No model.keras"),
        (None, ["--name", "../escape"], "Bad model name '../escape'"),
        (None, ["--name", "two words"], "Bad model name"),
        (None, ["--version", "0"], "--version must be a positive integer"),
        (None, ["--inference-mode", "relative"], "--inference-mode relative needs its parameter"),
        (None, ["--inference-mass", "0.9"], "--inference-mass is the parameter of --inference-mode nucleus"),
        (None, ["--warmup-texts", "/nonexistent/texts.txt"], "No warmup texts file"),
        ("empty_warmup", [], "has no text"),
        ("class_mismatch", [], "must name the model's 6 classes"),
        ("base_file", [], "--base"),
        ("base_under_file", [], "is a file, not a folder"),
        ("nan_model", [], "non-finite weights"),
        ("corrupt_preprocessing", [], "is not a valid preprocessing file"),
        ("vocabulary_mismatch", [], "come from different runs"),
        ("truncated_model", [], "is not a complete .keras file"),
    ],
)
def test_bad_input_gives_one_error_line_and_writes_nothing(runs, tmp_path, capsys, change, argv, message):
    run = tmp_path / "run"
    shutil.copytree(runs["ganet"], run)
    extra = []
    if change == "no_preprocessing":
        os.remove(run / "preprocessing.json")
    if change == "no_model":
        os.remove(run / "model.keras")
    if change == "empty_warmup":
        (tmp_path / "texts.txt").write_text("\n  \n")
        extra = ["--warmup-texts", str(tmp_path / "texts.txt")]
    if change == "class_mismatch":
        config = json.loads((run / "preprocessing.json").read_text(encoding="utf-8"))
        config["class_names"] = config["class_names"][:2]
        (run / "preprocessing.json").write_text(json.dumps(config), encoding="utf-8")
    if change == "nan_model":
        import keras
        import numpy as np

        model = keras.models.load_model(run / "model.keras")
        model.set_weights([np.full_like(w, np.nan) for w in model.get_weights()])
        model.save(run / "model.keras")
    if change == "corrupt_preprocessing":
        text = (run / "preprocessing.json").read_text(encoding="utf-8")
        (run / "preprocessing.json").write_text(text[: len(text) // 2], encoding="utf-8")
    if change == "vocabulary_mismatch":
        config = json.loads((run / "preprocessing.json").read_text(encoding="utf-8"))
        config["vocabulary"] = config["vocabulary"][:-5]
        (run / "preprocessing.json").write_text(json.dumps(config), encoding="utf-8")
    if change == "truncated_model":
        data = (run / "model.keras").read_bytes()
        (run / "model.keras").write_bytes(data[: len(data) // 2])
    base = tmp_path / "saved_models"
    if change == "base_file":
        base.write_text("a file of the user")
    if change == "base_under_file":
        (tmp_path / "notes.txt").write_text("mine")
        base = tmp_path / "notes.txt" / "saved_models"
    code = main(["export", "--model", str(run), "--name", "m", "--base", str(base), *extra, *argv])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.startswith("ganet_tf: error: ") and message in captured.err
    assert captured.err.count("\n") == 1
    if change == "base_file":
        assert base.read_text() == "a file of the user"
    else:
        assert not base.exists()


def test_export_serves_another_test_gate_rule(runs, exports, tmp_path, capsys):
    import numpy as np
    import tensorflow as tf

    base = tmp_path / "saved_models"
    ratio = 0.5
    flags = ["--base", str(base), "--inference-mode", "relative", "--inference-ratio", str(ratio)]
    assert main(["export", "--model", runs["ganet"], "--name", "relative", *flags]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["test_gates"] == {"inference_mode": "relative", "inference_ratio": ratio}
    metrics = json.loads((base / "relative" / "1" / "assets.extra" / exporter.METRICS_COPY).read_text())
    assert metrics["served_test_gates"] == summary["test_gates"]
    texts = ["What is the capital of France ?", "Who wrote Hamlet ?", "How far is the moon from the earth ?"]
    served = tf.saved_model.load(str(base / "relative" / "1")).signatures["serving_default"](text=tf.constant(texts))
    p = served["gate_probabilities"].numpy()
    real = p > 0  # served p_t are 0 at padding only (a sigmoid elsewhere)
    largest = np.where(real, p, 0).max(axis=1, keepdims=True)
    np.testing.assert_array_equal(served["gates"].numpy(), (real & (p >= ratio * largest)).astype("float32"))
    # The run's own export (nucleus at 0.3, the `exports` fixture's) gives other gates.
    own = exports[1]["ganet"]
    own_gates = tf.saved_model.load(own).signatures["serving_default"](text=tf.constant(texts))["gates"].numpy()
    assert not np.array_equal(own_gates, served["gates"].numpy())
    # top_k: test_an_export_cleans_dead_staging_folders_and_takes_a_model_keras_file_warmup_texts_and_top_k.
    assert (
        main(
            ["export", "--model", runs["soft"], "--name", "soft", "--base", str(base), "--inference-mode", "threshold"]
        )
        == 2
    )
    assert "has no gates to serve under --inference-mode" in capsys.readouterr().err
    assert not (base / "soft").exists()
