"""Per-class precision, recall and F1, and the confusion matrix."""

import numpy as np
import tensorflow as tf


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
    """
    num_classes = len(class_names)
    confusion = tf.math.confusion_matrix(labels, predictions, num_classes=num_classes).numpy().astype("int64")
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
