"""Shared by the experiment scripts: run `python -m ganet_tf train` once per
configuration, keep its JSON summary, skip what is already done."""

import contextlib
import fcntl
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The scripts read run folders with ganet_tf itself, installed or not.
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from experiments.bench import machine  # noqa: E402 - as the summaries record it
from experiments.tables import mean_std  # noqa: E402, F401 - the statistics the scripts import from here
from experiments.tables import run_lines  # noqa: E402
from experiments.tables import write_text  # noqa: E402

# An absolute path inside a recorded string: a word that starts with the root.
_ABSOLUTE = re.compile(r"(?<![\w.:/])" + re.escape(os.sep) + r"[^\s\"',;)`]+")


def portable(value):
    """`value` (a string, or lists and dicts of them) with every absolute
    path rewritten relative to the repository, so that recorded commands and
    configs name `../shared/data` and `runs/...`, never this machine's folders."""
    if isinstance(value, str):
        return _ABSOLUTE.sub(lambda match: os.path.relpath(match.group(0), REPO), value)
    if isinstance(value, list):
        return [portable(item) for item in value]
    if isinstance(value, dict):
        return {portable(key): portable(item) for key, item in value.items()}
    return value


def recorded_machine(runs_dir):
    """The machine that the first summary in `runs_dir` records: a table
    names the machine its runs were made on, not the one that renders it."""
    runs = load_runs(runs_dir)
    return runs[0]["machine"] if runs else "-"


def provenance():
    """What a summary records of where and when it was made: the machine and the date."""
    return {"machine": machine(), "date": time.strftime("%Y-%m-%d")}


# The paper's gates, which the reproduction runs measured before the defaults
# changed (issue 13): a fixed lambda, and a gate open at test when p > 0.5.
PAPER_GATES = ["--target-density", "0", "--inference-mode", "threshold"]

# Config fields that say where a run reads and writes, not what it trains.
_WHERE = ("out", "backup_dir", "data_dir", "verbose")


def train_config(flags):
    """The `TrainConfig` fields (a dict) that `train FLAGS` would run with."""
    import dataclasses

    from ganet_tf.cli import _config_from
    from ganet_tf.cli import build_parser

    config = dataclasses.asdict(_config_from(build_parser().parse_args(["train", *flags])))
    return {key: value for key, value in config.items() if key not in _WHERE}


def test_rule_config(config, legacy=False):
    """A run's config (a dict) with the test-gate rule that a gated model
    resolves to written out (mode and parameter, defaults filled in), so
    that two configs compare by the rule they tested with. `legacy`: the
    run was trained before GA-Net's default became `nucleus` (its summary
    has no `test_gates`), when it was `top_k`."""
    from ganet_tf.models.gate_layers import resolve_gate_defaults
    from ganet_tf.models.gate_layers import target_density_argument
    from ganet_tf.training.train import GATED_MODELS

    model = config.get("model", "ganet")
    if model not in GATED_MODELS:
        return config
    rule = "nucleus" if model == "ganet" and not legacy else "top_k"
    _, mode, density, mass = resolve_gate_defaults(
        None,
        target_density_argument(config.get("target_density")),
        config.get("inference_mode"),
        config.get("inference_density"),
        inference_mass=config.get("inference_mass"),
        target_rule=rule,
    )
    return {**config, "inference_mode": mode, "inference_density": density, "inference_mass": mass}


def same_run(flags, runs_dirs):
    """Path of a finished run in `runs_dirs` trained with the same config, or None.

    Training is deterministic for a given config and seed on this machine
    (checked: the TREC Figure 5 runs at hidden 20 repeat the core runs to the
    last digit), so such a run need not be repeated. A config field that the
    older run lacks counts as equal when `flags` leave it at its default:
    the field came later, and its default reproduces the older behaviour.
    """
    import dataclasses

    from ganet_tf.training import TrainConfig

    defaults = {field.name: field.default for field in dataclasses.fields(TrainConfig)}
    wanted = test_rule_config(train_config(flags))
    for runs_dir in runs_dirs:
        for run in load_runs(runs_dir):
            config = {k: v for k, v in run.get("config", {}).items() if k not in _WHERE}
            if not config or set(config) - set(wanted):
                continue
            config = test_rule_config(config, legacy="test_gates" not in run)
            later = set(wanted) - set(config)
            if all(config[k] == wanted[k] for k in config) and all(wanted[k] == defaults[k] for k in later):
                return os.path.join(runs_dir, f"{run['name']}.json")
    return None


def run_train(name, flags, runs_dir, out_root=None, resumable=False, extra=None, reuse=(), command="train"):
    """Runs `python -m ganet_tf COMMAND` (`train`, or `seq2seq`) with
    `flags` unless `runs_dir/NAME.json` exists.

    With `reuse` (folders of run JSONs), a finished run there with the same
    config is copied instead, its command kept and `copied_from` added.

    The summary (with `report`; its provenance: the exact command, the
    machine and the date) is written
    atomically to `runs_dir/NAME.json`; the model to `out_root/NAME` when
    `out_root` is given, its output (epochs included) to `out_root/NAME.log`
    as it trains; with `resumable`, `out_root/NAME.backup` holds the
    training backup, so a killed run continues from its last epoch.
    `extra` fields (e.g. the variant name) are stored with the summary.
    A finished run is read without a lock (summaries are written
    atomically), so any number of processes may read it at once. Otherwise
    `runs_dir/NAME.json.lock` is held while the run trains: a second process
    asked for a run that another one is training stops with an error
    instead of training it twice.
    """
    path = os.path.join(runs_dir, f"{name}.json")
    os.makedirs(runs_dir, exist_ok=True)
    if os.path.exists(path):
        return read_json(path)
    with exclusive(path):
        # Checked again under the lock: another process may have just finished it.
        if os.path.exists(path):
            return read_json(path)
        return _run_train(path, name, flags, out_root, resumable, extra, reuse, command)


def _run_train(path, name, flags, out_root, resumable, extra, reuse, subcommand):
    source = same_run(flags, reuse) if reuse else None
    if source:
        result = read_json(source)
        result.update(name=name, copied_from=os.path.relpath(source, REPO), **(extra or {}))
        write_json(path, result)
        print(f"    {name}: same config as {result['copied_from']}, copied", flush=True)
        return result
    command = [sys.executable, "-m", "ganet_tf", subcommand, *flags, "--verbose", "2"]
    if out_root:
        command += ["--out", os.path.join(out_root, name)]
        if resumable:
            command += ["--backup-dir", os.path.join(out_root, f"{name}.backup")]
    shown = f"python -m ganet_tf {subcommand} " + shlex.join(command[4:])
    log = os.path.join(REPO, out_root, f"{name}.log") if out_root else None
    result = run_command(command, shown, log)
    if out_root and subcommand == "train":
        from ganet_tf.training.trained_run import read_metrics

        result["report"] = read_metrics(os.path.join(REPO, out_root, name))["report"]
    result.update(command=shown, name=name, **provenance(), **(extra or {}))
    write_json(path, result)
    if subcommand != "train":
        return result
    print(
        f"    accuracy {result['test_accuracy']:.4f} density {result['test_density']} "
        f"epochs {result['epochs_trained']} in {result['train_seconds']:.0f}s",
        flush=True,
    )
    return result


def run_command(command, shown, log=None, cwd=REPO, unset=()):
    """Runs a `python -m ganet_tf ...` command line, printing `shown` first;
    returns the JSON summary of its last stdout line, or exits with the end
    of its error output when it fails. It runs in the folder `cwd`, without
    the environment variables `unset`.

    The run's stdout and stderr go, as they come, to the file `log` (its
    epochs, say, so an hours-long run can be watched with `tail -f`), or to
    a temporary file without it; a failed run prints that output's end.

    The run imports a copy of `ganet_tf` taken when it starts (`python -P`
    keeps the working folder off its path): TensorFlow's autograph reads a
    function's source from disk when it first traces it, maybe hours into
    a run, so an edit of the working tree meanwhile would reach that run (a
    Multi30k run failed at its decoding, after 10 epochs, that way).
    """
    print(f"[{time.strftime('%H:%M:%S')}] {shown}", flush=True)
    if log:
        print(f"    log: {os.path.relpath(log, REPO)}", flush=True)
        os.makedirs(os.path.dirname(log), exist_ok=True)
    last = ""
    with open(log, "a+", encoding="utf-8") if log else tempfile.TemporaryFile("w+", encoding="utf-8") as handle:
        handle.write(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {shown}\n")
        handle.flush()
        with tempfile.TemporaryDirectory(prefix="ganet_tf-code-") as code:
            # The package and the `tuning/` its CLI imports (as `tuning` when
            # the snapshot's `ganet_tf/` shadows an installed one).
            for package in ("ganet_tf", "tuning"):
                shutil.copytree(
                    os.path.join(REPO, package),
                    os.path.join(code, package),
                    ignore=shutil.ignore_patterns("__pycache__"),
                )
            path = os.pathsep.join(filter(None, [code, os.environ.get("PYTHONPATH")]))
            environment = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}
            for name in unset:
                environment.pop(name, None)
            if command[:2] == [sys.executable, "-m"]:
                command = [sys.executable, "-P", *command[1:]]
            with subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=handle, text=True, cwd=cwd, env=environment
            ) as process:
                for line in process.stdout:
                    handle.write(line)
                    handle.flush()
                    if line.strip():
                        last = line
        if process.returncode != 0:
            handle.seek(0)
            print(handle.read()[-3000:], file=sys.stderr)
            raise SystemExit(f"run failed: {shown}" + (f" (log: {log})" if log else ""))
    return json.loads(last)


def run_seq2seq(name, flags, path, args, data_dir=None):
    """`run_train` for `python -m ganet_tf seq2seq FLAGS` (resumable), its
    summary at `path`, the model under `args.runs_root/NAME`; `data_dir` is
    passed as `--data-dir`, and the smoke flags `args.limit` and
    `args.hidden` where given."""
    flags = [*flags, *(["--data-dir", data_dir] if data_dir else [])]
    if args.limit:
        flags += ["--limit", str(args.limit)]
    if args.hidden:
        flags += ["--hidden", str(args.hidden), "--embedding-dim", str(args.hidden)]
    runs_dir = os.path.dirname(path)
    return run_train(name, flags, runs_dir, out_root=args.runs_root, resumable=True, command="seq2seq")


class RunBusy(SystemExit):
    """Another process holds the run's lock (it is training that run)."""


def run_or_skip(name, flags, runs_dir, **options):
    """`run_train(name, flags, runs_dir, **options)`, or None when another
    process is training that run (it says so and goes on): two processes
    started apart split the runs between them."""
    try:
        return run_train(name, flags, runs_dir, **options)
    except RunBusy:
        print(f"    {name}: another process is training it, skipped", flush=True)
        return None


def training_elsewhere(runs_dir, names):
    """The `names` whose run in `runs_dir` another process holds the lock of
    (is training now); a lock file left by a killed process does not count."""
    busy = []
    for name in names:
        try:
            handle = open(os.path.join(runs_dir, f"{name}.json.lock"))
        except FileNotFoundError:
            continue
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                busy.append(name)
    return busy


@contextlib.contextmanager
def exclusive(path):
    """Holds `PATH.lock` for the run whose summary is `PATH`, so that two
    processes never train (and back up) the same run; the lock goes with the
    process that held it."""
    lock = path + ".lock"
    with open(lock, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # The holder removes the file when done; a lock taken on a file that
            # was removed meanwhile guards nothing, so count it as busy.
            if os.fstat(handle.fileno()).st_ino != os.stat(lock).st_ino:
                raise BlockingIOError
        except (BlockingIOError, FileNotFoundError) as busy:
            raise RunBusy(
                f"error: another process is training {os.path.basename(path)[:-5]}; "
                "give each process different runs (--only, --models, --aux, --seeds)"
            ) from busy
        try:
            yield
        finally:
            os.remove(lock)


_NO_DEFAULT = object()


def read_json(path, default=_NO_DEFAULT):
    """The JSON file `path`; `default` where it is missing, if given."""
    if default is not _NO_DEFAULT and not os.path.exists(path):
        return default
    with open(path) as handle:
        return json.load(handle)


def write_json(path, result):
    """Writes `result` (its paths made `portable`) to `path` atomically."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    staging = path + ".tmp"
    with open(staging, "w") as handle:
        json.dump(portable(result), handle, indent=1)
    os.replace(staging, path)


def seed_results(seeds, path_of, run_seed):
    """The JSON result of each of `seeds` at `path_of(seed)`, `run_seed(seed)`
    written there first where it is missing (resumable, one seed at a time)."""
    results = []
    for seed in seeds:
        path = path_of(seed)
        if not os.path.exists(path):
            write_json(path, run_seed(seed))
        results.append(read_json(path))
    return results


def attended_density(run, split="test"):
    """The share of real tokens that attention weighs in a run's `split`.

    Runs since issue 13 store it. Older ones (all with `fallback="all"`)
    give it exactly as open-gate density + all-closed rate: an all-closed
    row has open-gate density 0 and attends to all of its tokens.
    """
    if f"{split}_attended_density" in run:
        return run[f"{split}_attended_density"]
    density, closed = run.get(f"{split}_density"), run.get(f"{split}_all_closed_rate")
    if density is None or closed is None:
        return None
    if run.get("config", {}).get("fallback", "all") != "all":
        return None
    return density + closed


def load_runs(runs_dir):
    runs = []
    if os.path.isdir(runs_dir):
        for name in sorted(os.listdir(runs_dir)):
            if name.endswith(".json"):
                runs.append(read_json(os.path.join(runs_dir, name)))
    return runs


def write_results_readme(results_dir, lines, runs):
    """Writes `results_dir/README.md`: `lines`, then the command of every run."""
    write_text(os.path.join(results_dir, "README.md"), [*lines, *run_lines(runs)])


def seed_list(runs):
    """The seeds of `runs`, sorted, as '0,1,2'."""
    return ",".join(str(run["seed"]) for run in sorted(runs, key=lambda run: run["seed"]))
