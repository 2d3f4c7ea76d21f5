"""The benchmark harness: threads, the machine line, the alternating-order timer, FLOPs counts.

Nothing here imports TensorFlow or JAX until asked (the GPU check runs without TensorFlow).
"""

import argparse
import contextlib
import json
import os
import time

from experiments.provenance import command
from experiments.provenance import processor

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results")


def grid_parser(doc, name, runs, lengths=(256, 1024, 4096), densities=(0.1, 0.2, 0.5)):
    """A grid benchmark's parser: `--lengths`, `--densities`, `--batches`, `--runs`, `--out` (default `results/NAME`);
    fixed: 2 intra-op threads (inter-op 1), 2 warm-up runs, encoder hidden 256, 4 heads, feedforward 1024."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=list(lengths))
    parser.add_argument("--densities", type=float, nargs="+", default=list(densities))
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--runs", type=int, default=runs)
    parser.add_argument("--out", default=os.path.join(RESULTS, name))
    parser.set_defaults(threads=2, warmup=2, hidden=256, heads=4, intermediate=1024)
    return parser


def set_threads(threads):
    """TensorFlow's intra-op threads to `threads`, inter-op to 1."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)


def machine_line(threads, xla=False):
    """A TensorFlow benchmark's machine: CPU, cores, load average, TensorFlow, threads, graph mode or XLA."""
    import tensorflow as tf

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{processor()}, {os.cpu_count()} CPU cores (load average {load} when written), no GPU; "
        f"TensorFlow {tf.__version__}, {threads} intra-op / 1 inter-op threads, {'XLA' if xla else 'graph mode'}"
    )


def alternating(calls, warmup, runs, block=None, first=False):
    """Seconds of each of `calls` (functions of no argument) per round: `warmup` untimed calls each, then `runs`
    rounds of the calls in turn, the order reversed every other round, so that drift reaches them alike.
    `block(result)` waits for a result (default `numpy.asarray`). One list per call; with `first`, also the
    seconds of each call's first call (tracing or compiling), timed alone."""
    if block is None:
        import numpy as np

        block = np.asarray
    firsts = []
    for call in calls:
        started = time.perf_counter()
        if first:
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


def ratio(quartiles):
    """`median x [low, high]` of the `quartiles` of per-round ratios."""
    return f"{quartiles[1]:.3f}x [{quartiles[0]:.3f}, {quartiles[2]:.3f}]"


def median_ms(calls, warmup, runs):
    """`(median milliseconds, [milliseconds of each run])` of each call, by `alternating`."""
    import numpy as np

    return [(1e3 * float(np.median(t)), [round(1e3 * s, 3) for s in t]) for t in alternating(calls, warmup, runs)]


def attention_flops(batch, queries, keys, projected_keys, hidden):
    """Multiply-adds x 2 of attention: Q and output projections of `queries` rows, K and V of `projected_keys`
    rows, scores and weighted sum over queries x keys."""
    return 4 * batch * hidden * ((queries + projected_keys) * hidden + queries * keys)


def encoder_flops(batch, tokens, hidden, intermediate, blocks=2):
    """FLOPs of `blocks` encoder blocks on `tokens` tokens: attention and feedforward (softmax, norms left out)."""
    return blocks * (
        attention_flops(batch, tokens, tokens, tokens, hidden) + 4 * batch * tokens * hidden * intermediate
    )


def linear_encoder_flops(batch, tokens, hidden, intermediate, heads, blocks=2):
    """FLOPs of `blocks` linear-attention encoder blocks (`LinearAttention`) on `tokens` tokens: the four
    projections, the key-value and output products (`tokens x hidden x hidden / heads` each) and the feedforward."""
    attention = 4 * batch * tokens * hidden * (2 * hidden + hidden // heads)
    return blocks * (attention + 4 * batch * tokens * hidden * intermediate)


def bucket_k(open_count, steps, buckets):
    """The bucket size a sparse path runs `open_count` open tokens of `steps` in: the smallest one that holds them."""
    from ganet_tf.layers.sparse_gather import bucket_sizes

    return next(size for size in bucket_sizes(buckets, steps)[0] if size >= open_count)


def random_gates(rng, batch, length, density):
    """Binary gates `(batch, length)`, float32: round(density * length) open per row at random positions."""
    import numpy as np

    gates = np.zeros([batch, length], "float32")
    for row in gates:
        row[rng.choice(length, round(density * length), replace=False)] = 1.0
    return gates


def resumed(args, script, keys):
    """`(path, cells, command)` of a resumable benchmark `experiments/SCRIPT`, its threads set: its `bench.json` in
    `args.out`, the cells stored there (none where it is missing) by the tuple of their `keys`, this command."""
    set_threads(args.threads)
    path = os.path.join(args.out, "bench.json")
    cells = {}
    if os.path.exists(path):
        with open(path) as handle:
            cells = {tuple(cell[key] for key in keys): cell for cell in json.load(handle)["cells"]}
    return path, cells, command(script)


@contextlib.contextmanager
def figure(path, rows=1, columns=1, dpi=100, **options):
    """The axes (`rows` x `columns`, lists in a list) of a matplotlib figure, laid out and saved to `path` at exit."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    made, axes = pyplot.subplots(rows, columns, squeeze=False, **options)
    yield axes
    made.tight_layout()
    made.savefig(path, dpi=dpi)
    pyplot.close(made)
