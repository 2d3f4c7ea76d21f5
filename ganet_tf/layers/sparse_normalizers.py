"""Sparse alternatives to softmax: sparsemax and 1.5-entmax, with masks.

Both map scores to a probability vector that can hold exact zeros, with a
support that adapts to each row. Both are computed exactly by sorting: the
sort finds the support and its threshold `tau`, and the weights are then
recomputed from the support in the original order, so gradients flow
through plain arithmetic (not through the sort) and equal the analytic
Jacobians of the papers. Scores are normalised in float32 whatever their
dtype. Positions where `mask` is False get weight exactly 0 and never enter
the threshold; a row with one allowed position gives it weight 1; a row with
none gives all zeros.
"""

from keras import ops

NORMALIZERS = ("sparsemax", "entmax15")


def _prepare(scores, mask, axis):
    """float32 scores moved to the last axis, shifted so that the largest
    allowed one is 0, the boolean mask, and the permutation back."""
    scores = ops.cast(scores, "float32")
    if mask is None:
        allowed = ops.ones(ops.shape(scores), dtype="bool")
    else:
        allowed = ops.broadcast_to(ops.cast(mask, "bool"), ops.shape(scores))
    rank = len(scores.shape)
    axis = axis % rank
    if axis != rank - 1:
        scores = ops.moveaxis(scores, axis, -1)
        allowed = ops.moveaxis(allowed, axis, -1)
    # Both normalisers are shift invariant; the shift (no gradient) keeps
    # the running sums of the sort in a small float32 range.
    top = ops.max(ops.where(allowed, scores, float("-inf")), axis=-1, keepdims=True)
    top = ops.stop_gradient(ops.where(ops.isfinite(top), top, 0.0))
    scores = ops.where(allowed, scores - top, 0.0)
    return scores, allowed, axis, rank


def _sorted_prefixes(scores, allowed):
    """Scores sorted in decreasing order (disallowed ones last), the ranks
    `k = 1..n` as float32, and which ranks hold allowed scores. No gradient
    flows through them."""
    scores = ops.stop_gradient(scores)
    lowered = ops.where(allowed, scores, float("-inf"))
    ordered = -ops.sort(-lowered, axis=-1)
    count = ops.sum(ops.cast(allowed, "float32"), axis=-1, keepdims=True)
    steps = ops.shape(scores)[-1]
    ranks = ops.cast(ops.arange(1, steps + 1), "float32")
    within = ranks <= count
    # Ranks past the allowed ones hold -inf: make them 0 so sums stay finite.
    ordered = ops.where(within, ordered, 0.0)
    return ordered, ranks, within


def _support(scores, allowed, ordered, ranks, condition):
    """The positions (in the original order) of the largest `k*` allowed
    scores, `k*` the largest rank where `condition` holds."""
    k_star = ops.max(ops.where(condition, ranks, 0.0), axis=-1, keepdims=True)
    index = ops.cast(ops.maximum(k_star, 1.0) - 1.0, "int32")
    kth = ops.take_along_axis(ordered, index, axis=-1)
    # Ties with the k*-th score are in or out together (both conditions
    # hold for all equal scores or for none), so `>=` finds exactly them.
    return ops.logical_and(allowed, ops.logical_and(scores >= kth, k_star > 0.0))


def _finish(weights, allowed, axis, rank):
    weights = ops.where(allowed, weights, 0.0)
    if axis != rank - 1:
        weights = ops.moveaxis(weights, -1, axis)
    return weights


def sparsemax(scores, mask=None, axis=-1):
    """Sparsemax: the Euclidean projection of `scores` onto the simplex.

    `sparsemax(z)_i = max(z_i - tau, 0)`, with `tau` such that the weights
    sum to 1. With `z` sorted in decreasing order, the support is the
    largest `k` with `1 + k z_(k) > sum_{j<=k} z_(j)`, and
    `tau = (sum_{j<=k} z_(j) - 1) / k`.

    Args:
        scores: float tensor of scores.
        mask: optional boolean tensor broadcastable to `scores`, True where
            a position may get weight.
        axis: the axis to normalise over. Defaults to -1.

    Returns:
        float32 weights of the shape of `scores`: non-negative, summing to 1
        over `axis` in every row with an allowed position, exactly 0 at
        disallowed positions and outside the support.

    Example:

    >>> keras.ops.convert_to_numpy(sparsemax(np.array([[2.0, 1.0, -1.0]])))
    array([[1., 0., 0.]], dtype=float32)

    References:
        - [Martins & Astudillo, 2016](https://arxiv.org/abs/1602.02068),
          From Softmax to Sparsemax: A Sparse Model of Attention and
          Multi-Label Classification.
    """
    scores, allowed, axis, rank = _prepare(scores, mask, axis)
    ordered, ranks, within = _sorted_prefixes(scores, allowed)
    condition = ops.logical_and(within, 1.0 + ranks * ordered > ops.cumsum(ordered, axis=-1))
    support = _support(scores, allowed, ordered, ranks, condition)
    # tau from the support in the original order: a function of the scores
    # that autodiff differentiates (the sort above carries no gradient).
    size = ops.maximum(ops.sum(ops.cast(support, "float32"), axis=-1, keepdims=True), 1.0)
    tau = (ops.sum(ops.where(support, scores, 0.0), axis=-1, keepdims=True) - 1.0) / size
    weights = ops.where(support, ops.maximum(scores - tau, 0.0), 0.0)
    return _finish(weights, allowed, axis, rank)


def entmax15(scores, mask=None, axis=-1):
    """1.5-entmax: the alpha-entmax mapping with alpha = 1.5.

    `entmax15(z)_i = max(z_i / 2 - tau, 0) ** 2`, with `tau` such that the
    weights sum to 1. With `u = z / 2` sorted in decreasing order, the
    candidate threshold of the top `k` is
    `tau_k = mean_k - sqrt(max((1 - ss_k) / k, 0))`, where `mean_k` is the
    mean of `u_(1..k)` and `ss_k` the sum of their squared deviations from
    it; the support is the largest `k` with `tau_k <= u_(k)`, and `tau` is
    its `tau_k` (Peters et al., 2019, Algorithm 2).

    Args:
        scores, mask, axis: as for `sparsemax`.

    Returns:
        float32 weights of the shape of `scores`, as `sparsemax`'s.

    Example:

    >>> keras.ops.convert_to_numpy(entmax15(np.array([[2.0, 1.0, -1.0]]))).round(4)
    array([[0.8307, 0.1693, 0.    ]], dtype=float32)

    References:
        - [Peters, Niculae & Martins, 2019](https://arxiv.org/abs/1905.05702),
          Sparse Sequence-to-Sequence Models.
    """
    scores, allowed, axis, rank = _prepare(scores, mask, axis)
    halves = scores / 2.0
    ordered, ranks, within = _sorted_prefixes(halves, allowed)
    mean = ops.cumsum(ordered, axis=-1) / ranks
    squares = ops.cumsum(ordered * ordered, axis=-1) / ranks
    spread = ranks * (squares - mean * mean)
    taus = mean - ops.sqrt(ops.maximum((1.0 - spread) / ranks, 0.0))
    condition = ops.logical_and(within, taus <= ordered)
    support = _support(halves, allowed, ordered, ranks, condition)
    # tau again, from the support in the original order (differentiable).
    size = ops.maximum(ops.sum(ops.cast(support, "float32"), axis=-1, keepdims=True), 1.0)
    kept = ops.where(support, halves, 0.0)
    mean = ops.sum(kept, axis=-1, keepdims=True) / size
    deviations = ops.where(support, halves - mean, 0.0)
    spread = ops.sum(deviations * deviations, axis=-1, keepdims=True)
    # On the support (1 - spread) / size > 0; the floor only guards the
    # gradient of rows without an allowed position.
    tau = mean - ops.sqrt(ops.maximum((1.0 - spread) / size, 1e-12))
    weights = ops.where(support, ops.square(ops.maximum(halves - tau, 0.0)), 0.0)
    return _finish(weights, allowed, axis, rank)


def sparse_normalizer(name):
    """The function of the normaliser `name`, one of `NORMALIZERS`."""
    if name == "sparsemax":
        return sparsemax
    if name == "entmax15":
        return entmax15
    raise ValueError(f"`normalizer` must be one of {NORMALIZERS}. Received: normalizer={name}")
