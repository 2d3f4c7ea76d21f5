"""The runner of the studies: runs `python -m ganet_tf train|seq2seq` once per configuration and keeps its JSON summary
with its provenance (command, machine, date), skipping what is done."""

import contextlib
import dataclasses
import fcntl
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from experiments.provenance import REPO
from experiments.provenance import portable
from experiments.provenance import provenance

# The paper's gates (the defaults before issue 13): a fixed lambda, open at test when p > 0.5.
PAPER_GATES = ("--target-density", "0", "--inference-mode", "threshold")
_WHERE = ("out", "backup_dir", "data_dir", "verbose")


def _what_runs(config):
    """A config's fields that decide what a run trains (not `_WHERE`), each under its name of now (a recorded one
    may use an old name, `ganet_tf.policy.renamed_keys`)."""
    from ganet_tf.policy.renamed_keys import with_current_keys

    return {key: value for key, value in with_current_keys(config).items() if key not in _WHERE}


def recorded_machine(runs_dir):
    """The machine that the first summary in `runs_dir` records ('-' without any)."""
    runs = load_runs(runs_dir)
    return runs[0]["machine"] if runs else "-"


def parse_train(flags):
    """The `TrainConfig` that `train FLAGS` would run with."""
    from ganet_tf.cli import _config_from
    from ganet_tf.cli import build_parser

    return _config_from(build_parser().parse_args(["train", *flags]))


def test_rule_config(config, legacy=False):
    """A run's config with a gated model's test-gate rule written out (`legacy`: before the `nucleus` default)."""
    from ganet_tf.models.gate_layers import resolve_gate_defaults
    from ganet_tf.models.gate_layers import target_density_argument
    from ganet_tf.training.train import GATED_MODELS

    model = config.get("model", "ganet")
    if model not in GATED_MODELS:
        return config
    _, mode, density, mass = resolve_gate_defaults(
        None,
        target_density_argument(config.get("target_density")),
        config.get("inference_mode"),
        config.get("inference_density"),
        inference_mass=config.get("inference_mass"),
        target_rule="nucleus" if model == "ganet" and not legacy else "top_k",
    )
    return {**config, "inference_mode": mode, "inference_density": density, "inference_mass": mass}


def seq2seq_config(flags):
    """The `Seq2SeqConfig` fields (a dict) that `seq2seq FLAGS` would run with, its defaults resolved as the run
    resolves them."""
    from ganet_tf.cli import build_parser
    from ganet_tf.seq2seq.config import Seq2SeqConfig
    from ganet_tf.seq2seq.config import resolve_defaults

    args = vars(build_parser().parse_args(["seq2seq", *flags]))
    names = Seq2SeqConfig.__dataclass_fields__
    config = resolve_defaults(Seq2SeqConfig(**{k: v for k, v in args.items() if k in names}))
    return _what_runs(dataclasses.asdict(config))


def model_folder(run, default=None):
    """The model folder of a finished run: the `--out` of its recorded command (a copied run's is the original's),
    else `default`."""
    args = shlex.split(run.get("command", ""))
    return os.path.join(REPO, args[args.index("--out") + 1]) if "--out" in args[:-1] else default


def _seq2seq_run_config(run):
    """The config a finished `seq2seq` run trained with, as its model folder records it (older option names read as
    today's); None when that folder is not on this machine (a summary alone cannot say which defaults its command
    had)."""
    folder = model_folder(run)
    path = os.path.join(folder, "metrics.json") if folder else None
    if not path or not os.path.exists(path):
        return None
    return _what_runs(read_json(path).get("config", {}))


def same_run(flags, runs_dirs, command="train"):
    """Path of a finished run in `runs_dirs` with the config of `COMMAND FLAGS`, or None. For `train`, a field an
    older run lacks matches where `flags` keep its default, and one it records under an old name
    (`ganet_tf.policy.renamed_keys`) counts as the field of now; a `seq2seq` run's model folder must record every field,
    each equal."""
    from ganet_tf.training import TrainConfig

    if command == "seq2seq":
        wanted = seq2seq_config(flags)
        for runs_dir in runs_dirs:
            for run in load_runs(runs_dir):
                if _seq2seq_run_config(run) == wanted:
                    return os.path.join(runs_dir, f"{run['name']}.json")
        return None
    defaults = {field.name: field.default for field in dataclasses.fields(TrainConfig)}
    wanted = test_rule_config(_what_runs(dataclasses.asdict(parse_train(flags))))
    for runs_dir in runs_dirs:
        for run in load_runs(runs_dir):
            config = _what_runs(run.get("config", {}))
            if not config or set(config) - set(wanted):
                continue
            config = test_rule_config(config, legacy="test_gates" not in run)
            later = set(wanted) - set(config)
            if all(config[k] == wanted[k] for k in config) and all(wanted[k] == defaults[k] for k in later):
                return os.path.join(runs_dir, f"{run['name']}.json")
    return None


def run_or_skip(name, flags, runs_dir, out_root=None, resumable=False, extra=None, reuse=(), command="train"):
    """`runs_dir/NAME.json`: read, or made by `python -m ganet_tf COMMAND FLAGS` (or copied from a run of the same
    config in `reuse`) with its provenance and `extra`; model, log and (`resumable`) backup go to `out_root/NAME*`. None
    while another process trains that run."""
    path = os.path.join(runs_dir, f"{name}.json")
    os.makedirs(runs_dir, exist_ok=True)
    if os.path.exists(path):
        return read_json(path)
    try:
        with exclusive(path):
            if os.path.exists(path):  # another process may have just finished it
                return read_json(path)
            source = same_run(flags, reuse, command) if reuse else None
            if source:
                result = {**read_json(source), "name": name, "copied_from": os.path.relpath(source, REPO)}
                print(f"    {name}: same config as {result['copied_from']}, copied", flush=True)
            else:
                result = {**_train(name, flags, out_root, resumable, command), "name": name, **provenance()}
            result.update(extra or {})
            write_json(path, result)
            return result
    except RunBusy:
        print(f"    {name}: another process is training it, skipped", flush=True)
        return None


def _train(name, flags, out_root, resumable, subcommand):
    """The summary of `python -m ganet_tf SUBCOMMAND FLAGS`, its `command` and `report` added."""
    command = [sys.executable, "-m", "ganet_tf", subcommand, *flags, "--verbose", "2"]
    if out_root:
        command += ["--out", os.path.join(out_root, name)]
        command += ["--backup-dir", os.path.join(out_root, f"{name}.backup")] if resumable else []
    shown = f"python -m ganet_tf {subcommand} " + shlex.join(command[4:])
    result = run_command(command, shown, os.path.join(REPO, out_root, f"{name}.log") if out_root else None)
    if out_root and subcommand == "train":
        from ganet_tf.policy.trained_run import read_metrics

        result["report"] = read_metrics(os.path.join(REPO, out_root, name))["report"]
    if subcommand == "train":
        scores = f"accuracy {result['test_accuracy']:.4f} density {result['test_density']}"
        print(f"    {scores} epochs {result['epochs_trained']} in {result['train_seconds']:.0f}s", flush=True)
    return {**result, "command": shown}


def run_command(command, shown, log=None, cwd=REPO, unset=(), environment=None):
    """Runs a `python ...` command in `cwd`, less the variables `unset`, plus `environment`, its output into `log`; the
    JSON of its last stdout line. It imports a copy of `ganet_tf` taken at its start (autograph reads
    source when it traces, maybe hours in, after the tree changed), the rest (`experiments`, `tests`) from `REPO`."""
    print(f"[{time.strftime('%H:%M:%S')}] {shown}", flush=True)
    if log:
        print(f"    log: {os.path.relpath(log, REPO)}", flush=True)
        os.makedirs(os.path.dirname(log), exist_ok=True)
    last = ""
    with open(log, "a+", encoding="utf-8") if log else tempfile.TemporaryFile("w+", encoding="utf-8") as handle:
        handle.write(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {shown}\n")
        handle.flush()
        with tempfile.TemporaryDirectory(prefix="ganet_tf-code-") as code:
            ignore = shutil.ignore_patterns("__pycache__")
            shutil.copytree(os.path.join(REPO, "ganet_tf"), os.path.join(code, "ganet_tf"), ignore=ignore)
            path = os.pathsep.join(filter(None, [code, os.environ.get("PYTHONPATH"), REPO]))
            env = {**os.environ, **(environment or {}), "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}
            env = {key: value for key, value in env.items() if key not in unset}
            if command[:2] == [sys.executable, "-m"]:
                command = [sys.executable, "-P", *command[1:]]
            with subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=handle, text=True, cwd=cwd, env=env
            ) as process:
                for line in process.stdout:
                    handle.write(line)
                    handle.flush()
                    last = line if line.strip() else last
        if process.returncode != 0:
            handle.seek(0)
            print(handle.read()[-3000:], file=sys.stderr)
            raise SystemExit(f"run failed: {shown}" + (f" (log: {log})" if log else ""))
    return json.loads(last)


class RunBusy(SystemExit):
    """Another process holds the run's lock (it is training that run)."""


@contextlib.contextmanager
def exclusive(path):
    """Holds `PATH.lock`; raises `RunBusy` where another process holds it."""
    lock = path + ".lock"
    with open(lock, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # A lock on a file its holder removed meanwhile guards nothing.
            if os.fstat(handle.fileno()).st_ino != os.stat(lock).st_ino:
                raise BlockingIOError
        except (BlockingIOError, FileNotFoundError) as busy:
            raise RunBusy(path) from busy
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
    with open(path + ".tmp", "w") as handle:
        json.dump(portable(result), handle, indent=1)
    os.replace(path + ".tmp", path)


def seed_results(seeds, path_of, run_seed):
    """Each of `seeds`' JSON result at `path_of(seed)`, made by `run_seed(seed)` where missing (one at a time)."""
    for seed in seeds:
        if not os.path.exists(path_of(seed)):
            write_json(path_of(seed), run_seed(seed))
    return [read_json(path_of(seed)) for seed in seeds]


def attended_density(run, split="test"):
    """The share of real tokens attention weighs in a run's `split`; runs before
    issue 13 (`fallback="all"`): open-gate density + all-closed rate."""
    if f"{split}_attended_density" in run:
        return run[f"{split}_attended_density"]
    density, closed = run.get(f"{split}_density"), run.get(f"{split}_all_closed_rate")
    if density is None or closed is None or run.get("config", {}).get("fallback", "all") != "all":
        return None
    return density + closed


def load_runs(runs_dir):
    """The summaries (`*.json`) in `runs_dir`, by file name."""
    names = sorted(os.listdir(runs_dir)) if os.path.isdir(runs_dir) else []
    return [read_json(os.path.join(runs_dir, name)) for name in names if name.endswith(".json")]
