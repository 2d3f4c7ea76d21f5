"""What a summary records of where it was made: the repository, paths relative to it, the machine, the date and the
command line. A leaf: it imports nothing of `experiments`."""

import os
import platform
import re
import shlex
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ABSOLUTE = re.compile(r"(?<![\w.:/])" + re.escape(os.sep) + r"[^\s\"',;)`]+")


def portable(value):
    """`value` (strings, lists and dicts) with absolute paths made relative to the repository."""
    if isinstance(value, str):
        return _ABSOLUTE.sub(lambda match: os.path.relpath(match.group(0), REPO), value)
    if isinstance(value, list):
        return [portable(item) for item in value]
    if isinstance(value, dict):
        return {portable(key): portable(item) for key, item in value.items()}
    return value


def command(script):
    """This process's command line as summaries record it: `[nice -n N ]python -m experiments.SCRIPT ARGS`."""
    niceness = os.nice(0)
    prefix = f"nice -n {niceness} " if niceness else ""
    return portable(f"{prefix}python -m experiments.{script.removesuffix('.py')} " + shlex.join(sys.argv[1:]))


def processor():
    """The CPU's model name (`/proc/cpuinfo`), else what `platform` knows."""
    try:
        with open("/proc/cpuinfo") as handle:
            return next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def machine(gpus=0, software=False):
    """This machine in words, as summaries record it: architecture, CPU cores, the OS, the GPUs (`gpus`: a count, 0
    for 'no GPU', None to say nothing), with `software` Python's, TensorFlow's, Keras' versions."""
    parts = [platform.machine(), f"{os.cpu_count()} CPU cores", platform.system()]
    parts += [] if gpus is None else [f"GPU: {gpus}" if gpus else "no GPU"]
    if software:
        import keras
        import tensorflow as tf

        parts += [f"Python {platform.python_version()}", f"TensorFlow {tf.__version__}", f"Keras {keras.__version__}"]
    return ", ".join(parts)


def provenance():
    """What a summary records of where and when it was made: the machine and the date."""
    return {"machine": machine(), "date": time.strftime("%Y-%m-%d")}
