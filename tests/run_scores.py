"""Scores of a saved run recomputed from its files, for tests to compare with
what the command reported."""

import numpy as np

from ganet_tf.data.vectorizer import vectorize
from ganet_tf.models import build_explainer
from ganet_tf.policy.trained_run import load_run


def rescore_run(run_dir, texts, labels):
    """`(accuracy, density)` of the run in `run_dir` on `texts`, `labels`.

    The density (open gates over real tokens, averaged over texts) is None
    for a model without gates.
    """
    model, vectorizer, _ = load_run(run_dir)
    ids = vectorize(vectorizer, list(texts))
    outputs = build_explainer(model).predict(ids, verbose=0)
    accuracy = float(np.mean(np.argmax(outputs["probabilities"], axis=-1) == np.asarray(labels)))
    if "gates" not in outputs:
        return accuracy, None
    real = ids != 0
    open_gates = np.sum((outputs["gates"] > 0.5) & real, axis=-1)
    return accuracy, float(np.mean(open_gates / np.sum(real, axis=-1)))
