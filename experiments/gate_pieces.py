"""Which subword pieces do a finished gated seq2seq run's gates open?

    python experiments/gate_pieces.py --data-dir ../shared/data \
        --names multi30k-subwords_gated-states_seed0 multi30k-subwords_gated-states_seed1

Loads each run's model from `runs/seq2seq/NAME` (as `seq2seq_tables.py`
leaves it), encodes the run's test sources and reads the binary test gates
(the source states decoding attends to). It splits the pieces by their
place in a word (`ganet_tf.seq2seq.source_explanations.word_begins`, which
`translate --explain` reads too): a word of one piece, the first piece of a
longer word, a later piece of one, a punctuation piece;
and counts the words the open pieces reach, beside the same number of
pieces opened at random in each sentence. Writes
`results/seq2seq/gates_<names' table>.md` and `.json`.
"""

import collections
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "experiments"))

from seq2seq_analysis import analysis_parser  # noqa: E402
from seq2seq_analysis import finished_runs  # noqa: E402
from seq2seq_analysis import recorded_command  # noqa: E402
from seq2seq_analysis import write_tables  # noqa: E402

from runner import machine  # noqa: E402

KINDS = ("whole word", "first piece", "later piece", "punctuation")
FREQUENT = 12  # the most frequent test pieces listed with their open share


def piece_kinds(pieces):
    """Each piece's place in its word, one of `KINDS`."""
    from ganet_tf.seq2seq.source_explanations import WORD_START
    from ganet_tf.seq2seq.source_explanations import word_begins

    begins = word_begins(pieces) + [True]
    kinds = []
    for index, piece in enumerate(pieces):
        text = piece.lstrip(WORD_START)
        if text and not any(character.isalnum() for character in text):
            kinds.append("punctuation")
        elif begins[index]:
            kinds.append("whole word" if begins[index + 1] else "first piece")
        else:
            kinds.append("later piece")
    return kinds


def gate_stats(rows, draws=20, seed=0):
    """Over sentences, each `(pieces, open)` (a list of pieces and a bool
    array, whether each piece's test gate is open): the open share of
    every piece kind and overall; `words_reached`, the share of words (and
    marks) with at least one open piece, and `words_reached_at_random`, the
    same with as many pieces opened at random in each sentence (the mean of
    `draws` draws); for words of two or more pieces, the shares wholly open
    and wholly closed; the open share of the `FREQUENT` most frequent pieces."""
    import numpy as np

    from ganet_tf.seq2seq.source_explanations import word_spans

    rng = np.random.default_rng(seed)
    opened, seen = collections.Counter(), collections.Counter()
    by_piece, piece_count = collections.Counter(), collections.Counter()
    words = reached = random_reached = long_words = all_open = all_closed = 0
    for pieces, gates in rows:
        for kind, piece, gate in zip(piece_kinds(pieces), pieces, gates, strict=True):
            seen[kind] += 1
            opened[kind] += int(gate)
            piece_count[piece] += 1
            by_piece[piece] += int(gate)
        spans = word_spans(pieces)
        words += len(spans)
        reached += sum(gates[begin:end].any() for begin, end in spans)
        for _ in range(draws):
            drawn = np.zeros(len(pieces), bool)
            drawn[rng.choice(len(pieces), size=int(gates.sum()), replace=False)] = True
            random_reached += sum(drawn[begin:end].any() for begin, end in spans) / draws
        for begin, end in spans:
            if end - begin > 1:
                long_words += 1
                all_open += bool(gates[begin:end].all())
                all_closed += not gates[begin:end].any()
    total = sum(seen.values())
    return {
        "sentences": len(rows),
        "pieces": total,
        "open_share": sum(opened.values()) / max(total, 1),
        "kinds": {kind: {"pieces": seen[kind], "open_share": opened[kind] / max(seen[kind], 1)} for kind in KINDS},
        "words": words,
        "words_reached": float(reached / max(words, 1)),
        "words_reached_at_random": float(random_reached / max(words, 1)),
        "multi_piece_words": long_words,
        "multi_piece_all_open": all_open / max(long_words, 1),
        "multi_piece_all_closed": all_closed / max(long_words, 1),
        "frequent": [
            {"piece": piece, "count": count, "open_share": by_piece[piece] / count}
            for piece, count in piece_count.most_common(FREQUENT)
        ],
    }


def run_gates(run_dir, data_dir, batch_size=200):
    """A finished gated subword run's test sentences, each `(pieces, open)`
    under the run's test gates (`gate_stats`' rows)."""
    from ganet_tf.seq2seq.run import load_run
    from ganet_tf.seq2seq.source_explanations import source_gates

    _, model, ids, *_, vocabularies = load_run(run_dir, data_dir, with_pairs=True)
    pieces = vocabularies[0].pieces
    return [([pieces[i] for i in row], row_open) for row, row_open in source_gates(model, ids[0], batch_size)]


def check_names(args):
    """Every name: a finished gated subword run whose model is still there."""

    def problem(run):
        if run["attention"] == "gated" and run.get("tokenizer") in ("bpe", "unigram"):
            return None
        return "is not a gated subword run; give --attention gated --tokenizer bpe runs"

    finished_runs(args, args.names, problem)


def readme(table, rows):
    lines = [
        f"# Which subword pieces the gates open, {table} (test sentences)",
        "",
        f"Machine: {machine()}. Commands: below the tables.",
        "",
        "A word: a piece SentencePiece marks as a word's first (U+2581) and the pieces after it, up to a",
        "punctuation piece, which is a unit of its own (`hierarchy_levels.word_begins`). Open share: the",
        "share of the pieces of each kind whose test gate is open. Words reached: the share of words and",
        "marks with at least one open piece; at random: the same with as many pieces of each sentence",
        "opened at random (the mean of 20 draws). Words of 2+ pieces: the shares wholly open and wholly",
        "closed.",
        "",
        "| run | pieces | open | " + " | ".join(f"open: {kind}" for kind in KINDS) + " | words reached | at random "
        "| words of 2+ pieces | wholly open | wholly closed |",
        "|---|" + "---|" * (7 + len(KINDS)),
    ]
    for r in rows:
        kinds = " | ".join(f"{r['kinds'][kind]['open_share']:.3f} ({r['kinds'][kind]['pieces']})" for kind in KINDS)
        lines.append(
            f"| {r['run']} | {r['pieces']} | {r['open_share']:.3f} | {kinds} | {r['words_reached']:.3f} | "
            f"{r['words_reached_at_random']:.3f} | {r['multi_piece_words']} | {r['multi_piece_all_open']:.3f} | "
            f"{r['multi_piece_all_closed']:.3f} |"
        )
    lines += ["", f"The {FREQUENT} most frequent test pieces, open share (count):", ""]
    lines += ["| run | " + " | ".join(str(i + 1) for i in range(FREQUENT)) + " |", "|---|" + "---|" * FREQUENT]
    for r in rows:
        cells = " | ".join(f"`{f['piece']}` {f['open_share']:.2f} ({f['count']})" for f in r["frequent"])
        lines.append(f"| {r['run']} | {cells} |")
    return lines


def main(argv=None):
    args = analysis_parser(__doc__.splitlines()[0]).parse_args(argv)
    check_names(args)
    command = recorded_command("gate_pieces.py", argv)
    table = args.names[0].split("_")[0]
    rows = []
    for name in args.names:
        sentences = run_gates(os.path.join(args.runs_root, name), args.data_dir)
        rows.append({"run": name, **gate_stats(sentences), "command": command})
    write_tables(args.out, f"gates_{table}", rows, readme(table, rows))


if __name__ == "__main__":
    main()
