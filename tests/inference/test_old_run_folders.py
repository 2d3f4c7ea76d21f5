"""A run folder written before the gate options took the builders' names (`tau`, `lam`, ...) still serves."""

import json
import os
import shutil

import pytest

from ganet_tf.cli import main
from ganet_tf.policy.renamed_keys import RENAMED_KEYS
from ganet_tf.policy.trained_run import read_metrics

# `train`'s old keys (`gate_penalty` was seq2seq's spelling of `penalty`).
NEW_TO_OLD = {new: old for old, new in RENAMED_KEYS.items() if old != "gate_penalty"}
LRA_RUN = "results/lra_text/models/imdb-bytes_conv-rho0.2_seed0"


@pytest.fixture
def old_run(classifier_run, tmp_path):
    """`classifier_run` copied, its `metrics.json` config under the old keys."""
    folder = tmp_path / "old_run"
    shutil.copytree(classifier_run, folder)
    path = folder / "metrics.json"
    metrics = json.loads(path.read_text(encoding="utf-8"))
    assert set(NEW_TO_OLD) <= set(metrics["config"])
    metrics["config"] = {NEW_TO_OLD.get(key, key): value for key, value in metrics["config"].items()}
    path.write_text(json.dumps(metrics, indent=2), encoding="utf-8")
    return str(folder)


def _lines(capsys):
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]


def test_the_old_keys_read_as_the_keys_of_now(classifier_run, old_run):
    config = read_metrics(old_run)["config"]
    assert config == read_metrics(classifier_run)["config"]
    assert not set(RENAMED_KEYS) & set(config)


def test_predict_explain_export_and_evaluate_serve_an_old_run(classifier_run, old_run, tmp_path, capsys):
    texts = ["--text", "good fine film", "--text", "bad awful film"]
    assert main(["predict", "--model", classifier_run, *texts]) == 0
    expected = _lines(capsys)
    assert main(["predict", "--model", old_run, *texts]) == 0
    assert _lines(capsys) == expected

    assert main(["explain", "--model", old_run, *texts, "--out", str(tmp_path / "explain")]) == 0
    assert os.path.isfile(tmp_path / "explain" / "explanations.json")

    # Under another rule, export rewrites the run's metrics.json (read_metrics) beside the model.
    rule = ["--inference-mode", "top_k", "--inference-density", "0.5"]
    assert main(["export", "--model", old_run, "--name", "old", "--base", str(tmp_path / "models"), *rule]) == 0
    assert os.path.isfile(tmp_path / "models" / "old" / "1" / "saved_model.pb")

    assert main(["evaluate", "--model", old_run]) == 0
    result = _lines(capsys)[-1]
    assert result["accuracy"] == pytest.approx(result["recorded_accuracy"], abs=1e-9)
    assert "deprecated" not in capsys.readouterr().err


@pytest.mark.skipif(not os.path.isdir(LRA_RUN), reason="the committed LRA run is not in this checkout")
def test_the_committed_lra_run_reads_under_the_keys_of_now():
    from ganet_tf.training import TrainConfig

    config = read_metrics(LRA_RUN)["config"]
    assert (config["auxiliary"], config["auxiliary_hidden_dim"], config["penalty"]) == ("conv", 20, 0.01)
    assert TrainConfig(**{key: value for key, value in config.items() if key in TrainConfig.__dataclass_fields__})
