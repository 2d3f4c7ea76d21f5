"""Greedy decoding time of finished seq2seq runs, side by side (issue 14).

    nice -n 5 python experiments/bench_seq2seq_decode.py --task multi30k --table multi30k-long --data-dir ../shared/data

Times, in one process and batch by batch with `bench.alternating`, the greedy decoders of one table's finished runs
(seed 0 of each row unless `--names` picks; models in `runs/seq2seq`). Writes `OUT/decode_TABLE.json` and `.md`.
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from experiments import bench
from experiments import provenance
from experiments import runner
from experiments import tables

MODELS = os.path.join(runner.REPO, "runs", "seq2seq")
THREADS, WARMUP, BATCH_SIZES = 2, 1, (128, 1)  # one untimed pass per model, which counts its steps and tokens


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=("multi30k", "copy"), default="multi30k")
    parser.add_argument("--table", help="a table of the seq2seq study (default: the task's: multi30k, copy)")
    parser.add_argument("--data-dir", default=os.environ.get("GANET_DATA_DIR"))
    parser.add_argument("--names", nargs="+", help="runs to compare (default: seed 0 of every table row)")
    parser.add_argument("--sentences", type=int, default=1000, help="the first N test sentences")
    parser.add_argument("--batch-one-sentences", type=int, default=100, help="sentences timed at batch size 1")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=os.path.join(runner.REPO, "results", "seq2seq"))
    args = parser.parse_args()
    args.table = args.table or args.task
    return args


def chosen_runs(args):
    """The summaries of the runs to time (their figures from `reruns/` where retrained): `--names`, or the lowest
    seed of every row with a Bahdanau one."""
    reruns = {r["name"]: r for r in runner.load_runs(os.path.join(args.out, "reruns"))}
    runs = [reruns.get(r["name"], r) for r in runner.load_runs(os.path.join(args.out, "runs"))]
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
    """`(decoder steps, tokens)` of one pass: a batch runs until its last row ends; a row's tokens run up to its end
    token, included."""
    from ganet_tf.seq2seq.vocabulary import END_ID

    steps = sum(len(outputs[start]) for start in range(0, len(outputs), batch_size))
    return steps, sum(list(row).index(END_ID) + 1 if END_ID in row else len(row) for row in outputs)


def time_decoders(models, source_ids, batch_size, repeats, drop_finished):
    """Seconds per sentence of each (model, `drop_finished`) decoder in every round, `(models, drops, rounds)`, then
    the steps and the tokens of one pass of each model (dropping ended rows leaves the outputs as they are)."""
    from ganet_tf.seq2seq.decoding import make_decoder
    from ganet_tf.seq2seq.evaluation import decode_all
    from ganet_tf.seq2seq.evaluation import decoder_batches

    decoders = [(model, make_decoder(model, drop_finished=drop)) for model in models for drop in drop_finished]
    counts = []
    for number, (model, decoder) in enumerate(decoders):
        outputs, _ = decode_all(model, source_ids, batch_size, verbose=0, decoder=decoder)
        if number % len(drop_finished) == 0:
            counts.append(pass_counts(outputs, batch_size))
    times = np.zeros([len(decoders), repeats])
    for padded, limit in decoder_batches(source_ids, batch_size):
        times += np.asarray(
            bench.alternating([lambda d=d, p=padded, n=limit: d(p, n) for _, d in decoders], 0, repeats)
        )
    times = np.reshape(times / len(source_ids), [len(models), len(drop_finished), repeats])
    return times, *zip(*counts, strict=True)


def cells(runs, times, steps, tokens, batch_size, count):
    """The cells of one batch size: each run's median seconds per sentence, its ratios to Bahdanau's (per sentence,
    per round, per token, per decoder step with every row kept) and the figures of its summary."""
    medians = np.median(times, axis=-1)
    per_token = medians[:, 0] * count / np.maximum(tokens, 1)
    per_step = medians[:, -1] * count / np.maximum(steps, 1)
    at = next((i for i, run in enumerate(runs) if run["attention"] == "bahdanau"), 0)
    kept = times.shape[1] > 1  # the all-rows-kept decoder was timed
    found = []
    for i, run in enumerate(runs):
        cell = dict(name=run["name"], attention=run["attention"], batch_size=batch_size, sentences=count)
        cell.update(seconds_per_sentence=medians[i, 0], runs=[round(float(s), 6) for s in times[i, 0]])
        cell.update(ratio_to_bahdanau=medians[i, 0] / medians[at, 0])
        cell.update(round_ratio_quartiles=bench.quartiles(times[i, 0] / times[at, 0]), decoded_tokens=int(tokens[i]))
        cell["token_time_ratio_to_bahdanau"] = per_token[i] / per_token[at]
        cell["all_rows_seconds_per_sentence"] = medians[i, -1] if kept else None
        cell["all_rows_runs"] = [round(float(s), 6) for s in times[i, -1]] if kept else None
        cell["all_rows_ratio_to_bahdanau"] = medians[i, -1] / medians[at, -1] if kept else None
        cell.update(decoder_steps=steps[i], seconds_per_step=per_step[i])
        cell["step_ratio_to_bahdanau"] = per_step[i] / per_step[at]
        cell["attended_density"] = run.get("test_attended_density")
        cell.update({key: run.get(key) for key in ("attention_flops_per_token", "test_bleu", "test_exact_match")})
        found.append(cell)
    return found


def main():
    args = parse_args()
    from ganet_tf.seq2seq.evaluation import load_run

    bench.set_threads(THREADS)
    runs, models, sources = chosen_runs(args), [], None
    for run in runs:
        folder = runner.model_folder(run, os.path.join(MODELS, run["name"]))
        _, model, (source_ids, _), _ = load_run(folder, args.data_dir)
        if sources is not None and [list(s) for s in source_ids] != sources:
            raise SystemExit(f"error: {run['name']} encodes the test sources differently from {runs[0]['name']}")
        sources = [list(s) for s in source_ids]
        models.append(model)
    started, found = time.time(), []
    for batch_size in BATCH_SIZES:
        count = args.sentences if batch_size > 1 else min(args.sentences, args.batch_one_sentences)
        # At batch size 1 no row leaves the batch early: only the default decoder is timed.
        drops = (True, False) if batch_size > 1 else (True,)
        found += cells(
            runs, *time_decoders(models, sources[:count], batch_size, args.repeats, drops), batch_size, count
        )
    setting = {"threads": THREADS, "warmup": WARMUP, "repeats": args.repeats, "seconds": time.time() - started}
    result = {"command": provenance.command("bench_seq2seq_decode.py"), "machine": bench.machine_line(THREADS)}
    result.update(setting=setting, cells=found)
    runner.write_json(os.path.join(args.out, f"decode_{args.table}.json"), result)
    with open(os.path.join(args.out, f"decode_{args.table}.md"), "w") as handle:
        handle.write(readme(result, args.table))


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


HEADERS = (
    "run | batch | sentences | s/sentence | time ratio | round ratios: median [quartiles] | tokens "
    "| time-per-token ratio "
    "| all rows kept: s/sentence | time ratio | decoder steps | step-time ratio | attended density | FLOPs ratio "
    "| BLEU or exact match"
)


def readme(result, table):
    """`decode_TABLE.md` of its JSON `result`."""
    cells = result["cells"]
    reference = next((c for c in cells if c["attention"] == "bahdanau"), cells[0])["attention_flops_per_token"]
    rows = []
    for c in cells:
        flops, kept = c["attention_flops_per_token"], ["-"] * 4
        if c["all_rows_seconds_per_sentence"] is not None:
            kept = [f"{c['all_rows_seconds_per_sentence']:.5f}", f"{c['all_rows_ratio_to_bahdanau']:.2f}x"]
            kept += [c["decoder_steps"], f"{c['step_ratio_to_bahdanau']:.2f}x"]
        rows.append(
            [c["name"], c["batch_size"], c["sentences"], f"{c['seconds_per_sentence']:.5f}"]
            + [f"{c['ratio_to_bahdanau']:.2f}x", bench.ratio(c["round_ratio_quartiles"]), c["decoded_tokens"]]
            + [f"{c['token_time_ratio_to_bahdanau']:.2f}x", *kept, tables.number(c["attended_density"], 3)]
            + ["-" if not flops or not reference else f"{flops / reference:.2f}x"]
            + [f"{c['test_bleu']:.2f}" if c["test_bleu"] is not None else f"{c['test_exact_match']:.3f}"]
        )
    lines = [f"# Greedy decoding, {table}: finished runs timed side by side", "", f"Command: `{result['command']}`  "]
    lines += [f"Machine: {result['machine']}  ", SETTING.format(**result["setting"]), ""]
    return "\n".join([*lines, *tables.grid_of(HEADERS, rows)]) + "\n"


if __name__ == "__main__":
    main()
