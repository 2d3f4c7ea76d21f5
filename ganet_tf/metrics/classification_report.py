"""Per-class precision, recall and F1, and the confusion matrix."""

import numpy as np


def classification_report(labels, predictions, class_names):
    """Scores of a classifier on one split.

    Args:
        labels: int array `(n,)` of true classes.
        predictions: int array `(n,)` of predicted classes.
        class_names: list of class names.

    Returns:
        A JSON-ready dict: `accuracy`, `macro_f1`, `per_class` (for every
        class its `precision`, `recall`, `f1` and `support`) and
        `confusion_matrix` (rows: true class, columns: predicted class).

    Raises:
        ValueError: if `labels` and `predictions` differ in shape, or hold a
            class outside `[0, len(class_names))`.
    """
    num_classes = len(class_names)
    confusion = _confusion_matrix(labels, predictions, num_classes)
    true_positive = np.diag(confusion).astype("float64")
    predicted = confusion.sum(axis=0)
    support = confusion.sum(axis=1)
    precision = np.divide(true_positive, predicted, out=np.zeros(num_classes), where=predicted > 0)
    recall = np.divide(true_positive, support, out=np.zeros(num_classes), where=support > 0)
    total = precision + recall
    f1 = np.divide(2 * precision * recall, total, out=np.zeros(num_classes), where=total > 0)
    per_class = {
        name: {
            "precision": float(precision[i]),
            "recall": float(recall[i]),
            "f1": float(f1[i]),
            "support": int(support[i]),
        }
        for i, name in enumerate(class_names)
    }
    count = int(confusion.sum())
    return {
        "accuracy": float(true_positive.sum() / count) if count else None,
        "macro_f1": float(f1.mean()),
        "per_class": per_class,
        "confusion_matrix": confusion.tolist(),
    }


def _confusion_matrix(labels, predictions, num_classes):
    """The int64 `(num_classes, num_classes)` counts of (true, predicted) pairs."""
    labels = np.asarray(labels, dtype="int64").reshape(-1)
    predictions = np.asarray(predictions, dtype="int64").reshape(-1)
    if labels.shape != predictions.shape:
        raise ValueError(f"labels and predictions differ in length: {labels.size} and {predictions.size}.")
    for name, values in (("labels", labels), ("predictions", predictions)):
        if values.size and (values.min() < 0 or values.max() >= num_classes):
            raise ValueError(f"{name} must be classes in [0, {num_classes}), got {values.min()} to {values.max()}.")
    pairs = np.bincount(labels * num_classes + predictions, minlength=num_classes * num_classes)
    return pairs.reshape(num_classes, num_classes).astype("int64")
