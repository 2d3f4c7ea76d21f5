"""Batches of examples of similar length: less padding, the same examples.

One rule for every dataset of the package (`train`'s texts, `seq2seq`'s
sentence pairs): `tf.data`'s `bucket_by_sequence_length` over equal-count
length buckets, each batch padded only to its own longest example.
"""

import numpy as np
import tensorflow as tf


def length_boundaries(lengths, num_buckets):
    """Boundaries that split `lengths` into `num_buckets` equal-count buckets.

    A boundary `b` puts lengths `< b` in the buckets below it (the
    convention of `bucket_by_sequence_length`); repeated boundaries are
    merged, so fewer buckets come back when many lengths are equal.
    """
    lengths = np.asarray(lengths)
    quantiles = np.linspace(0, 100, num_buckets + 1)[1:-1]
    edges = np.unique(np.ceil(np.percentile(lengths, quantiles)).astype(int) + 1)
    return [int(edge) for edge in edges if edge > 1]


def batch_by_length(dataset, lengths, batch_size, num_buckets, length_func):
    """`dataset` batched in length buckets, with its number of batches stated.

    Args:
        dataset: unbatched `tf.data.Dataset`, already shuffled if wanted.
        lengths: the length of each example of `dataset`, in any order (an
            example's bucket depends on its length only).
        batch_size: examples per batch.
        num_buckets: number of equal-count length buckets.
        length_func: maps one element of `dataset` to its length (a scalar
            int32 tensor), the same length that `lengths` lists.

    Returns:
        The padded batches, prefetched. Every bucket gives full batches and
        at most one partial one, so the number of batches is the same every
        epoch: it is asserted, which lets Keras size the epoch (no "Your
        input ran out of data" warning after the first one) and
        `tf.distribute` split it.
    """
    boundaries = length_boundaries(lengths, num_buckets)
    dataset = dataset.bucket_by_sequence_length(
        element_length_func=length_func,
        bucket_boundaries=boundaries,
        bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
        pad_to_bucket_boundary=False,
    )
    per_bucket = np.bincount(np.searchsorted(boundaries, lengths, side="right"), minlength=len(boundaries) + 1)
    batches = int(np.sum(-(-per_bucket // batch_size)))
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(batches))
    return dataset.prefetch(tf.data.AUTOTUNE)
