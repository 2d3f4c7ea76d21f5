"""Helpers of the sparse inference paths: the open positions of a row are
gathered to the front and the work runs on `k` of them, with `k` rounded up
to one of a few static bucket sizes so a graph is traced once."""

import math

import keras
from keras import ops

from ganet_tf.layers.argument_checks import is_real

# Key counts the sparse path rounds up to: fractions of the key length on a
# ladder of ratio 2^(1/4) from 1/32 to 1 (21 sizes, at most 19 % padding).
DEFAULT_SPARSE_BUCKETS = tuple(round(2.0 ** (-i / 4.0), 6) for i in range(20, -1, -1))
# A coarser ladder (ratio 2^(1/2), 11 sizes, at most 41 % padding) for
# models with several blocks: every size is one branch per block, which XLA
# compiles (and a graph traces) ahead of time.
COARSE_SPARSE_BUCKETS = tuple(round(2.0 ** (-i / 2.0), 6) for i in range(10, -1, -1))
# The fewest slots attention runs on: a softmax over one key is always 1
# (Keras' `Softmax` warns), so a row with one open token gets a masked
# second slot.
ATTENTION_SLOTS = 2


def normalize_buckets(sparse_buckets):
    """Sorted bucket fractions in (0, 1] ending with 1, or None."""
    if sparse_buckets is None:
        return None
    try:
        buckets = sorted({float(f) for f in sparse_buckets})
    except (TypeError, ValueError):
        buckets = None
    if not buckets or buckets[0] <= 0 or buckets[-1] > 1:
        raise ValueError(
            "`sparse_buckets` must be None or a non-empty sequence of "
            f"fractions in (0, 1]. Received: sparse_buckets={sparse_buckets}"
        )
    if buckets[-1] != 1.0:
        buckets.append(1.0)
    return buckets


def check_bucket_multiple(sparse_bucket_multiple):
    """The validated `sparse_bucket_multiple` of a layer: a positive int."""
    if (
        isinstance(sparse_bucket_multiple, bool)
        or not isinstance(sparse_bucket_multiple, int)
        or (sparse_bucket_multiple < 1)
    ):
        raise ValueError(
            "`sparse_bucket_multiple` must be a positive integer (64 for the fused GPU attention kernels). "
            f"Received: sparse_bucket_multiple={sparse_bucket_multiple!r}"
        )
    return sparse_bucket_multiple


def bucket_sizes(fractions, steps, multiple=1, smallest=1):
    """The sizes `ceil(f * steps)` of the buckets, each at least `smallest`,
    rounded up to a multiple of `multiple` and at most `steps`, as a list
    (Python ints when `steps` is static, scalar tensors otherwise) and an
    int32 tensor."""
    if isinstance(steps, int):
        sizes = {max(smallest, math.ceil(f * steps - 1e-9)) for f in fractions}
        sizes = sorted({min(steps, multiple * math.ceil(size / multiple)) for size in sizes})
        return sizes, ops.convert_to_tensor(sizes, "int32")
    size_tensor = ops.convert_to_tensor(fractions, "float32") * ops.cast(steps, "float32")
    size_tensor = ops.maximum(ops.cast(ops.ceil(size_tensor - 1e-6), "int32"), smallest)
    if multiple > 1 or smallest > 1:
        size_tensor = ops.minimum((size_tensor + multiple - 1) // multiple * multiple, ops.cast(steps, "int32"))
    return [size_tensor[i] for i in range(len(fractions))], size_tensor


def static_steps(tensor):
    """Axis 1 of `tensor`: a Python int when static, else a scalar tensor."""
    return tensor.shape[1] if tensor.shape[1] is not None else ops.shape(tensor)[1]


def gather_open(open_float, k):
    """`(slot_open, positions)`, both `(batch, k)`: the positions of the open
    entries of `open_float` `(batch, steps)` (1.0 open, 0.0 closed) first, in
    order, then closed ones, and whether each slot holds an open position.

    The scores that `top_k` ranks, `open - index / (steps + 1)`, are all
    distinct (PyTorch's `topk` does not keep equal values in index order,
    as TensorFlow's and JAX's do): open entries score in (0, 1], closed
    ones in (-1, 0].
    """
    steps = ops.shape(open_float)[1]
    index = ops.cast(ops.arange(steps), "float32")
    scores = open_float - index / (ops.cast(steps, "float32") + 1.0)
    slot_scores, positions = ops.top_k(scores, k, sorted=True)
    return ops.greater(slot_scores, 0.0), positions


def gather_rows(x, positions):
    """`x[b, positions[b, ...]]`: the rows `positions` `(batch, k, ...)` of
    `x` `(batch, steps, ...)`, as `(batch, k, ..., ...)` (`tf.gather` with
    `batch_dims=1`).

    One gather of rows from the flattened batch, not
    `keras.ops.take_along_axis(x, positions[..., None], axis=1)`, which on
    TensorFlow broadcasts the indices over the trailing axes and transposes
    `x` in full.
    """
    shape = ops.shape(x)
    offsets = ops.arange(shape[0], dtype=positions.dtype) * ops.cast(shape[1], positions.dtype)
    offsets = ops.reshape(offsets, (-1,) + (1,) * (len(positions.shape) - 1))
    flat = ops.reshape(x, (-1, *shape[2:]))
    return ops.take(flat, positions + offsets, axis=0)


def run_bucketed(branch, needed, steps, buckets, multiple=1, smallest=1):
    """`branch(k)` for `k` the scalar tensor `needed` rounded up to the next
    bucket size (fractions `buckets` of `steps`, at least `smallest`,
    rounded up to a multiple of `multiple`), one `keras.ops.switch` branch
    per size; with `buckets=None`, `k = max(needed, smallest)` exactly
    (dynamic shapes), at most `steps`."""
    if buckets is None:
        check_static_buckets(buckets, sparse=True)
        return branch(ops.minimum(ops.maximum(needed, smallest), steps))
    sizes, size_tensor = bucket_sizes(buckets, steps, multiple, smallest)
    index = ops.sum(ops.cast(ops.less(size_tensor, needed), "int32"))
    return ops.switch(index, [lambda k=k: branch(k) for k in sizes])


def branch_dropout_seed(dropout_layer, rate, training):
    """The seed of `dropout_layer`'s next mask, for a call inside a
    `keras.ops.switch` branch: drawn here, outside the branch, under JAX
    while training with dropout (a seed drawn inside a branch leaks out of
    its trace, keras-team/keras#20724); else None (the layer draws its own)."""
    if rate > 0 and training is True and keras.backend.backend() == "jax":
        return dropout_layer.seed_generator.next()
    return None


def dynamic_shapes():
    """Whether the backend runs tensors whose shapes depend on the data
    (TensorFlow, also in a graph; PyTorch): JAX traces static shapes only."""
    return keras.backend.backend() != "jax"


def check_dynamic_shapes(option, remedy):
    """Raises `ValueError` when `option` needs shapes that depend on the
    data and the backend has none."""
    if not dynamic_shapes():
        raise ValueError(
            f"{option} needs shapes that depend on the data, which the {keras.backend.backend()} backend "
            f"cannot trace: use the TensorFlow backend, or {remedy}."
        )


def check_static_buckets(sparse_buckets, sparse):
    """Raises `ValueError` when a layer is made with `sparse_buckets=None`
    (shapes that depend on the data) for a `sparse` path on a backend that
    has no such shapes: at construction, not at the first call."""
    if sparse_buckets is None and sparse:
        check_dynamic_shapes("`sparse_buckets=None`", "pass `sparse_buckets` fractions (the default ladder)")


def open_slots(open_):
    """`(open_float, needed, slot)` of a boolean `open_` `(batch, steps)`:
    it as float32, the largest open count of a row (int32 scalar) and each
    position's slot in its row's gathered sequence (its rank among the open
    positions; 0 before the first)."""
    open_float = ops.cast(open_, "float32")
    needed = ops.cast(ops.max(ops.sum(open_float, axis=1)), "int32")
    slot = ops.maximum(ops.cumsum(ops.cast(open_, "int32"), axis=1) - 1, 0)
    return open_float, needed, slot


def scatter_back(gathered, slot, open_, k, fill):
    """`gathered` `(batch, k, ...)` back at full length `(batch, steps,
    ...)`: each open position takes its slot's entry, the others `fill`
    (broadcastable)."""
    where = open_
    for _ in range(len(gathered.shape) - 2):
        where = ops.expand_dims(where, -1)
    return ops.where(where, gather_rows(gathered, ops.minimum(slot, k - 1)), fill)


def gather_mask(mask, row_positions, column_positions):
    """An attention mask `(batch, rows, columns)` at the rows
    `row_positions` `(batch, q)` (every row when None) and the columns
    `column_positions` `(batch, k)`, as `(batch, q, k)`."""
    if row_positions is not None:
        mask = ops.take_along_axis(mask, ops.expand_dims(row_positions, -1), axis=1)
    shape = (ops.shape(column_positions)[0], ops.shape(mask)[1], ops.shape(column_positions)[1])
    return ops.take_along_axis(mask, ops.broadcast_to(ops.expand_dims(column_positions, 1), shape), axis=2)


def kept_count(density, steps):
    """`max(1, round(density * steps))` (halves up), at most `steps`: the
    tokens the `top_k` rule keeps of `steps` real ones (a Python int for an
    int `steps`)."""
    if isinstance(steps, int):
        return min(steps, max(1, math.floor(density * steps + 0.5 + 1e-4)))
    steps = ops.cast(steps, "float32")
    return ops.minimum(ops.maximum(ops.floor(density * steps + 0.5 + 1e-4), 1.0), steps)


def keep_top_k(gates, real, density):
    """The `top_k` rule of `GateSampler` on `gates` `(batch, steps)`: True
    at the `max(1, round(density * T))` real positions of highest gate in
    each row of `T` real ones (`real`, a boolean mask, or None for all),
    ties to the earlier position (on PyTorch, whose `topk` keeps no index
    order among equal values, to either)."""
    gates = ops.cast(gates, "float32")
    steps = static_steps(gates)
    if real is None:
        real = ops.ones(ops.shape(gates), "bool")
    real = ops.cast(real, "bool")
    lengths = ops.sum(ops.cast(real, "float32"), axis=1, keepdims=True)
    count = kept_count(density, lengths)
    if isinstance(steps, int):
        count = ops.minimum(count, float(kept_count(density, steps)))
    # Padding ranks below every real token; `top_k` orders equal values by
    # index (TensorFlow, JAX), and ranks are the inverse permutation of that
    # order.
    scores = ops.where(real, gates, -1.0)
    _, order = ops.top_k(scores, steps, sorted=True)
    ranks = ops.argsort(order, axis=1)
    return ops.logical_and(ops.less(ops.cast(ranks, "float32"), count), real)


def training_buckets(buckets, steps, density):
    """The bucket fractions of a training step of `steps` tokens that keeps
    a share `density` of them: those below the most a row keeps,
    `kept_count(density, steps)`, and that count itself, so a row of
    `steps` real tokens is computed without padding slots (`buckets` as
    they are when `steps` is not static, or None)."""
    if buckets is None or not isinstance(steps, int):
        return buckets
    most = kept_count(density, steps)
    return [f for f in buckets if math.ceil(f * steps - 1e-9) < most] + [most / steps]


def straight_through_ones(gates, floor):
    """Ones in the forward pass whose gradient is that of `log(max(gates,
    floor))`, `1 / max(gates, floor)` (0 below `floor`): `x / x` is
    exactly 1 in floating point."""
    floored = ops.maximum(ops.cast(gates, "float32"), floor)
    return floored / ops.stop_gradient(floored)


def check_sparse_training(sparse_training, training_density):
    """The validated `(sparse_training, training_density)` of a layer:
    a bool, and None or a share in (0, 1], required by `sparse_training`."""
    if not isinstance(sparse_training, bool):
        raise ValueError(f"`sparse_training` must be True or False. Received: sparse_training={sparse_training!r}")
    if training_density is not None:
        if not is_real(training_density) or not 0 < training_density <= 1:
            raise ValueError(
                "`training_density` must be None or a share of the tokens in (0, 1]. "
                f"Received: training_density={training_density!r}"
            )
        training_density = float(training_density)
    if sparse_training and training_density is None:
        raise ValueError(
            "`sparse_training=True` keeps round(rho T) tokens per row: give rho as `training_density`. "
            "Received: training_density=None"
        )
    return sparse_training, training_density


def set_sparse_options(
    layer,
    sparse_inference,
    sparse_buckets,
    sparse_training,
    training_density,
    sparse_bucket_multiple=None,
    token_dropping=False,
):
    """Checks the sparse-path arguments of a gated layer's constructor and
    sets them on `layer`: `sparse_inference` (a bool), `sparse_buckets`
    (`normalize_buckets`), `sparse_bucket_multiple` (unless None, for a
    layer that has none), `sparse_training` and `training_density`; then
    refuses `sparse_buckets=None` where a sparse path (one of those, or
    `token_dropping`) needs shapes that the backend cannot make."""
    layer.sparse_inference = bool(sparse_inference)
    layer.sparse_buckets = normalize_buckets(sparse_buckets)
    if sparse_bucket_multiple is not None:
        layer.sparse_bucket_multiple = check_bucket_multiple(sparse_bucket_multiple)
    layer.sparse_training, layer.training_density = check_sparse_training(sparse_training, training_density)
    check_static_buckets(layer.sparse_buckets, layer.sparse_inference or layer.sparse_training or token_dropping)
