import json

import numpy as np
import pytest

from ganet_tf.cli import main
from ganet_tf.models import build_explainer
from ganet_tf.models import build_model
from ganet_tf.training.evaluate import evaluate_model

RNG = np.random.default_rng(0)
IDS = RNG.integers(2, 30, size=[16, 12]).astype("int32")
IDS[1, 4:] = 0
IDS[2, 1:] = 0
LABELS = RNG.integers(0, 2, size=[16])


@pytest.mark.parametrize("name", ["sparsemax", "entmax"])
def test_sparse_attention_reports_attended_density_and_soft_flops(name):
    model = build_model(name, 2, vocabulary_size=30, embedding_dim=6, hidden_dim=5, attention_units=4)
    # Wide scores, so that some real tokens get exactly zero weight.
    score = model.get_layer("attention").score
    score.set_weights([np.linspace(-300, 300, 4)[:, None].astype("float32")])
    result = evaluate_model(model, IDS, LABELS, ["a", "b"])
    lengths = (IDS != 0).sum(axis=1)
    alpha = build_explainer(model).predict(IDS, verbose=0)["attention"]
    expected = np.mean(((alpha > 0) & (IDS != 0)).sum(axis=1) / lengths)
    assert result["attended_density"] == pytest.approx(expected)
    assert 0 < result["attended_density"] < 1
    assert result["density"] is None and result["attention_flops_gated"] is None
    assert result["attention_flops_soft"] == pytest.approx(
        np.mean(lengths) * model.get_layer("attention").flops_per_token()
    )


def test_train_reports_the_attended_density_of_sparsemax(tmp_path, capsys):
    lines = [f"{'pos' if i % 2 else 'neg'} {'good fine' if i % 2 else 'bad awful'} film {i} plot" for i in range(40)]
    (tmp_path / "train.txt").write_text("\n".join(lines))
    (tmp_path / "test.txt").write_text("\n".join(lines[:10]))
    code = main(
        [
            "train",
            "--model",
            "sparsemax",
            "--train-file",
            str(tmp_path / "train.txt"),
            "--test-file",
            str(tmp_path / "test.txt"),
            "--epochs",
            "1",
            "--hidden",
            "4",
            "--verbose",
            "0",
        ]
    )
    assert code == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["model"] == "sparsemax" and result["test_density"] is None
    assert 0 < result["test_attended_density"] <= 1 and 0 < result["validation_attended_density"] <= 1
    assert result["attention_flops_soft"] > 0 and result["attention_flops_gated"] is None
    assert "attended_density" in result["history"] and "val_attended_density" in result["history"]


@pytest.mark.parametrize("name", ["transformer", "ganet_transformer"])
def test_texts_are_predicted_by_length_with_the_scores_of_the_padded_batch(name):
    """`evaluate_model` predicts texts in batches cut to their longest text:
    the probabilities, gates and attention are those of the texts padded to
    the full length, predicted together. (Recurrent models: `train`'s tests
    compare its figures with those of the padded texts.)"""
    from ganet_tf.training.evaluate import _predict_by_length

    rng = np.random.default_rng(1)
    # Two batches of 8 (each shape traced once): texts of 0-100 tokens, then of 200-300.
    lengths = np.concatenate([rng.integers(0, 100, size=8), rng.integers(200, 300, size=8)])
    rng.shuffle(lengths)
    ids = np.where(np.arange(300) < lengths[:, None], rng.integers(2, 30, size=[16, 300]), 0).astype("int32")
    # Two sparse buckets: each traced shape builds a block per bucket.
    options = {"sparse_buckets": [0.5, 1.0]} if name == "ganet_transformer" else {}
    model = build_model(name, 2, vocabulary_size=30, embedding_dim=8, hidden_dim=8, num_heads=2, **options)
    explainer = build_explainer(model)
    padded = explainer.predict(ids, batch_size=16, verbose=0)
    by_length = _predict_by_length(explainer, ids, 8)
    assert sorted(by_length) == sorted(padded)
    for key, values in padded.items():
        np.testing.assert_allclose(by_length[key], values, atol=1e-5, err_msg=key)
