"""Mask helpers shared by the attention and gate layers."""

import keras
from keras import ops


def large_negative_number(dtype):
    """A large negative score that is still finite in `dtype`."""
    if keras.backend.standardize_dtype(dtype) == "float16":
        return -3e4
    return -1e9


def masked_mean(values, mask=None):
    """Mean of `values` `(batch, steps)` over the real steps of each row.

    Rows without a real step give 0.
    """
    values = ops.cast(values, "float32")
    if mask is None:
        return ops.mean(values, axis=-1)
    weights = ops.cast(mask, "float32")
    total = ops.sum(values * weights, axis=-1)
    count = ops.sum(weights, axis=-1)
    return total / ops.maximum(count, 1.0)


def masked_softmax(scores, allowed):
    """Softmax of float32 `scores` over the last axis where `allowed` is True.

    Disallowed positions get weight 0; a row with nothing allowed gets all
    zeros (not NaN). Over an axis of static size 1 (a hierarchy's single top
    node) the softmax is 1 by definition, so it is not computed (Keras warns
    on a softmax over a size-1 axis).
    """
    if scores.shape[-1] == 1:
        weights = ops.ones_like(scores)
    else:
        negative = large_negative_number("float32")
        weights = ops.softmax(ops.where(allowed, scores, negative), axis=-1)
    return ops.where(allowed, weights, 0.0)
