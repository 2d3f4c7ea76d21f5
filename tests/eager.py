"""Keras's steps run eagerly, for the tests that train a few batches."""

import contextlib
import warnings


@contextlib.contextmanager
def functions_run_eagerly():
    """Runs `tf.function`s eagerly inside the block: Keras's train, test and
    predict steps then skip tracing, which on the tests' tiny models costs
    far more than the steps (a BiLSTM GA-Net's `fit` of two batches: 33 s
    traced, 5 s eager; `train` on 40 lines of a file: 24-33 s against 8 s;
    one epoch of TREC limited to 120: 32 s against 18 s). Only for one
    epoch of a few batches (three epochs of TREC limited to 96 ran slower
    eagerly, 46 s against 33 s; so did seq2seq runs on the copy task's default
    sentences of 10-100 symbols, which decode step by step; on 2-6 symbols a
    tiny seq2seq run takes half the time eagerly), and
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
