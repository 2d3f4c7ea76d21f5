"""A study as data, and the two things done with one: run what is missing,
render its tables from the committed summaries.

A `Study` names its runs (`command`, shared `flags`, `axes` whose values
each add flags, the name `pattern`) and its tables (`tables`, a function
of the study and the results folder). `run_study` trains every run whose
summary is missing, in the order of the axes (resumable: a finished run is
skipped, a killed one continues from its backup); `render_study` writes the
tables. `python -m experiments` is the command line of both.
"""

import dataclasses
import fnmatch
import itertools
import os
import subprocess
import sys

from experiments import runner

RESULTS = os.path.join(runner.REPO, "results")


@dataclasses.dataclass(frozen=True)
class Study:
    """One study.

    Args:
        name: what `python -m experiments run|table NAME` calls it.
        folder: its folder under `results/` (default: `name`); summaries go to `folder/runs/`.
        doc: one line: what the study finds (listed by `list`).
        command: the `python -m ganet_tf` command each run is (`train`, `seq2seq`).
        flags: flags every run shares.
        axes: `{axis: {value: flags}}`, in loop order (the first varies
            slowest); a run is one value of each axis, its flags those of
            its values, then `flags`, then `extra(point)`.
        pattern: the run name, formatted with the point (`{dataset}_{setting}_seed{seed}`).
        record: axes stored with each summary (e.g. `("variant",)`), or
            `point -> dict` of fields to store.
        extra: `point -> flags` added to a run (settings that depend on two axes).
        keep: `point -> bool`: the points of the axes' product that are runs
            (a study that is not a full product); default: every point.
        resumable: `point -> bool`: the run keeps a training backup (resumes
            when killed); default: seq2seq runs.
        after: `(study, point, summary, context) -> summary or None`: an
            analysis of the finished run (e.g. rescoring its model); a
            summary returned is written back. `context`: `data_dir`,
            `out_root` (the models), `runs_dir` (the summaries), `options`
            (the flags added to every run).
        reuse: studies whose runs of the same config are copied, not
            retrained (`runner.same_run`), or `point -> studies`.
        models: the models are kept under `runs/NAME/` (resumable training).
        tables: `(study, results_root) -> None`: writes the tables.
        needs_models: the tables read trained models (`runs/`), not only summaries.
        data_flag: runs take `--data-dir`, or `point -> bool`.
        script: `(file,)` of a study not yet declared as runs: `run` calls
            `python experiments/FILE [--data-dir DIR] [-- FLAGS]`.
    """

    name: str
    folder: str = ""
    doc: str = ""
    tables: object = None
    command: str = "train"
    flags: tuple = ()
    axes: dict = dataclasses.field(default_factory=dict)
    pattern: str = "{dataset}_{setting}_seed{seed}"
    record: tuple = ()
    extra: object = None
    keep: object = None
    resumable: object = None
    after: object = None
    reuse: tuple = ()
    models: bool = True
    needs_models: bool = False
    data_flag: object = True
    script: tuple = ()

    def __post_init__(self):
        if not self.folder:
            object.__setattr__(self, "folder", self.name)

    def runs_dir(self, root=RESULTS):
        return os.path.join(root, self.folder, "runs")

    def points(self, only=None):
        """Every run of the study as a dict `{axis: value, "name": ...}`;
        `only`: name patterns (fnmatch) that a run must match one of."""
        names = list(self.axes)
        for values in itertools.product(*(self.axes[axis] for axis in names)):
            point = dict(zip(names, values, strict=True))
            point["name"] = self.pattern.format(**point)
            if self.keep and not self.keep(point):
                continue
            if not only or any(fnmatch.fnmatch(point["name"], pattern) for pattern in only):
                yield point

    def run_flags(self, point, data_dir=None):
        flags = [flag for axis in self.axes for flag in _flags(self.axes[axis][point[axis]])]
        flags += [*self.flags, *(self.extra(point) if self.extra else ())]
        takes_data = self.data_flag(point) if callable(self.data_flag) else self.data_flag
        return [*flags, "--data-dir", data_dir] if takes_data and data_dir else flags


def _flags(value):
    return value(None) if callable(value) else value


def run_study(study, data_dir, only=None, options=(), root=RESULTS, models="runs", dry_run=False):
    """Trains the runs of `study` whose summary is missing (`only`: name
    patterns), then renders its tables. `options`: flags added to every run
    (smoke runs: `--limit 50 --epochs 1`), which then need a `root` other
    than the committed `results/`. Summaries go to `root/FOLDER/runs`, models
    to `models/NAME/`; `dry_run` prints the missing runs' names and flags only."""
    if study.script:
        flags = [*(["--data-dir", data_dir] if study.data_flag else []), *options]
        return _script(study, root, flags, dry_run)
    if options and os.path.abspath(root) == RESULTS:
        raise SystemExit("error: smoke flags need --results DIR (not the committed results/)")
    runs_dir = study.runs_dir(root)
    out_root = os.path.join(models, study.name) if study.models else None
    context = {"data_dir": data_dir, "out_root": out_root, "runs_dir": runs_dir, "options": list(options)}
    for point in study.points(only):
        flags = [*study.run_flags(point, data_dir), *options]
        if dry_run:
            if not os.path.exists(os.path.join(runs_dir, f"{point['name']}.json")):
                print(point["name"], " ".join(flags))
            continue
        reused = study.reuse(point) if callable(study.reuse) else study.reuse
        record = study.record(point) if callable(study.record) else {axis: point[axis] for axis in study.record}
        summary = runner.run_or_skip(
            point["name"],
            flags,
            runs_dir,
            out_root=out_root,
            resumable=study.resumable(point) if study.resumable else study.command == "seq2seq",
            extra=record,
            reuse=[_registry()[name].runs_dir(root) for name in reused],
            command=study.command,
        )
        if summary is not None and study.after:
            changed = study.after(study, point, summary, context)
            if changed is not None:
                runner.write_json(os.path.join(runs_dir, f"{point['name']}.json"), changed)
    if not dry_run:
        render_study(study, root)


def render_study(study, root=RESULTS):
    """Writes the tables of `study` into `root/FOLDER` from its summaries."""
    if not study.tables:
        raise SystemExit(f"error: {study.name}'s tables come with its runs: python -m experiments run {study.name}")
    study.tables(study, root)


def _script(study, root, flags, dry_run=False):
    """Runs `python experiments/FILE FLAGS` of a script study in the
    repository whose results folder is `root` (`dry_run`: prints it only;
    the script decides what it trains)."""
    repo = os.path.dirname(os.path.abspath(root))
    if dry_run:
        return print("python", os.path.join("experiments", study.script[0]), *flags)
    path = os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))
    command = [sys.executable, os.path.join("experiments", study.script[0]), *flags]
    subprocess.run(command, cwd=repo, env={**os.environ, "PYTHONPATH": path}, check=True)


def _registry():
    from experiments.studies import STUDIES

    return STUDIES


def find(name):
    """The study called `name`; an unknown name exits with the known ones."""
    studies = _registry()
    if name not in studies:
        raise SystemExit(f"error: unknown study {name!r}; known: {', '.join(studies)}")
    return studies[name]
