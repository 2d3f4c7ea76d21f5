"""Choose `seq2seq`'s subword tokenizer and vocabulary size on Multi30k
validation BLEU (issue 54).

    python experiments/subword_selection.py --data-dir ../shared/data

Candidates: SentencePiece unigram and BPE (both with byte fallback), one
joint model of 8,000 or 16,000 ids for both sides. Each trains the Bahdanau encoder-decoder, seed 0,
for a selection budget of `--epochs` (default 5) epochs with 8 length
buckets, its last epoch kept: the same budget for every candidate, shorter
than the tables' (up to 20 epochs), so that four candidates fit in an
afternoon on 2 CPU cores. Each run is `python -m ganet_tf seq2seq ...` in
its own process, resumable (`--backup-dir`); its JSON summary lands in
`RESULTS/runs/NAME.json` with the exact command and the machine, its
greedy validation BLEU in `RESULTS/selection.json` (test BLEU is recorded by
each run but plays no part in the choice), the model in the git-ignored
`runs/seq2seq_subwords/NAME`. The highest validation BLEU wins, the first
candidate below on a tie. `RESULTS/README.md` is regenerated at the end and
with `--table-only`. Several processes can share the work (`--only`): a
lock per run keeps two from training the same one.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import REPO
from runner import RunBusy
from runner import _read_json
from runner import _write_json
from runner import load_runs
from runner import run_seq2seq

# (tokenizer, joint ids), in the order that breaks ties.
CANDIDATES = (("unigram", 8000), ("bpe", 8000), ("unigram", 16000), ("bpe", 16000))
FLAGS = ["--task", "multi30k", "--attention", "bahdanau", "--seed", "0", "--buckets", "8"]
SELECTION = "selection.json"


def name_of(tokenizer, size):
    return f"bahdanau_{tokenizer}{size}_seed0"


def run_one(tokenizer, size, args, runs_dir):
    """Trains one candidate unless its summary exists; returns the summary."""
    name = name_of(tokenizer, size)
    flags = [*FLAGS, "--tokenizer", tokenizer, "--vocabulary-size", str(size), "--epochs", str(args.epochs)]
    return run_seq2seq(name, flags, os.path.join(runs_dir, f"{name}.json"), args, args.data_dir)


def score_validation(args, runs_dir):
    """Greedy validation BLEU of every finished candidate (once), and the
    choice once all are scored. Scores decoded before a translation's
    length limit was its own sentence's are decoded again (the earlier
    ones kept as `validation_bleu_batch_length_limit`)."""
    from ganet_tf.seq2seq.run import decoded_split_scores

    path = os.path.join(args.results, SELECTION)
    saved = _read_json(path) if os.path.exists(path) else {}
    bleu = saved.get("validation_bleu", {})
    earlier = saved.get("validation_bleu_batch_length_limit")
    if bleu and saved.get("decode_length_limit") != "sentence":
        earlier, bleu = bleu, {}
    for tokenizer, size in CANDIDATES:
        name = name_of(tokenizer, size)
        if name not in bleu and os.path.exists(os.path.join(runs_dir, f"{name}.json")):
            model_dir = os.path.join(args.runs_root, name)
            if os.path.isdir(model_dir):
                bleu[name] = decoded_split_scores(model_dir, "val", args.data_dir)["bleu"]
    names = [name_of(*candidate) for candidate in CANDIDATES]
    chosen = None
    if not set(names) - set(bleu):
        chosen = max(names, key=lambda name: (bleu[name], -names.index(name)))
    rule = "the highest greedy validation BLEU at seed 0 after the same epochs; the first candidate on a tie"
    selection = {"validation_bleu": bleu, "chosen": chosen, "rule": rule, "epochs": args.epochs}
    selection["decode_length_limit"] = "sentence"
    if earlier:
        selection["validation_bleu_batch_length_limit"] = earlier
    _write_json(path, selection)
    return bleu, chosen


def write_table(results):
    runs = {run["name"]: run for run in load_runs(os.path.join(results, "runs"))}
    path = os.path.join(results, SELECTION)
    selection = _read_json(path) if os.path.exists(path) else {"validation_bleu": {}, "chosen": None}
    lines = [
        "# Subword vocabularies for seq2seq: the choice (Multi30k de→en)",
        "",
        "Bahdanau encoder-decoder, seed 0, the same epochs for every candidate",
        "(a selection budget, shorter than the tables' runs), 8 length buckets,",
        "last epoch kept. Validation BLEU (greedy, sacrebleu on detokenised",
        "text) chooses; test BLEU is shown but plays no part. s/epoch and",
        "decode s/sent are each run's own wall-clock under whatever else the",
        "machine ran then (other runs, the test suite): not a speed comparison.",
        "Validation BLEU is decoded with each sentence's own length limit; the",
        "test BLEU is each run's own, decoded when a batch's longest source",
        "set the limit (it differs only for translations that never end).",
        f"Chosen: **{selection.get('chosen') or 'not yet (candidates missing)'}**.",
        "",
        "| tokenizer | joint ids | epochs | validation BLEU | test BLEU | test perplexity | s/epoch | decode s/sent |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for tokenizer, size in CANDIDATES:
        name = name_of(tokenizer, size)
        run = runs.get(name)
        if run is None:
            lines.append(f"| {tokenizer} | {size} | - | - | - | - | - | - |")
            continue
        bleu = selection["validation_bleu"].get(name)
        lines.append(
            f"| {tokenizer} | {run['target_vocabulary']} | {run['epochs_trained']} | "
            f"{'-' if bleu is None else f'{bleu:.2f}'} | {run['test_bleu']:.2f} | {run['test_perplexity']:.3f} | "
            f"{run['seconds_per_epoch']:.0f} | {run['decode_seconds_per_sentence']:.4f} |"
        )
    lines += ["", "## Runs", "", *(f"- `{run['command']}` ({run['machine']})" for run in runs.values())]
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, "README.md"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("GANET_DATA_DIR"))
    parser.add_argument("--results", default=os.path.join(REPO, "results", "seq2seq_subwords"))
    parser.add_argument("--runs-root", default=os.path.join(REPO, "runs", "seq2seq_subwords"))
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--only", nargs="*", help="candidate names to train (default: all)")
    parser.add_argument("--limit", type=int, help="smoke runs: the first N pairs of each split")
    parser.add_argument("--hidden", type=int, help="smoke runs: encoder units and embedding size")
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args()
    runs_dir = os.path.join(args.results, "runs")
    if not args.table_only:
        if not args.data_dir:
            raise SystemExit("error: pass --data-dir (or set GANET_DATA_DIR)")
        os.makedirs(runs_dir, exist_ok=True)
        for tokenizer, size in CANDIDATES:
            if args.only and name_of(tokenizer, size) not in args.only:
                continue
            try:
                run_one(tokenizer, size, args, runs_dir)
            except RunBusy:
                print(f"    {name_of(tokenizer, size)}: another process is training it, skipped", flush=True)
                continue
            score_validation(args, runs_dir)
            write_table(args.results)
    write_table(args.results)


if __name__ == "__main__":
    main()
