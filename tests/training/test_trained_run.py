import json

import pytest

from ganet_tf.errors import GANetInputError
from ganet_tf.training.run_folder import RUN_FILES
from ganet_tf.training.trained_run import load_preprocessing
from ganet_tf.training.trained_run import load_run
from ganet_tf.training.trained_run import model_file
from ganet_tf.training.trained_run import read_metrics


def test_read_metrics(tmp_path):
    metrics = {"test_accuracy": 0.875, "config": {"dataset": "trec"}}
    (tmp_path / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    assert read_metrics(str(tmp_path)) == metrics
    assert {"model.keras", "preprocessing.json", "metrics.json"} < RUN_FILES
    assert model_file(str(tmp_path)) == str(tmp_path / "model.keras")


@pytest.mark.parametrize(
    "content, message",
    [(None, "No metrics.json in"), ('{"test_accuracy": 0.8', "is not valid JSON"), ("[0.8]", "holds no JSON object")],
)
def test_read_metrics_errors(tmp_path, content, message):
    if content is not None:
        (tmp_path / "metrics.json").write_text(content, encoding="utf-8")
    with pytest.raises(GANetInputError, match=message) as error:
        read_metrics(str(tmp_path))
    assert "\n" not in str(error.value)


def test_load_run_errors(tmp_path):
    with pytest.raises(GANetInputError, match="No model.keras in"):
        load_run(str(tmp_path))
    (tmp_path / "model.keras").write_bytes(b"not a zip")
    with pytest.raises(GANetInputError, match="No preprocessing file"):
        load_run(str(tmp_path))
    (tmp_path / "preprocessing.json").write_text("{}", encoding="utf-8")
    with pytest.raises(GANetInputError, match="not a valid preprocessing file"):
        load_preprocessing(str(tmp_path))
