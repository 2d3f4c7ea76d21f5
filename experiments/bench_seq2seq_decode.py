"""Greedy decoding time of finished seq2seq runs, side by side (issue 14).

    nice -n 5 python experiments/bench_seq2seq_decode.py --task multi30k --data-dir ../shared/data

Each run's own `decode_seconds_per_sentence` is taken while other jobs
share the machine, so runs cannot be compared on it. This script loads the
finished runs of one task (`runs/seq2seq/NAME`, as `seq2seq_tables.py`
leaves them, with a JSON in `results/seq2seq/runs`) into one process and
times their greedy decoders in turn on the same test sentences: one
`tf.function` per model, traced and run `--warmup` times, then in each of
`--repeats` rounds every model decodes the first `--sentences` test
sentences once (in batches of `--batch-size`, as `seq2seq` decodes them):
each batch goes through every model before the next batch, in an order
that rotates from batch to batch and round to round. At batch sizes above 1
each model is timed twice in every round: with the default decoder, in
which rows that have ended leave the batch, and with every row kept to the
end (`drop_finished=False`). The median seconds per sentence and its ratio
to Bahdanau's (seed 0 of each table row when several seeds exist, unless
`--names` picks), the tokens the outputs hold, the decoder steps one pass
runs (a batch runs until its last row ends), the attended density and the
attention FLOPs per decoded token (from the run's JSON) are written to
`OUT/decode_<table>.json` and `OUT/decode_<table>.md` (`OUT`: `results/seq2seq`;
`--table` picks a `seq2seq_tables.py` table, by default the one named like
`--task`).
"""

import argparse
import json
import os
import shlex
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "experiments"))

from bench import machine_line  # noqa: E402
from bench import quartiles  # noqa: E402
from bench import set_threads  # noqa: E402

from runner import load_runs  # noqa: E402
from runner import portable  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=("multi30k", "copy"), default="multi30k")
    parser.add_argument(
        "--table",
        choices=("multi30k", "multi30k-long", "multi30k-subwords", "copy"),
        help="the `seq2seq_tables.py` table whose runs to time (default: the task's own, named like it)",
    )
    parser.add_argument("--data-dir", default=os.environ.get("GANET_DATA_DIR"))
    parser.add_argument("--names", nargs="+", help="runs to compare (default: seed 0 of every table row)")
    parser.add_argument("--sentences", type=int, default=1000, help="the first N test sentences")
    parser.add_argument("--batch-size", type=int, nargs="+", default=[128, 1])
    parser.add_argument("--batch-one-sentences", type=int, default=100, help="sentences timed at batch size 1")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1, help="untimed passes per model (at least 1)")
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads (inter-op: 1)")
    parser.add_argument("--runs-root", default=os.path.join(REPO, "runs", "seq2seq"))
    parser.add_argument("--out", default=os.path.join(REPO, "results", "seq2seq"))
    args = parser.parse_args()
    if args.warmup < 1:
        parser.error(f"--warmup must be at least 1 (the first pass counts the decoder steps); got {args.warmup}")
    args.table = args.table or args.task
    if not args.table.startswith(args.task):
        parser.error(f"--table {args.table} holds no {args.task} runs: pass its task too")
    return args


def chosen_runs(args):
    # Run names are `TABLE_ROW_seedN` (`seq2seq_tables.py`).
    # A run trained again (`seq2seq_tables.py --rerun`) left the model on disk: its figures go with it.
    reruns = {r["name"]: r for r in load_runs(os.path.join(args.out, "reruns"))}
    runs = [
        reruns.get(r["name"], r)
        for r in load_runs(os.path.join(args.out, "runs"))
        if r["name"].split("_")[0] == args.table
    ]
    if args.names:
        missing = sorted(set(args.names) - {r["name"] for r in runs})
        if missing:
            raise SystemExit(f"error: no finished run named {', '.join(missing)} in {args.out}/runs")
        return [r for r in runs if r["name"] in args.names]
    chosen = {}  # one run per table row (`gated` and `gated-ft` share an attention), the lowest seed
    for run in sorted(runs, key=lambda r: r["seed"]):
        chosen.setdefault(run["name"].rsplit("_seed", 1)[0], run)
    if not any(run["attention"] == "bahdanau" for run in chosen.values()):
        raise SystemExit(f"error: no finished {args.table} Bahdanau run to compare with in {args.out}/runs")
    return list(chosen.values())


def decoder_steps(outputs, batch_size):
    """Decoder steps one pass ran: a batch runs until its last row ends, and
    every row of `outputs` is as wide as its batch's step count."""
    return sum(len(outputs[start]) for start in range(0, len(outputs), batch_size))


def decoded_tokens(outputs):
    """Tokens the rows produced: up to and including the end token, or the
    whole row where it never ends."""
    from ganet_tf.seq2seq.vocabulary import END_ID

    return sum(list(row).index(END_ID) + 1 if END_ID in row else len(row) for row in outputs)


def time_decoders(models, source_ids, batch_size, args, drop_finished):
    """Median seconds per sentence of each (model, `drop_finished`) decoder
    over the rounds, every round's seconds, and the decoder steps and the
    tokens of one pass of each model (greedy decoding is deterministic, and
    dropping ended rows does not change the outputs). In a round every
    batch is decoded by each decoder in turn before the next batch, in an
    order that rotates from batch to batch and round to round, so the
    decoders share the machine's state at the grain of one batch."""
    from ganet_tf.seq2seq.decoding import make_decoder
    from ganet_tf.seq2seq.run import decode_all
    from ganet_tf.seq2seq.run import decoder_batches

    entries = [(model, make_decoder(model, drop_finished=drop)) for model in models for drop in drop_finished]
    steps, tokens = [], []
    for number, (model, decoder) in enumerate(entries):
        outputs, _ = decode_all(model, source_ids, batch_size, verbose=0, decoder=decoder)
        if number % len(drop_finished) == 0:
            steps.append(decoder_steps(outputs, batch_size))
            tokens.append(decoded_tokens(outputs))
        for _ in range(args.warmup - 1):
            decode_all(model, source_ids, batch_size, verbose=0, decoder=decoder)
    batches = decoder_batches(source_ids, batch_size)
    times = np.zeros([len(entries), args.repeats])
    for repeat in range(args.repeats):
        for number, (padded, limit) in enumerate(batches):
            for index in np.roll(np.arange(len(entries)), repeat + number):
                started = time.perf_counter()
                entries[index][1](padded, limit).numpy()
                times[index, repeat] += time.perf_counter() - started
    times /= len(source_ids)
    medians = np.reshape(np.median(times, axis=1), [len(models), len(drop_finished)])
    return medians, np.reshape(times, [len(models), len(drop_finished), -1]), steps, tokens


def paired_quartiles(seconds, reference):
    """Quartiles (25, 50, 75 %) of the per-round ratios `seconds[r] /
    reference[r]`: both were timed in round r, so load that moves a whole
    round cancels out."""
    return quartiles(np.asarray(seconds) / np.asarray(reference))


def main():
    args = parse_args()

    from ganet_tf.seq2seq.run import load_run

    set_threads(args.threads)
    runs = chosen_runs(args)
    models, sources = [], None
    for run in runs:
        _, model, (source_ids, _), _ = load_run(os.path.join(args.runs_root, run["name"]), args.data_dir)
        if sources is not None and [list(s) for s in source_ids] != sources:
            raise SystemExit(f"error: {run['name']} encodes the test sources differently from {runs[0]['name']}")
        sources = [list(s) for s in source_ids]
        models.append(model)
    started = time.time()
    cells = []
    for batch_size in args.batch_size:
        count = args.sentences if batch_size > 1 else min(args.sentences, args.batch_one_sentences)
        # At batch size 1 no row can leave the batch early, so only the default is timed.
        drop_finished = (True, False) if batch_size > 1 else (True,)
        kept = len(drop_finished) > 1  # whether the all-rows-kept decoder was timed
        medians, times, steps, tokens = time_decoders(models, sources[:count], batch_size, args, drop_finished)
        token_seconds = medians[:, 0] * count / np.maximum(tokens, 1)
        step_seconds = medians[:, -1] * count / np.maximum(steps, 1)
        attentions = [r["attention"] for r in runs]
        at = attentions.index("bahdanau") if "bahdanau" in attentions else 0
        for index, run in enumerate(runs):
            cells.append(
                {
                    "name": run["name"],
                    "attention": run["attention"],
                    "batch_size": batch_size,
                    "sentences": count,
                    "seconds_per_sentence": medians[index, 0],
                    "runs": [round(float(s), 6) for s in times[index, 0]],
                    "ratio_to_bahdanau": medians[index, 0] / medians[at, 0],
                    "round_ratio_quartiles": paired_quartiles(times[index, 0], times[at, 0]),
                    "decoded_tokens": int(tokens[index]),
                    "token_time_ratio_to_bahdanau": token_seconds[index] / token_seconds[at],
                    "all_rows_seconds_per_sentence": medians[index, -1] if kept else None,
                    "all_rows_runs": [round(float(s), 6) for s in times[index, -1]] if kept else None,
                    "all_rows_ratio_to_bahdanau": medians[index, -1] / medians[at, -1] if kept else None,
                    "decoder_steps": steps[index],
                    "seconds_per_step": step_seconds[index],
                    "step_ratio_to_bahdanau": step_seconds[index] / step_seconds[at],
                    "attended_density": run.get("test_attended_density"),
                    "attention_flops_per_token": run.get("attention_flops_per_token"),
                    "test_bleu": run.get("test_bleu"),
                    "test_exact_match": run.get("test_exact_match"),
                }
            )
    command = portable("nice -n 5 python experiments/bench_seq2seq_decode.py " + shlex.join(sys.argv[1:]))
    machine = machine_line(args.threads)
    setting = {
        "threads": args.threads,
        "warmup": args.warmup,
        "repeats": args.repeats,
        "seconds": time.time() - started,
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"decode_{args.table}.json"), "w") as handle:
        json.dump({"command": command, "machine": machine, "setting": setting, "cells": cells}, handle, indent=1)
    with open(os.path.join(args.out, f"decode_{args.table}.md"), "w") as handle:
        handle.write(readme(command, machine, args, cells))


def readme(command, machine, args, cells):
    reference = next((c for c in cells if c["attention"] == "bahdanau"), cells[0])
    flops_reference = reference["attention_flops_per_token"]
    lines = [
        f"# Greedy decoding, {args.table}: finished runs timed side by side",
        "",
        f"Command: `{command}`  ",
        f"Machine: {machine}  ",
        (
            f"Setting: one process, graph mode (`tf.function`), {args.warmup} warm-up pass per model, then "
            f"{args.repeats} rounds in which every model decodes the same test sentences once, each batch by every "
            "model in turn before the next batch (order rotating from batch to batch); "
            "median seconds per sentence. Ratios are to Bahdanau's median in the same rounds (below 1: faster); "
            "the round ratios divide each round's time by Bahdanau's in that round, and give their median and "
            "quartiles (load that slows a whole round cancels out). "
            "The first columns are the default decoder, in which rows that have ended leave the batch "
            "(`greedy_decode(..., drop_finished=True)`), so its work follows the tokens the rows produce; the "
            "time-per-token ratio divides the time by those tokens. At batch sizes above 1 the same models are "
            "also timed, in the same rounds, with every row kept to the end (`drop_finished=False`, the decoder "
            "before dropping existed): a batch then runs its decoder steps (until its last row ends) on all its "
            "rows, and the step-time ratio divides that time by the steps. Both decoders give the same outputs. "
            "Attended density and attention FLOPs per decoded token come from each run's JSON (test set): "
            "`results/seq2seq/reruns/NAME.json` where the run was trained again (`seq2seq_tables.py --rerun`)."
        ),
        "",
        "| run | batch | sentences | s/sentence | time ratio | round ratios: median [quartiles] | tokens "
        "| time-per-token ratio "
        "| all rows kept: s/sentence | time ratio | decoder steps | step-time ratio "
        "| attended density | FLOPs ratio | BLEU or exact match |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        flops = c["attention_flops_per_token"]
        flops_ratio = "-" if not flops or not flops_reference else f"{flops / flops_reference:.2f}x"
        score = f"{c['test_bleu']:.2f}" if c["test_bleu"] is not None else f"{c['test_exact_match']:.3f}"
        density = "-" if c["attended_density"] is None else f"{c['attended_density']:.3f}"
        low, middle, high = c["round_ratio_quartiles"]
        if c["all_rows_seconds_per_sentence"] is None:
            kept = "- | - | - | -"
        else:
            kept = (
                f"{c['all_rows_seconds_per_sentence']:.5f} | {c['all_rows_ratio_to_bahdanau']:.2f}x "
                f"| {c['decoder_steps']} | {c['step_ratio_to_bahdanau']:.2f}x"
            )
        lines.append(
            f"| {c['name']} | {c['batch_size']} | {c['sentences']} | {c['seconds_per_sentence']:.5f} "
            f"| {c['ratio_to_bahdanau']:.2f}x | {middle:.3f}x [{low:.3f}, {high:.3f}] "
            f"| {c['decoded_tokens']} | {c['token_time_ratio_to_bahdanau']:.2f}x "
            f"| {kept} | {density} | {flops_ratio} | {score} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
