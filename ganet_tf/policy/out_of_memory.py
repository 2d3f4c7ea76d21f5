"""The one line of an out-of-memory error, for each command.

TensorFlow raises `ResourceExhaustedError` where a tensor is larger than
the memory left (an accelerator's, or the host's). `ganet_tf.cli.main`
stops the command with one line naming what to lower: only flags that the
command accepts (`tests/policy/test_out_of_memory.py` checks each line
against the command's parser).
"""

PREFIX = "out of memory: "
_AT_THIS_BATCH = "the model's tensors at this batch do not fit; "
_ON_THE_CPU = "or run it on the CPU (CUDA_VISIBLE_DEVICES= python -m ganet_tf ...)"

# What each command of `python -m ganet_tf` can lower.
LINES = {
    "train": _AT_THIS_BATCH + "lower --batch-size (with --gradient-accumulation-steps N to keep the update's size), "
    "--validation-batch-size or --sequence-length.",
    "prepare": "the texts' token ids do not fit; lower --sequence-length (or --length-percentile) or --limit.",
    "explain": "the model's tensors do not fit in the memory left; free the accelerator's memory " + _ON_THE_CPU + ".",
    "export": "the model's tensors do not fit in the memory left while it is traced and checked on the warmup "
    "texts; give --warmup-texts fewer or shorter texts, free the accelerator's memory " + _ON_THE_CPU + ".",
    "seq2seq": _AT_THIS_BATCH + "lower --batch-size (the training and the decoding batches) or --beam-size.",
    "predict": _AT_THIS_BATCH + "lower --batch-size (the lines run at once).",
    "evaluate": _AT_THIS_BATCH + "lower --batch-size (the texts run at once).",
    "translate": _AT_THIS_BATCH + "lower --batch-size (the lines run at once).",
    "tune": "a trial's tensors at its batch do not fit; give the trials smaller batch sizes "
    "(--values batch_size=8,16 or --fix batch_size=8).",
}
# A command not in `LINES`: nothing to name.
_ANY = "the model's tensors do not fit in the memory left."


def is_out_of_memory(error):
    """Whether `error` is TensorFlow's `ResourceExhaustedError` (matched by
    name: checking it imports no TensorFlow)."""
    return any(kind.__name__ == "ResourceExhaustedError" for kind in type(error).__mro__)


def out_of_memory_line(command):
    """The error line of an out-of-memory error in `command` (e.g. `"predict"`)."""
    return PREFIX + LINES.get(command, _ANY)
