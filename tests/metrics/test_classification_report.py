import numpy as np
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


def test_confusion_matrix_matches_tensorflow():
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(0)
    labels, predictions = rng.integers(0, 5, 200), rng.integers(0, 5, 200)
    expected = tf.math.confusion_matrix(labels, predictions, num_classes=5).numpy()
    report = classification_report(labels, predictions, list("abcde"))
    assert report["confusion_matrix"] == expected.tolist()


def test_empty_split_has_no_accuracy():
    report = classification_report([], [], ["a", "b"])
    assert report["accuracy"] is None and report["confusion_matrix"] == [[0, 0], [0, 0]]


@pytest.mark.parametrize("labels, predictions", [([0, 2], [0, 1]), ([0, 1], [0, -1]), ([0, 1], [0])])
def test_refuses_classes_out_of_range_or_unequal_lengths(labels, predictions):
    with pytest.raises(ValueError):
        classification_report(labels, predictions, ["a", "b"])
