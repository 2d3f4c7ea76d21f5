import json
import re

import pytest

from ganet_tf.errors import GANetInputError
from ganet_tf.policy.run_folder import RUN_FILES
from ganet_tf.policy.trained_run import inference_rule
from ganet_tf.policy.trained_run import load_preprocessing
from ganet_tf.policy.trained_run import load_run
from ganet_tf.policy.trained_run import model_file
from ganet_tf.policy.trained_run import read_metrics
from ganet_tf.policy.trained_run import with_test_gates


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


def test_inference_rule_keeps_the_parameter_of_its_mode():
    assert inference_rule() is None
    assert inference_rule("threshold") == {"inference_mode": "threshold"}
    assert inference_rule("top_k", inference_density=0.2) == {"inference_mode": "top_k", "inference_density": 0.2}
    assert inference_rule("nucleus", inference_mass=1) == {"inference_mode": "nucleus", "inference_mass": 1}
    # Without theirs, top_k and nucleus take the run's target density (`with_test_gates`).
    assert inference_rule("nucleus") == {"inference_mode": "nucleus"}
    assert inference_rule("top_k") == {"inference_mode": "top_k"}


@pytest.mark.parametrize("mode, parameter", [("top_k", "inference_density"), ("nucleus", "inference_mass")])
def test_a_rule_without_its_parameter_takes_the_run_target_density(mode, parameter):
    from ganet_tf.models import build_ganet
    from ganet_tf.models import gate_rule

    small = {"vocabulary_size": 20, "embedding_dim": 4, "hidden_dim": 4, "auxiliary_hidden_dim": 3}
    model = build_ganet(2, target_density=0.2, inference_mode="threshold", **small)
    served = with_test_gates(model, {"inference_mode": mode}, "runs/ganet")
    assert gate_rule(served) == {"inference_mode": mode, parameter: 0.2}
    given = with_test_gates(model, {"inference_mode": mode, parameter: 0.7}, "runs/ganet")
    assert gate_rule(given) == {"inference_mode": mode, parameter: 0.7}
    paper = build_ganet(2, target_density=None, **small)
    flag = "--" + parameter.replace("_", "-")
    with pytest.raises(GANetInputError, match=re.escape(f"--inference-mode {mode} needs {flag} in (0, 1] for runs/p")):
        with_test_gates(paper, {"inference_mode": mode}, "runs/p")


@pytest.mark.parametrize(
    "flags, message",
    [
        ({"inference_ratio": 0.5}, "--inference-ratio is the parameter of --inference-mode relative: give that mode"),
        ({"inference_mode": "relative"}, "--inference-mode relative needs its parameter: give --inference-ratio"),
        (
            {"inference_mode": "nucleus", "inference_ratio": 0.5},
            "--inference-ratio is the parameter of --inference-mode relative, not nucleus: drop it and give "
            "--inference-mass",
        ),
        ({"inference_mode": "threshold", "inference_density": 0.3}, "not threshold: drop it."),
        ({"inference_mode": "relative", "inference_ratio": 0.0}, "--inference-ratio"),
        ({"inference_mode": "top_k", "inference_density": 1.5}, "--inference-density"),
        ({"inference_mode": "always"}, "Unknown --inference-mode 'always'"),
    ],
)
def test_inference_rule_errors(flags, message):
    with pytest.raises(GANetInputError, match=re.escape(message)):
        inference_rule(**flags)


def test_a_model_without_gates_is_one_error_line():
    from ganet_tf.models import build_soft_attention

    model = build_soft_attention(2, vocabulary_size=20, embedding_dim=4, hidden_dim=4)
    with pytest.raises(GANetInputError, match="has no gates to serve under --inference-mode"):
        with_test_gates(model, {"inference_mode": "threshold"}, "runs/soft")
    assert with_test_gates(model, None, "runs/soft") is model
