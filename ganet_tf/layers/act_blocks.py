"""The dynamic blocks of `HierarchicalAttention`'s `"act"` summariser: where
a level's children close their blocks, from their halting values, in the
manner of Adaptive Computation Time (Graves, 2016)."""

import keras
from keras import ops


def _scan(step, initial, sequences):
    """The carries of `step(carry, x)` over the time-major `sequences`,
    stacked: `tf.scan` on TensorFlow (a loop of fixed length, which XLA
    compiles with its gradient; `keras.ops.scan`'s loop has none),
    `keras.ops.scan` elsewhere."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return tf.scan(step, sequences, initializer=initial)
    _, carries = ops.scan(lambda carry, x: (step(carry, x),) * 2, initial, sequences)
    return carries


def act_blocks(halting, real, threshold, largest=None):
    """Contiguous blocks of children, closed by their halting values.

    A block takes children until their halting values `z` sum to
    `threshold`; its last child gets the remainder `1 - sum(z of the
    others)`, and the last real child always closes a block, as does its
    `largest`-th child if set.

    Args:
        halting: float32 `(batch, children)`, the halting values `z` in
            [0, 1], 0 at padded children.
        real: float32 `(batch, children)`, 1.0 at the real children (padding
            at the end of each row).
        threshold: float, the sum of `z` that closes a block.
        largest: None or int, the most children of a block.

    Returns:
        `(weights, parent_index, blocks)`: each child's weight in its block
        `(batch, children)` (0 at padded children), the index of its block
        `(batch, children)` int32, and the number of blocks of each row
        `(batch,)` int32.
    """
    next_real = ops.pad(real[:, 1:], [[0, 0], [0, 1]])
    is_last = real * (1.0 - next_real)

    def step(carry, inputs):
        accumulated, size, block, _, _ = carry
        z, real_t, last_t = inputs
        close = ops.maximum(ops.cast(accumulated + z >= threshold, "float32"), last_t)
        if largest is not None:  # the block's `largest`-th child closes it
            close = ops.maximum(close, ops.cast(size + 1.0 >= largest, "float32"))
        halt = real_t * close
        weight = real_t * ops.where(halt > 0, 1.0 - accumulated, z)
        parent = block
        accumulated = ops.where(halt > 0, 0.0, accumulated + real_t * z)
        size = ops.where(halt > 0, 0.0, size + real_t)
        block = block + ops.cast(halt, "int32")
        return accumulated, size, block, weight, parent

    batch = ops.shape(halting)[0]
    initial = (
        ops.zeros((batch,), "float32"),
        ops.zeros((batch,), "float32"),
        ops.zeros((batch,), "int32"),
        ops.zeros((batch,), "float32"),
        ops.zeros((batch,), "int32"),
    )
    transposed = [ops.transpose(x) for x in (halting, real, is_last)]
    outputs = _scan(step, initial, tuple(transposed))
    # The block counter after the last child: the row's number of blocks.
    return ops.transpose(outputs[3]), ops.transpose(outputs[4]), outputs[2][-1]
