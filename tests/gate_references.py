"""NumPy references of the adaptive test-gate rules of `GateSampler`."""

import numpy as np


def log_sigmoid(x):
    return -np.logaddexp(0.0, -np.asarray(x, "float64"))


def relative_reference(logits, mask, ratio):
    """NumPy: open the real t with p_t >= ratio * max_s p_s of its row."""
    log_p = np.where(mask, log_sigmoid(logits), -np.inf)
    best = log_p.max(axis=1, keepdims=True)
    return mask & (log_p >= best + np.log(ratio))


def nucleus_open(p, mass):
    """NumPy, one text: which of its tokens, of gate probabilities `p`, the
    nucleus rule opens: the fewest of highest p (ties to the earlier) whose
    p / sum(p) reaches `mass`."""
    p = np.asarray(p, "float64")
    order = np.argsort(-p, kind="stable")
    before = np.concatenate([[0.0], np.cumsum(p[order] / p.sum())[:-1]])
    opened = np.zeros(len(p), bool)
    opened[order[before < mass]] = True
    return opened


def nucleus_reference(logits, mask, mass):
    """NumPy: `nucleus_open` on the real tokens of each row of `logits`."""
    opened = np.zeros(mask.shape, bool)
    for row in range(len(mask)):
        real = np.flatnonzero(mask[row])
        if len(real):
            opened[row, real] = nucleus_open(np.exp(log_sigmoid(logits[row, real])), mass)
    return opened
