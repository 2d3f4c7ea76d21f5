"""A study as data (`Study`): `run_study` trains its missing runs (resumable), `render_study` writes its tables."""

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
    """One study: a run (a point) is one value of each of `axes`; its flags are its values', `flags`, `extra`."""

    name: str
    folder: str = ""  # under results/ (default: the name)
    doc: str = ""
    tables: object = None  # (study, root) -> None: writes the tables
    command: str = "train"  # or seq2seq
    flags: tuple = ()
    axes: dict = dataclasses.field(default_factory=dict)  # {axis: {value: flags}}, the first varying slowest
    pattern: str = "{dataset}_{setting}_seed{seed}"  # a run's name, formatted with its point
    record: tuple = ()  # axes (or point -> dict) stored with the summary
    extra: object = None  # point -> more flags
    keep: object = None  # point -> whether it is a run
    resumable: object = None  # point -> keeps a training backup (default: seq2seq runs)
    after: object = None  # (study, point, summary, context): analyses a finished run; a summary returned is saved
    reuse: tuple = ()  # studies (or point -> studies) whose runs of the same config are copied (`runner.same_run`)
    models: bool = True  # the models are kept (`runs/NAME/`)
    needs_models: bool = False  # the tables read the models beside the summaries
    data_flag: object = True  # runs take `--data-dir` (or point -> bool)
    script: str = ""  # the module of a study run by its own script (the flags after `--` go to it)
    runs: object = "runs"  # the summaries' subfolder (or point -> subfolder)

    def __post_init__(self):
        if not self.folder:
            object.__setattr__(self, "folder", self.name)

    @property
    def rebuilt(self):
        """Its tables rebuild from the committed summaries alone (`table all`)."""
        return bool(self.tables) and not self.needs_models

    def runs_dir(self, root=RESULTS, point=None):
        return os.path.join(root, self.folder, self.runs(point) if callable(self.runs) else self.runs)

    def points(self, only=None):
        """Every run as `{axis: value, "name": ...}`; `only`: name patterns (fnmatch)."""
        for values in itertools.product(*self.axes.values()):
            point = dict(zip(self.axes, values, strict=True))
            point["name"] = name = self.pattern.format(**point)
            if (not self.keep or self.keep(point)) and (not only or any(fnmatch.fnmatch(name, p) for p in only)):
                yield point

    def run_flags(self, point, data_dir=None):
        flags = [flag for axis in self.axes for flag in self.axes[axis][point[axis]]]
        flags += [*self.flags, *(self.extra(point) if self.extra else ())]
        takes_data = self.data_flag(point) if callable(self.data_flag) else self.data_flag
        return [*flags, "--data-dir", data_dir] if takes_data and data_dir else flags


def run_study(study, data_dir, only=None, options=(), root=RESULTS, dry_run=False, registry=None):
    """Trains the runs of `study` whose summary is missing (`only`: name patterns), then writes its
    tables. `options`: flags added to every run (smoke runs, into a `root` other than `results/`); models go to
    `runs/NAME/`; `dry_run` prints the missing runs and their flags; `registry`: `{name: Study}` of the studies
    named by `study.reuse` (`studies.STUDIES`)."""
    if study.script:
        return _script(study, root, options, dry_run)
    if options and os.path.abspath(root) == RESULTS:
        raise SystemExit("error: smoke flags need --results DIR (not the committed results/)")
    out_root = os.path.join("runs", study.name) if study.models else None
    for point in study.points(only):
        flags, runs_dir = [*study.run_flags(point, data_dir), *options], study.runs_dir(root, point)
        path = os.path.join(runs_dir, f"{point['name']}.json")
        if dry_run:
            if not os.path.exists(path):
                print(point["name"], " ".join(flags))
            continue
        reused = study.reuse(point) if callable(study.reuse) else study.reuse
        reuse = [registry[name].runs_dir(root) for name in reused]
        record = study.record(point) if callable(study.record) else {axis: point[axis] for axis in study.record}
        resumable = study.resumable(point) if study.resumable else study.command == "seq2seq"
        summary = runner.run_or_skip(point["name"], flags, runs_dir, out_root, resumable, record, reuse, study.command)
        if summary is not None and study.after:
            context = {"data_dir": data_dir, "out_root": out_root, "runs_dir": runs_dir, "options": list(options)}
            changed = study.after(study, point, summary, context)
            if changed is not None:
                runner.write_json(path, changed)
    if not dry_run and study.tables:  # a study without tables ends with its runs' summaries
        study.tables(study, root)


def render_study(study, root=RESULTS):
    """Writes the tables of `study` into `root/FOLDER` from its summaries."""
    if not study.tables:
        raise SystemExit(f"error: {study.name}'s tables come with its runs: python -m experiments run {study.name}")
    study.tables(study, root)


def _script(study, root, flags, dry_run=False):
    """Runs `python -m experiments.SCRIPT FLAGS` in the repository of `root`."""
    command = ["-m", f"experiments.{study.script}", *flags]
    if dry_run:
        return print("python", *command)
    subprocess.run([sys.executable, *command], cwd=os.path.dirname(os.path.abspath(root)), check=True)
