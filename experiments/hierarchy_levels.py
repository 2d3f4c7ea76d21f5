"""How many nodes each level of a finished hierarchical seq2seq run holds.

    python experiments/hierarchy_levels.py --data-dir ../shared/data \
        --names multi30k-long_hier-cnn_seed0 multi30k-long_hier-rnn_seed0 multi30k-long_hier-act_seed0

Loads each run's model from `runs/seq2seq/NAME` (as `seq2seq_tables.py`
leaves it), encodes the run's test sources and counts the real nodes of
every level of the hierarchy's memory: level 0 holds the source tokens,
each level above it the blocks of the one below. With fixed blocks
(`hier-rnn`, `hier-cnn`) the counts follow from k; with ACT blocks
(`hier-act`) they show where the learned halting units close a block.
Writes `results/seq2seq/levels_<names' table>.md` and `.json`.
"""

import argparse
import os
import shlex
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "experiments"))

from runner import _write_json  # noqa: E402
from runner import load_runs  # noqa: E402
from runner import machine  # noqa: E402


def level_counts(run_dir, data_dir, batch_size=200):
    """Mean real nodes per test sentence at each level, bottom up."""
    from keras import ops

    from ganet_tf.seq2seq.run import decoder_batches
    from ganet_tf.seq2seq.run import load_run

    config, model, ids, _ = load_run(run_dir, data_dir)
    sources = ids[0]
    totals = None
    for source, _ in decoder_batches(sources, batch_size):
        memory, _, _ = model.encode(source)
        counts = [float(ops.sum(ops.cast(level["mask"], "float32"))) for level in memory["levels"]]
        totals = counts if totals is None else [a + b for a, b in zip(totals, counts, strict=True)]
    return config, [total / len(sources) for total in totals]


def check_names(args):
    """Every name: a finished hierarchical run (its JSON in `OUT/runs`)
    whose model folder is still under `--runs-root`; checked before any
    model loads."""
    attention = {r["name"]: r["attention"] for r in load_runs(os.path.join(args.out, "runs"))}
    for name in args.names:
        if name not in attention:
            raise SystemExit(f"error: no finished run named {name} in {args.out}/runs")
        if not attention[name].startswith("hier-"):
            raise SystemExit(f"error: {name} is a {attention[name]} run; give hierarchical runs (hier-*).")
        if not os.path.isdir(os.path.join(args.runs_root, name)):
            raise SystemExit(
                f"error: the model of {name} is gone from {args.runs_root}; "
                f"train it again: python experiments/seq2seq_tables.py --rerun {name}"
            )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", nargs="+", required=True, help="run folders under runs/seq2seq")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--runs-root", default=os.path.join(REPO, "runs", "seq2seq"))
    parser.add_argument("--out", default=os.path.join(REPO, "results", "seq2seq"))
    args = parser.parse_args(argv)
    check_names(args)
    rows = []
    for name in args.names:
        config, counts = level_counts(os.path.join(args.runs_root, name), args.data_dir)
        rows.append({"run": name, "attention": config.attention, "levels": config.levels, "nodes": counts})
    command = "python experiments/hierarchy_levels.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    table = args.names[0].split("_")[0]
    _write_json(os.path.join(args.out, f"levels_{table}.json"), {"command": command, "rows": rows})
    lines = [
        f"# Nodes per level of the hierarchies, {table} (test sentences)",
        "",
        f"Command: `{command}`  ",
        f"Machine: {machine()}",
        "",
        "Mean real nodes per test sentence; level 0 holds the source tokens.",
        "",
        "| run | L | nodes per level (0, 1, ...) |",
        "|---|---|---|",
    ]
    lines += [f"| {r['run']} | {r['levels']} | {', '.join(f'{c:.2f}' for c in r['nodes'])} |" for r in rows]
    with open(os.path.join(args.out, f"levels_{table}.md"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
