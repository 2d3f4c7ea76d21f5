"""Analyses of finished seq2seq runs (models under `runs/seq2seq`) into `OUT/STEM_TABLE.json` and the blocks of its
`.md` (TABLE: the first name's table): `levels` (the nodes of each level of a hierarchy), `gates` (which subword
pieces and word classes the test gates open), earlier rows of both kept, `densities` (validation BLEU at other test
densities).

    python -m experiments.seq2seq_analysis levels|gates|densities --data-dir DIR --names RUN ... [--reference RUN ...]
"""

import argparse
import collections
import itertools
import os
import re

import numpy as np

from experiments import provenance
from experiments import runner
from experiments import tables
from experiments.tables import grid
from experiments.tables import number

LONG = 10  # tokens: the sentences issue 40 asks a level 2 of more than one node of
KINDS = ("whole word", "first piece", "later piece", "punctuation")
FREQUENT = 12  # the most frequent test pieces listed with their open share
DENSITIES = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)
# `nucleus` test gates: each sentence opens its fewest most probable tokens holding pi of its gate mass, so the
# amount is the sentence's own (issue 63's per-sentence amount), measured without retraining beside top_k.
MASSES = (0.5, 0.6, 0.7)
BATCH = 128  # validation decoding's batch (`densities`)
# German closed-class words (articles, prepositions and their contractions, conjunctions, pronouns, auxiliaries,
# negation): `gates` splits the open share of words into these, punctuation and the rest (content words), the classes
# L0Drop reports its pruning by.
FUNCTION_WORDS = frozenset(
    """der die das den dem des ein eine einen einem einer eines kein keine in im ins auf an am ans mit von vom zu zum
    zur bei beim aus nach über unter vor hinter neben zwischen durch für gegen ohne um entlang bis seit gegenüber
    während als wie und oder aber sowie dass weil wenn ob denn sondern er sie es ihr ihm ihn ihre ihren ihrem ihrer
    ihres sein seine seinen seinem seiner seines sich man wir ich du uns jemand etwas dieser diese dieses diesem
    diesen jeder jede jedes jedem jeden ist sind wird werden hat haben war waren nicht""".split()
)
WORD_CLASSES = ("function word", "content word", "punctuation")


def _earlier_rows(args, stem, named):
    """The rows of `OUT/STEM_TABLE.json` of runs other than `named` (they stay in the table)."""
    path = os.path.join(args.out, f"{stem}_{args.table}.json")
    return [row for row in runner.read_json(path, {"rows": []})["rows"] if row["run"] not in named]


def finished_runs(args, fits):
    """Exits, before any model loads, unless every run named is finished, its model there, and each of `--names`
    `fits`; `args.models`: each run's model folder."""
    runs = {r["name"]: r for r in runner.load_runs(os.path.join(args.out, "runs"))}
    args.models = {}
    for name in [*args.names, *args.reference]:
        folder = runner.model_folder(runs.get(name, {}), os.path.join(args.runs_root, name))
        if name not in runs or not os.path.isdir(folder):
            raise SystemExit(f"error: {name} is no finished run in {args.out}/runs with its model in {folder}")
        args.models[name] = folder
        if name in args.names and not fits(runs[name]):
            raise SystemExit(f"error: {name} is not a run that `{args.analysis}` analyses")


def _machine(text):
    return [f"Machine: {provenance.machine()}. {text}"]


def _shares(row, keys, digits=3):
    return [number(row.get(key), digits) for key in keys]


def level_stats(run_dir, data_dir, batch_size=200):
    """`(config, stats)` of a hierarchical run on its test sources (`levels_TABLE.md` explains them); a subword run's
    ACT blocks add `word_stats`."""
    from ganet_tf.seq2seq import source_explanations as explained
    from ganet_tf.seq2seq.evaluation import load_run
    from ganet_tf.seq2seq.source_words import word_begins

    config, model, ids, *_, vocabularies = load_run(run_dir, data_dir, with_pairs=True)
    counts, sizes, largest, block_starts = [], [], [], []
    for nodes, block, starts in explained.source_levels(model, ids[0], batch_size):
        counts.append(nodes)
        if len(nodes) > 1:
            sizes.append(block)
            largest.append(block.max(initial=0))
            block_starts += [starts] if model.attention == "hier-act" else []  # learned block starts
    counts = np.stack(counts)  # (sentences, levels)
    sizes = np.concatenate(sizes) if sizes else np.zeros(0)
    stats = {"nodes": counts.mean(0).tolist(), "sentences": len(counts)}
    if counts.shape[1] > 1:
        long = counts[counts[:, 0] >= LONG]
        stats["level1_share"] = float(np.mean(counts[:, 1] / counts[:, 0]))
        stats["block_size_mean"], stats["block_size_std"] = float(sizes.mean()), float(sizes.std())
        stats["token_block_size"] = float(np.sum(sizes.astype("float64") ** 2) / np.sum(sizes))
        stats["largest_block"] = float(np.mean(largest))
        stats["long_sentences"], stats["long_level1"] = len(long), float(long[:, 1].mean())
    if counts.shape[1] > 2:
        stats["long_level2"] = float(long[:, 2].mean())
        stats["long_level2_between"] = float(np.mean((long[:, 2] > 1) & (long[:, 2] < long[:, 1])))
    if config.tokenizer in ("bpe", "unigram") and block_starts:
        pieces = vocabularies[0].pieces
        stats.update(word_stats(block_starts, [word_begins([pieces[i] for i in row]) for row in ids[0]]))
    return config, stats


def word_stats(block_starts, word_starts, draws=20, seed=0):
    """Do ACT blocks of subwords follow words? From each sentence's level-1 block starts and whether each token begins
    a word: the shares `levels_TABLE.md` explains."""
    rng = np.random.default_rng(seed)
    at_word = starts = word_tokens = tokens = split = random_split = long_words = 0
    for blocks, words in zip(block_starts, word_starts, strict=True):
        inner = {int(start) for start in blocks if 0 < start < len(words)}
        starts += len(inner)
        at_word += sum(words[start] for start in inner)
        tokens += len(words) - 1
        word_tokens += sum(words[1:])
        first = [i for i, begins in enumerate(words) if begins or i == 0] + [len(words)]
        spans = [(begin, end) for begin, end in itertools.pairwise(first) if end - begin > 1]
        long_words += len(spans)
        split += sum(any(begin < start < end for start in inner) for begin, end in spans)
        for _ in range(draws):
            drawn = rng.choice(np.arange(1, len(words)), size=len(inner), replace=False) if inner else []
            random_split += sum(any(begin < start < end for start in drawn) for begin, end in spans) / draws
    return {
        "block_start_at_word": at_word / max(starts, 1),
        "token_at_word": word_tokens / max(tokens, 1),
        "words_split": split / max(long_words, 1),
        "words_split_at_random": random_split / max(long_words, 1),
        "multi_piece_words": long_words,
    }


def checks(row):
    """Issue 40's Done-when for ACT, or None where it does not apply."""
    if "level1_share" not in row or "long_level2" not in row:
        return None
    return {
        "level 1 between T/6 and T/2": 1 / 6 <= row["level1_share"] <= 1 / 2,
        f"level 2 on sentences of >= {LONG} tokens: 1 < nodes < level 1": 1 < row["long_level2"] < row["long_level1"],
        "block size std >= 0.5": row["block_size_std"] >= 0.5,
    }


def levels(args, command):
    rows = _earlier_rows(args, "levels", args.names)
    for name in args.names:
        config, stats = level_stats(args.models[name], args.data_dir)
        rows.append({"run": name, "attention": config.attention, "levels": config.levels, **stats, "command": command})
    for row in rows:
        row["checks"] = checks(row)
    return rows, levels_readme(rows)


def levels_readme(rows):
    """The blocks of `levels_TABLE.md`: the levels, the words of subword runs and the checks where rows have them."""
    headers = "run | L | nodes per level (0, 1, ...) | level 1 / T | long: n | long: level 1 | long: level 2 | long: 1 "
    headers += "< level 2 < level 1 | block size mean | block size std | block size per token | largest block"
    table = [
        [r["run"], str(r["levels"]), ", ".join(f"{c:.2f}" for c in r["nodes"]), number(r.get("level1_share"), 3)]
        + [str(r.get("long_sentences", "-")), *_shares(r, ("long_level1", "long_level2"), 2)]
        + _shares(r, ("long_level2_between",))
        + _shares(r, ("block_size_mean", "block_size_std", "token_block_size", "largest_block"), 2)
        for r in rows
    ]
    blocks = {"machine": _machine("Commands: below the table."), "table": grid(headers, table)}
    if words := [r for r in rows if r.get("block_start_at_word") is not None]:
        headers = "run | block starts on a word | tokens on a word | words of 2+ pieces | words cut | at random"
        cells = [
            [r["run"], *_shares(r, ("block_start_at_word", "token_at_word")), str(r["multi_piece_words"])]
            + _shares(r, ("words_split", "words_split_at_random"))
            for r in words
        ]
        blocks["words"] = grid(headers, cells)
    if checked := [r for r in rows if r.get("checks")]:
        blocks["checks"] = [
            f"- {r['run']}: " + "; ".join(f"{name}: {'met' if ok else 'NOT met'}" for name, ok in r["checks"].items())
            for r in checked
        ]
    return blocks


def piece_kinds(pieces):
    """Each piece's place in its word, one of `KINDS`."""
    from ganet_tf.seq2seq import source_words

    begins = [*source_words.word_begins(pieces), True]
    kinds = []
    for index, piece in enumerate(pieces):
        if source_words.is_punctuation(piece):
            kinds.append("punctuation")
        else:
            kinds.append(("whole word" if begins[index + 1] else "first piece") if begins[index] else "later piece")
    return kinds


def word_class(pieces):
    """One of `WORD_CLASSES` for the pieces of one word or mark (`source_words.word_spans`)."""
    from ganet_tf.seq2seq import source_words

    if all(source_words.is_punctuation(piece) for piece in pieces):
        return "punctuation"
    text = "".join(pieces).replace(source_words.WORD_START, "")
    return "function word" if text.lower() in FUNCTION_WORDS else "content word"


def gate_stats(rows, draws=20, seed=0):
    """The figures of `gates_TABLE.md` over sentences `(pieces, open)`."""
    from ganet_tf.seq2seq.source_explanations import word_spans

    rng = np.random.default_rng(seed)
    opened, seen, by_piece, piece_count = (collections.Counter() for _ in range(4))
    class_words, class_open = collections.Counter(), collections.Counter()
    words = reached = random_reached = long_words = all_open = all_closed = 0
    for pieces, gates in rows:
        for kind, piece, gate in zip(piece_kinds(pieces), pieces, gates, strict=True):
            seen[kind], opened[kind] = seen[kind] + 1, opened[kind] + int(gate)
            piece_count[piece], by_piece[piece] = piece_count[piece] + 1, by_piece[piece] + int(gate)
        spans = word_spans(pieces)
        words += len(spans)
        for begin, end in spans:
            word, opened_word = word_class(pieces[begin:end]), int(gates[begin:end].any())
            class_words[word], class_open[word] = class_words[word] + 1, class_open[word] + opened_word
            reached += opened_word
        for _ in range(draws):
            drawn = np.zeros(len(pieces), bool)
            drawn[rng.choice(len(pieces), size=int(gates.sum()), replace=False)] = True
            random_reached += sum(drawn[begin:end].any() for begin, end in spans) / draws
        multi = [gates[begin:end] for begin, end in spans if end - begin > 1]
        long_words += len(multi)
        all_open += sum(bool(span.all()) for span in multi)
        all_closed += sum(not span.any() for span in multi)
    total = sum(seen.values())
    return {
        "sentences": len(rows),
        "pieces": total,
        "open_share": sum(opened.values()) / max(total, 1),
        "kinds": {kind: {"pieces": seen[kind], "open_share": opened[kind] / max(seen[kind], 1)} for kind in KINDS},
        "words": words,
        "words_reached": float(reached / max(words, 1)),
        "words_reached_at_random": float(random_reached / max(words, 1)),
        "word_classes": {
            word: {"words": class_words[word], "open_share": class_open[word] / max(class_words[word], 1)}
            for word in WORD_CLASSES
        },
        "multi_piece_words": long_words,
        "multi_piece_all_open": all_open / max(long_words, 1),
        "multi_piece_all_closed": all_closed / max(long_words, 1),
        "frequent": [
            {"piece": piece, "count": count, "open_share": by_piece[piece] / count}
            for piece, count in piece_count.most_common(FREQUENT)
        ],
    }


def gates(args, command):
    from ganet_tf.seq2seq.evaluation import load_run
    from ganet_tf.seq2seq.source_explanations import source_gates

    rows = _earlier_rows(args, "gates", args.names)
    for name in args.names:
        _, model, ids, *_, vocabularies = load_run(args.models[name], args.data_dir, with_pairs=True)
        pieces = vocabularies[0].pieces
        sentences = [([pieces[i] for i in row], row_open) for row, row_open in source_gates(model, ids[0], 200)]
        rows.append({"run": name, **gate_stats(sentences), "command": command})
    return rows, gates_readme(rows)


def gates_readme(rows):
    """The blocks of `gates_TABLE.md`: open shares by kind of piece, then of the most frequent pieces."""
    headers = ["run", "pieces", "open", *(f"open: {kind}" for kind in KINDS), "words reached", "at random"]
    table = [
        [r["run"], str(r["pieces"]), f"{r['open_share']:.3f}"]
        + [f"{r['kinds'][kind]['open_share']:.3f} ({r['kinds'][kind]['pieces']})" for kind in KINDS]
        + [*_shares(r, ("words_reached", "words_reached_at_random")), str(r["multi_piece_words"])]
        + _shares(r, ("multi_piece_all_open", "multi_piece_all_closed"))
        for r in rows
    ]
    frequent = [
        [r["run"], *(f"`{f['piece']}` {f['open_share']:.2f} ({f['count']})" for f in r["frequent"])] for r in rows
    ]
    classes = [
        [r["run"], *(f"{c['open_share']:.3f} ({c['words']})" for c in map(r["word_classes"].get, WORD_CLASSES))]
        for r in rows
        if "word_classes" in r  # rows written before the classes were counted
    ]
    return {
        "classes": grid(["run", "open: function words", "content words", "punctuation marks"], classes),
        "machine": _machine("Commands: below the tables."),
        "table": grid([*headers, "words of 2+ pieces", "wholly open", "wholly closed"], table),
        "frequent": grid(["run", *(str(i + 1) for i in range(FREQUENT))], frequent),
    }


def validation_bleu(run_dir, data_dir, rules=()):
    """`(own density, {rule: (BLEU, open share)})`, greedy on validation, at the run's own test gates (`("top_k",
    own)`; None for a run without gates, own None) and at each `(mode, value)` of `rules` (`("top_k", rho)`,
    `("nucleus", pi)`)."""
    from ganet_tf.seq2seq import evaluation
    from ganet_tf.seq2seq.run_translator import with_translation_gates
    from ganet_tf.seq2seq.scores import corpus_bleu
    from ganet_tf.seq2seq.source_explanations import source_gates

    _, model, ids, _, pairs, vocabularies = evaluation.load_run(run_dir, data_dir, "val", with_pairs=True)
    own = model.gate_sampler.inference_density if model.attention == "gated" else None
    if rules and model.gate_sampler.inference_mode != "top_k":
        raise SystemExit(f"error: {run_dir} has {model.gate_sampler.inference_mode} test gates; rho needs top_k")
    results = {}
    for rule in dict.fromkeys([("top_k", own) if own is not None else None, *rules]):
        if rule is not None:  # the rule is read when the decoder is traced
            parameter = "inference_density" if rule[0] == "top_k" else "inference_mass"
            with_translation_gates(model, {"inference_mode": rule[0], parameter: rule[1]}, run_dir)
        decoded, _ = evaluation.decode_all(model, ids[0], BATCH, verbose=0)
        sentences = source_gates(model, ids[0], BATCH)
        opened = sum(int(row_open.sum()) for _, row_open in sentences)
        bleu = corpus_bleu(vocabularies[1].decode(decoded), pairs[1])
        results[rule] = (bleu, opened / sum(len(row) for row, _ in sentences))
    return own, results


def densities(args, command):
    """Rows of the runs named; the rows of other runs already in the table's JSON stay (a new run is scored alone)."""
    rows = _earlier_rows(args, "test_densities", {*args.names, *args.reference})
    for name in [*args.names, *args.reference]:
        rules = [("top_k", rho) for rho in DENSITIES] + [("nucleus", pi) for pi in MASSES] if name in args.names else []
        own, scores = validation_bleu(args.models[name], args.data_dir, rules)
        # A reference's one rule (None) first, then top_k's, then nucleus', each by its value.
        order = {rule: (0, 0.0) if rule is None else (1 + (rule[0] != "top_k"), rule[1]) for rule in scores}
        for rule, (bleu, open_share) in sorted(scores.items(), key=lambda item: order[item[0]]):
            mode, value = rule or (None, None)
            row = {"run": name, "rule": mode, "density": value if mode == "top_k" else None}
            row.update(mass=value if mode == "nucleus" else None, own=mode == "top_k" and value == own, bleu=bleu)
            rows.append({**row, "open_share": open_share, "command": command})
    return rows, densities_readme(rows)


def _gates_cell(row):
    """How a row's test gates were drawn: `top_k RHO` (the run's own marked *), `nucleus PI`, or - (a reference)."""
    if row.get("mass") is not None:
        return f"nucleus {row['mass']:.2f}"
    if row["density"] is None:
        return "-"
    return f"top_k {row['density']:.2f}" + (" *" if row["own"] else "")


def densities_readme(rows):
    """The blocks of `test_densities_TABLE.md`: validation BLEU and open share per run and test-gate rule, and per
    recipe (its seeds' mean) in `curve`."""
    table = [[r["run"], _gates_cell(r), f"{r['open_share']:.3f}", f"{r['bleu']:.2f}"] for r in rows]
    return {
        "machine": _machine(f"Greedy decoding of the validation split, batches of {BATCH}. Commands: below."),
        "curve": density_curve(rows),
        "table": grid(["run", "test gates", "open", "validation BLEU"], table),
    }


def density_curve(rows):
    """Lines of a table: each recipe (a run's name less its table and `_seedN`) at each test-gate rule, in the rows'
    order, with its seeds, their mean open share and validation BLEU (mean ± sample standard deviation)."""
    groups = {}
    for row in rows:
        recipe, seed = re.fullmatch(r"(?:[^_]*_)?(.*?)(?:_seed(\d+))?", row["run"]).groups()
        groups.setdefault((recipe, _gates_cell(row)), []).append({**row, "recipe": recipe, "seed": seed or "-"})
    columns = [
        ("recipe", lambda group: group[0]["recipe"]),
        ("test gates", lambda group: _gates_cell(group[0])),
        ("seeds", tables.seeds),
        ("open", tables.field("open_share", ".3f")),
        ("validation BLEU", tables.stat("bleu", 2)),
    ]
    return tables.markdown(columns, list(groups.values()))


ANALYSES = {  # name: the analysis, its file stem, what each run of --names must be
    "levels": (levels, "levels", lambda run: run["attention"].startswith("hier-")),
    "gates": (gates, "gates", lambda run: run["attention"] == "gated" and run.get("tokenizer") in ("bpe", "unigram")),
    "densities": (densities, "test_densities", lambda run: run["attention"] == "gated"),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("analysis", choices=list(ANALYSES))
    parser.add_argument("--names", nargs="+", required=True, help="finished runs (models in runs/NAME of OUT)")
    parser.add_argument("--reference", nargs="*", default=[], help="densities: runs decoded once, as they are")
    parser.add_argument("--data-dir")
    parser.add_argument("--out", default=os.path.join(runner.REPO, "results", "seq2seq"), help="summaries in OUT/runs")
    args = parser.parse_args()
    args.table = args.names[0].split("_")[0]
    args.runs_root = os.path.join(runner.REPO, "runs", os.path.basename(os.path.normpath(args.out)))
    analysis, stem, fits = ANALYSES[args.analysis]
    finished_runs(args, fits)
    rows, blocks = analysis(args, provenance.command("seq2seq_analysis.py"))
    with open(write_analysis(args, stem, rows, blocks), encoding="utf-8") as handle:
        print(handle.read(), end="")


def write_analysis(args, stem, rows, blocks):
    """`OUT/STEM_TABLE.json` (the rows) and the blocks of its `.md`, with the commands of its rows; returns the `.md`
    path."""
    runner.write_json(os.path.join(args.out, f"{stem}_{args.table}.json"), {"rows": rows})
    path = os.path.join(args.out, f"{stem}_{args.table}.md")
    commands = dict.fromkeys(r["command"] for r in rows if r.get("command"))
    tables.fill(path, {**blocks, "commands": [f"- `{command}`" for command in commands]})
    return path


if __name__ == "__main__":
    main()
