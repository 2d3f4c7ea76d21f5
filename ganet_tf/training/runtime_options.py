"""`train --tensorboard`, `--mixed-precision` and `--jit-compile`."""

import contextlib

import keras


@contextlib.contextmanager
def precision_policy(mixed_precision):
    """Keras' `mixed_float16` policy for the layers built inside (float16
    compute, float32 variables; `compile` then wraps the optimizer in a
    `LossScaleOptimizer`); the previous global policy afterwards."""
    if not mixed_precision:
        yield
        return
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def tensorboard_callbacks(log_dir, write=True):
    """`[keras.callbacks.TensorBoard(log_dir)]`, or `[]`.

    Keras writes every epoch's logs as scalars (`epoch_loss`,
    `epoch_accuracy`, GA-Net's `epoch_density` and `epoch_attended_density`,
    with their validation values under `validation/`).
    """
    if not log_dir or not write:
        return []
    return [keras.callbacks.TensorBoard(log_dir=log_dir, update_freq="epoch")]
