"""The benchmark harness: threads, the machine line, the alternating-order timer.

Every benchmark times its functions with `alternating` (in turn within each
round, the order reversed every other round, so that drift in the machine's
speed reaches them alike), pins TensorFlow's threads with `set_threads`
and writes `machine_line` beside its numbers. Nothing here imports
TensorFlow or JAX until asked (the device check runs without TensorFlow).
"""

import os
import platform
import time


def encoder_flags(parser):
    """The flags of the encoder benchmarks: `--warmup`, the encoder's
    `--hidden`, `--heads`, `--intermediate`, `--threads`, `--xla`."""
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--intermediate", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads (inter-op: 1)")
    parser.add_argument("--xla", action="store_true", help="compile with jit_compile=True")


def set_threads(threads):
    """TensorFlow's intra-op threads to `threads`, inter-op to 1."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)


def processor():
    """The CPU's model name (`/proc/cpuinfo`), else what `platform` knows."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(system=True, gpus=0, software=False):
    """This machine in words: architecture, CPU cores, the OS (`system`), the
    GPUs (`gpus`: a count, 0 for 'no GPU', None to say nothing) and, with
    `software`, the versions of Python, TensorFlow and Keras. The summaries
    record `machine()`; benchmarks write `machine_line` instead."""
    parts = [platform.machine(), f"{os.cpu_count()} CPU cores", *([platform.system()] if system else [])]
    parts += [] if gpus is None else [f"GPU: {gpus}" if gpus else "no GPU"]
    if software:
        import keras
        import tensorflow as tf

        parts += [f"Python {platform.python_version()}", f"TensorFlow {tf.__version__}", f"Keras {keras.__version__}"]
    return ", ".join(parts)


def machine_line(threads, xla=False):
    """The machine a TensorFlow benchmark ran on, in one line: CPU, cores,
    load average when written, TensorFlow's version, threads, graph mode or XLA."""
    import tensorflow as tf

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{processor()}, {os.cpu_count()} CPU cores (load average {load} when written), no GPU; "
        f"TensorFlow {tf.__version__}, "
        f"{threads} intra-op / 1 inter-op threads, {'XLA' if xla else 'graph mode'}"
    )


def alternating(calls, warmup, runs, block=None, first=False):
    """Seconds of each call of `calls` (functions of no argument) in every
    run: `warmup` untimed calls each (after the first, timed alone, with
    `first`), then `runs` rounds, the calls in turn,
    the order reversed every other round. `block(result)` waits for the
    result (default: `numpy.asarray`, which fetches it to the host).
    Returns one list of seconds per call; with `first`, also the seconds of
    each call's first call (tracing or compiling), timed alone."""
    if block is None:
        import numpy as np

        block = np.asarray
    firsts = []
    for call in calls:
        if first:
            started = time.perf_counter()
            block(call())
            firsts.append(time.perf_counter() - started)
        for _ in range(warmup):
            block(call())
    times = [[] for _ in calls]
    for run in range(runs):
        for index in range(len(calls)) if run % 2 == 0 else reversed(range(len(calls))):
            started = time.perf_counter()
            block(calls[index]())
            times[index].append(time.perf_counter() - started)
    return (times, firsts) if first else times


def quartiles(values):
    """The 25, 50 and 75 % quantiles of `values` (the spread of round ratios)."""
    import numpy as np

    return [float(q) for q in np.percentile(values, [25, 50, 75])]


def median_ms(calls, warmup, runs):
    """`(median milliseconds, [milliseconds of each run])` of each call, by `alternating`."""
    import numpy as np

    return [(1e3 * float(np.median(t)), [round(1e3 * s, 3) for s in t]) for t in alternating(calls, warmup, runs)]
