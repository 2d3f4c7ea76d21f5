"""Greedy decoding time of finished seq2seq runs, side by side (issue 14).

    nice -n 5 python experiments/bench_seq2seq_decode.py --task multi30k --table multi30k-long --data-dir ../shared/data

A run's own decode time is taken under whatever else the machine ran: this
times the greedy decoders of one table's finished runs (seed 0 of each row
unless `--names` picks; their models in `runs/seq2seq`, their figures in
`results/seq2seq/reruns` or `runs`) in one process, batch by batch with
`bench.alternating`. Writes `OUT/decode_TABLE.json` and `.md`.
"""

import argparse
import json
import os
import shlex
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from experiments.bench import alternating
from experiments.bench import machine_line
from experiments.bench import quartiles
from experiments.bench import set_threads
from experiments.runner import REPO
from experiments.runner import load_runs
from experiments.runner import portable


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=("multi30k", "copy"), default="multi30k")
    parser.add_argument("--table", help="a table of the seq2seq study (default: the task's: multi30k, copy)")
    parser.add_argument("--data-dir", default=os.environ.get("GANET_DATA_DIR"))
    parser.add_argument("--names", nargs="+", help="runs to compare (default: seed 0 of every table row)")
    parser.add_argument("--sentences", type=int, default=1000, help="the first N test sentences")
    parser.add_argument("--batch-size", type=int, nargs="+", default=[128, 1])
    parser.add_argument("--batch-one-sentences", type=int, default=100, help="sentences timed at batch size 1")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1, help="untimed passes per model (the first counts steps)")
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads (inter-op: 1)")
    parser.add_argument("--runs-root", default=os.path.join(REPO, "runs", "seq2seq"))
    parser.add_argument("--out", default=os.path.join(REPO, "results", "seq2seq"))
    args = parser.parse_args()
    if args.warmup < 1:
        parser.error(f"--warmup must be at least 1 (the first pass counts the decoder steps); got {args.warmup}")
    args.table = args.table or args.task
    return args


def chosen_runs(args):
    """The summaries of the runs to time: `--names`, or the lowest seed of every row with a Bahdanau one."""
    reruns = {r["name"]: r for r in load_runs(os.path.join(args.out, "reruns"))}
    runs = [reruns.get(r["name"], r) for r in load_runs(os.path.join(args.out, "runs"))]
    runs = [r for r in runs if r["name"].split("_")[0] == args.table]
    if args.names:
        missing = sorted(set(args.names) - {r["name"] for r in runs})
        if missing:
            raise SystemExit(f"error: no finished run named {', '.join(missing)} in {args.out}/runs")
        return [r for r in runs if r["name"] in args.names]
    rows = {}
    for run in sorted(runs, key=lambda r: r["seed"]):
        rows.setdefault(run["name"].rsplit("_seed", 1)[0], run)
    if not any(run["attention"] == "bahdanau" for run in rows.values()):
        raise SystemExit(f"error: no finished {args.table} Bahdanau run to compare with in {args.out}/runs")
    return list(rows.values())


def pass_counts(outputs, batch_size):
    """`(decoder steps, tokens)` of one pass: a batch runs until its last row
    ends (every row is as wide as its batch's steps); a row's tokens run up to
    its end token, included."""
    from ganet_tf.seq2seq.vocabulary import END_ID

    steps = sum(len(outputs[start]) for start in range(0, len(outputs), batch_size))
    return steps, sum(list(row).index(END_ID) + 1 if END_ID in row else len(row) for row in outputs)


def time_decoders(models, source_ids, batch_size, args, drop_finished):
    """Seconds per sentence of each (model, `drop_finished`) decoder in every
    round, `(models, drops, rounds)`, then the steps and the tokens of one
    pass of each model (dropping ended rows leaves the outputs as they are)."""
    from ganet_tf.seq2seq.decoding import make_decoder
    from ganet_tf.seq2seq.run import decode_all
    from ganet_tf.seq2seq.run import decoder_batches

    decoders = [(model, make_decoder(model, drop_finished=drop)) for model in models for drop in drop_finished]
    counts = []
    for number, (model, decoder) in enumerate(decoders):
        for warmup in range(args.warmup):
            outputs, _ = decode_all(model, source_ids, batch_size, verbose=0, decoder=decoder)
            if warmup == 0 and number % len(drop_finished) == 0:
                counts.append(pass_counts(outputs, batch_size))
    times = np.zeros([len(decoders), args.repeats])
    for padded, limit in decoder_batches(source_ids, batch_size):
        calls = [lambda d=decoder, p=padded, n=limit: d(p, n) for _, decoder in decoders]
        times += np.asarray(alternating(calls, 0, args.repeats))
    times = np.reshape(times / len(source_ids), [len(models), len(drop_finished), args.repeats])
    return times, *zip(*counts, strict=True)


def cells(runs, times, steps, tokens, batch_size, count):
    """The table's cells of one batch size: each run's median seconds per
    sentence, its ratios to Bahdanau's (per sentence, per round, per token,
    per decoder step with every row kept) and the figures of its summary."""
    medians = np.median(times, axis=-1)
    per_token = medians[:, 0] * count / np.maximum(tokens, 1)
    per_step = medians[:, -1] * count / np.maximum(steps, 1)
    at = next((i for i, run in enumerate(runs) if run["attention"] == "bahdanau"), 0)
    kept = times.shape[1] > 1  # the all-rows-kept decoder was timed
    found = []
    for index, run in enumerate(runs):
        found.append(
            {
                "name": run["name"],
                "attention": run["attention"],
                "batch_size": batch_size,
                "sentences": count,
                "seconds_per_sentence": medians[index, 0],
                "runs": [round(float(s), 6) for s in times[index, 0]],
                "ratio_to_bahdanau": medians[index, 0] / medians[at, 0],
                "round_ratio_quartiles": quartiles(times[index, 0] / times[at, 0]),
                "decoded_tokens": int(tokens[index]),
                "token_time_ratio_to_bahdanau": per_token[index] / per_token[at],
                "all_rows_seconds_per_sentence": medians[index, -1] if kept else None,
                "all_rows_runs": [round(float(s), 6) for s in times[index, -1]] if kept else None,
                "all_rows_ratio_to_bahdanau": medians[index, -1] / medians[at, -1] if kept else None,
                "decoder_steps": steps[index],
                "seconds_per_step": per_step[index],
                "step_ratio_to_bahdanau": per_step[index] / per_step[at],
                "attended_density": run.get("test_attended_density"),
                "attention_flops_per_token": run.get("attention_flops_per_token"),
                "test_bleu": run.get("test_bleu"),
                "test_exact_match": run.get("test_exact_match"),
            }
        )
    return found


def main():
    args = parse_args()
    from ganet_tf.seq2seq.run import load_run

    set_threads(args.threads)
    runs, models, sources = chosen_runs(args), [], None
    for run in runs:
        _, model, (source_ids, _), _ = load_run(os.path.join(args.runs_root, run["name"]), args.data_dir)
        if sources is not None and [list(s) for s in source_ids] != sources:
            raise SystemExit(f"error: {run['name']} encodes the test sources differently from {runs[0]['name']}")
        sources = [list(s) for s in source_ids]
        models.append(model)
    started, found = time.time(), []
    for batch_size in args.batch_size:
        count = args.sentences if batch_size > 1 else min(args.sentences, args.batch_one_sentences)
        # At batch size 1 no row leaves the batch early: only the default decoder is timed.
        drop_finished = (True, False) if batch_size > 1 else (True,)
        found += cells(
            runs, *time_decoders(models, sources[:count], batch_size, args, drop_finished), batch_size, count
        )
    command = portable("nice -n 5 python experiments/bench_seq2seq_decode.py " + shlex.join(sys.argv[1:]))
    setting = {"threads": args.threads, "warmup": args.warmup, "repeats": args.repeats}
    result = {"command": command, "machine": machine_line(args.threads), "setting": setting, "cells": found}
    result["setting"]["seconds"] = time.time() - started
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"decode_{args.table}.json"), "w") as handle:
        json.dump(result, handle, indent=1)
    with open(os.path.join(args.out, f"decode_{args.table}.md"), "w") as handle:
        handle.write("\n".join(readme(result, args)) + "\n")


SETTING = (
    "Setting: one process, graph mode (`tf.function`), {warmup} warm-up pass per model, then each batch of the "
    "test sentences decoded by every model in {repeats} rounds (`bench.alternating`: in turn, the order reversed "
    "every other round); a round's time sums its batches; median seconds per sentence. Ratios are to Bahdanau's "
    "median (below 1: faster); round ratios: the median [quartiles] of each round's time over Bahdanau's in it. "
    "The first columns are the default decoder, from whose batch ended rows leave (`drop_finished=True`); the "
    "time-per-token ratio divides its time by the tokens the rows produce. At batches above 1, also every row "
    "kept to the end (`drop_finished=False`), whose step-time ratio divides the time by the decoder steps (a "
    "batch runs until its last row ends). Both give the same outputs. Attended density and attention FLOPs per "
    "decoded token: each run's JSON (test set), `results/seq2seq/reruns/NAME.json` where it was trained again."
)


def readme(result, args):
    cells = result["cells"]
    flops_reference = next((c for c in cells if c["attention"] == "bahdanau"), cells[0])["attention_flops_per_token"]
    lines = [
        f"# Greedy decoding, {args.table}: finished runs timed side by side",
        "",
        f"Command: `{result['command']}`  ",
        f"Machine: {result['machine']}  ",
        SETTING.format(warmup=args.warmup, repeats=args.repeats),
        "",
        "| run | batch | sentences | s/sentence | time ratio | round ratios: median [quartiles] | tokens "
        "| time-per-token ratio | all rows kept: s/sentence | time ratio | decoder steps | step-time ratio "
        "| attended density | FLOPs ratio | BLEU or exact match |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        flops = c["attention_flops_per_token"]
        flops_ratio = "-" if not flops or not flops_reference else f"{flops / flops_reference:.2f}x"
        score = f"{c['test_bleu']:.2f}" if c["test_bleu"] is not None else f"{c['test_exact_match']:.3f}"
        density = "-" if c["attended_density"] is None else f"{c['attended_density']:.3f}"
        low, middle, high = c["round_ratio_quartiles"]
        kept = "- | - | - | -"
        if c["all_rows_seconds_per_sentence"] is not None:
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
    return lines


if __name__ == "__main__":
    main()
