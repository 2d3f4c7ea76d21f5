"""Keras's steps run eagerly, for the tests that train a few batches."""

import contextlib
import warnings


@contextlib.contextmanager
def functions_run_eagerly():
    """Runs `tf.function`s eagerly inside the block: Keras's train, test and
    predict steps then skip tracing, which on the tests' tiny models costs
    far more than the steps (a BiLSTM GA-Net's `fit` of two batches: 33 s
    traced, 5 s eager; a tiny `train` run of 3 batches: 24-33 s traced, 8 s
    eager). Only for a few steps (hundreds of steps run slower eagerly), and
    for what a model computes and a command writes, not for how it compiles:
    tests of graphs, XLA and SavedModel signatures keep tracing, and each
    command keeps a traced end-to-end test."""
    import tensorflow as tf

    tf.config.run_functions_eagerly(True)
    try:
        with warnings.catch_warnings():
            # tf.data's own functions stay traced, as the warning says.
            warnings.filterwarnings("ignore", "Even though the `tf.config.experimental_run_functions_eagerly`")
            yield
    finally:
        tf.config.run_functions_eagerly(False)
