"""What the analyses of finished seq2seq runs share (`hierarchy_levels.py`,
`gate_pieces.py`, `seq2seq_test_densities.py`): their flags, the checks of
the runs they read and the tables they write. What they read from a model
(its test gates, its hierarchy's levels, a subword sentence's words) is
`ganet_tf.seq2seq.source_explanations`, which `translate --explain` reads."""

import argparse
import os
import shlex
import sys

from runner import REPO
from runner import load_runs
from runner import write_json


def analysis_parser(description, names_help="run folders under runs/seq2seq"):
    """The flags every analysis takes: `--names`, `--data-dir`,
    `--runs-root` (the models) and `--out` (the results, with the runs'
    summaries under `OUT/runs`)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--names", nargs="+", required=True, help=names_help)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--runs-root", default=os.path.join(REPO, "runs", "seq2seq"))
    parser.add_argument("--out", default=os.path.join(REPO, "results", "seq2seq"))
    return parser


def recorded_command(script, argv=None):
    """The command to record beside the results: `python experiments/SCRIPT`
    and the flags given (`argv`, or the command line's)."""
    return f"python experiments/{script} " + shlex.join(sys.argv[1:] if argv is None else argv)


def finished_runs(args, names, problem):
    """The summaries `{name: summary}` of the finished runs in `OUT/runs`,
    after checking, before any model loads, that each of `names` is one,
    that `problem(summary)` (what is wrong with it for this analysis, or
    None) is None, and that its model folder is still under `--runs-root`;
    else one `error:` line (SystemExit)."""
    runs = {r["name"]: r for r in load_runs(os.path.join(args.out, "runs"))}
    for name in names:
        if name not in runs:
            raise SystemExit(f"error: no finished run named {name} in {args.out}/runs")
        wrong = problem(runs[name])
        if wrong:
            raise SystemExit(f"error: {name} {wrong}")
        if not os.path.isdir(os.path.join(args.runs_root, name)):
            raise SystemExit(
                f"error: the model of {name} is gone from {args.runs_root}; "
                f"train it again: python experiments/seq2seq_tables.py --rerun {name}"
            )
    return runs


def write_tables(out, stem, rows, lines):
    """Writes `OUT/STEM.json` (`{"rows": rows}`) and `OUT/STEM.md` (`lines`
    and, below them, the commands of the rows), and prints the table."""
    commands = dict.fromkeys(r["command"] for r in rows if r.get("command"))
    text = "\n".join([*lines, "", "Commands:", "", *(f"- `{command}`" for command in commands)])
    write_json(os.path.join(out, f"{stem}.json"), {"rows": rows})
    with open(os.path.join(out, f"{stem}.md"), "w", encoding="utf-8") as handle:
        handle.write(text + "\n")
    print(text)
