import pytest

from ganet_tf.metrics import classification_report


def test_report_against_a_hand_count():
    labels = [0, 0, 0, 1, 1, 2]
    predictions = [0, 0, 1, 1, 2, 2]
    report = classification_report(labels, predictions, ["a", "b", "c"])
    assert report["confusion_matrix"] == [[2, 1, 0], [0, 1, 1], [0, 0, 1]]
    assert report["accuracy"] == pytest.approx(4 / 6)
    a, b, c = (report["per_class"][k] for k in "abc")
    assert (a["precision"], a["recall"], a["support"]) == (1.0, pytest.approx(2 / 3), 3)
    assert (b["precision"], b["recall"]) == (0.5, 0.5)
    assert (c["precision"], c["recall"], c["f1"]) == (0.5, 1.0, pytest.approx(2 / 3))
    assert report["macro_f1"] == pytest.approx((0.8 + 0.5 + 2 / 3) / 3)


def test_class_never_predicted_has_zero_precision():
    report = classification_report([0, 1], [0, 0], ["a", "b"])
    assert report["per_class"]["b"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
