"""Reductions within the groups of a hierarchy's children that share a
parent: the softmax among siblings and the winner of each group, for
`HierarchicalAttention`'s dense descent. A level's children `(b, c)` and
their parents `(b, p)` are given by the one-hot child-to-parent matrix
`parents` `(b, c, p)` (zero rows at padded children)."""

from keras import ops

from ganet_tf.layers.masking import large_negative_number
from ganet_tf.layers.sparse_gather import gather_rows


def sibling_groups(parents):
    """The segments of a level's children for `per_child`, from `parents`
    `(b, c, p)`: each child's parent `(b, c)`, its segment among the
    batch's `b * p` groups `(b * c,)`, and `b * p`. Computed once per level
    and step, read by every reduction over it."""
    batch, groups = ops.shape(parents)[0], ops.shape(parents)[2]
    parent_index = ops.cast(ops.argmax(parents, axis=-1), "int32")
    segments = parent_index + ops.expand_dims(ops.arange(batch, dtype="int32") * groups, -1)
    return parent_index, ops.reshape(segments, (-1,)), batch * groups


def per_child(values, groups, reduce):
    """`reduce` (`keras.ops.segment_max`, `_min` or `_sum`) of
    `values` `(b, q, c)` over each group of children that share a parent
    (`groups`, from `sibling_groups`), read back at every child `(b, q, c)`;
    the caller sets padded children's values to the reduction's identity.
    One segment reduction: O(b q c) memory, not O(b q c p)."""
    parent_index, segments, count = groups
    batch, children, queries = ops.shape(values)[0], ops.shape(values)[2], ops.shape(values)[1]
    data = ops.reshape(ops.transpose(values, (0, 2, 1)), (batch * children, queries))
    reduced = ops.reshape(reduce(data, segments, num_segments=count), (batch, -1, queries))
    return ops.transpose(gather_rows(reduced, parent_index), (0, 2, 1))


def group_softmax(scores, groups, mask):
    """Softmax of `scores` `(b, q, c)` within the groups of children that
    share a parent (`groups`, from `sibling_groups`); `mask` `(b, c)` the
    real children."""
    real = ops.expand_dims(ops.cast(mask, "float32"), 1)
    negative = large_negative_number("float32")
    # The shift is any constant per group: held out of the gradient.
    shift = ops.stop_gradient(per_child(ops.where(real > 0, scores, negative), groups, ops.segment_max))
    exponentials = ops.exp(ops.minimum(scores - shift, 0.0)) * real
    total = per_child(exponentials, groups, ops.segment_sum)
    # A group with a real child sums to >= 1 (exp(0) at its largest score);
    # one without sums to 0 and gets weights 0 (dividing by 1 keeps the
    # gradient finite where 1e-30 squared would underflow).
    return exponentials / ops.where(total > 0.0, total, 1.0)


def group_winners(weights, groups, mask):
    """1.0 at the child with the largest weight of each group (the first,
    on a tie), else 0; 0 at padded children (`mask` `(b, c)` the real ones)."""
    real = ops.expand_dims(ops.cast(mask, "bool"), 1)  # (b, 1, c)
    weights = ops.stop_gradient(weights)
    best = per_child(ops.where(real, weights, -1.0), groups, ops.segment_max)
    count = ops.shape(weights)[-1]
    position = ops.broadcast_to(ops.arange(count, dtype="int32"), ops.shape(weights))
    candidates = ops.where(ops.logical_and(real, weights >= best), position, count)
    first = per_child(candidates, groups, ops.segment_min)
    return ops.cast(ops.logical_and(real, ops.equal(position, first)), "float32")
