"""Validation BLEU of finished gated seq2seq runs at other test densities.

    python experiments/seq2seq_test_densities.py --data-dir ../shared/data \
        --names multi30k-subwords_gated-states_seed0 multi30k-subwords_gated-states_seed1 \
        --reference multi30k-subwords_bahdanau_seed0 multi30k-subwords_bahdanau_seed1

Does a gated run lose BLEU to the tokens its test gates close, or did
training with gates leave a weaker model? Each gated run (test gates
`top_k`) is decoded greedily on the Multi30k validation split with its
gates opening the top `rho` of each sentence's source tokens, for every
`--densities` rho (1.0 opens every token: attention over the whole
source, as Bahdanau's), without retraining; the `--reference` runs
(Bahdanau) are decoded once beside them. Validation only: the test set
stays out. Writes `results/seq2seq/test_densities_<names' table>.md` and
`.json`.
"""

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

DENSITIES = (0.3, 0.5, 0.7, 1.0)
BATCH = 128


def validation_bleu(run_dir, data_dir, densities=()):
    """`(own density, {density: (BLEU, open share of the source tokens)})`
    on validation, greedy, at the run's own test gates and every one of
    `densities` (a gated run's); own density `None`: not a gated run."""
    from ganet_tf.seq2seq.run import decode_all
    from ganet_tf.seq2seq.run import load_run
    from ganet_tf.seq2seq.run_translator import with_translation_gates
    from ganet_tf.seq2seq.scores import corpus_bleu
    from ganet_tf.seq2seq.source_explanations import source_gates

    _, model, ids, _, pairs, vocabularies = load_run(run_dir, data_dir, "val", with_pairs=True)
    own = model.gate_sampler.inference_density if model.attention == "gated" else None
    if densities and model.gate_sampler.inference_mode != "top_k":
        raise SystemExit(f"error: {run_dir} has {model.gate_sampler.inference_mode} test gates; rho needs top_k")
    results = {}
    for density in dict.fromkeys([own, *densities]):
        if density is not None:  # the rule is read when the decoder is traced
            with_translation_gates(model, {"inference_mode": "top_k", "inference_density": density}, run_dir)
        decoded, _ = decode_all(model, ids[0], BATCH, verbose=0)
        bleu = corpus_bleu(vocabularies[1].decode(decoded), pairs[1])
        sentences = source_gates(model, ids[0], BATCH)
        opened = sum(int(row_open.sum()) for _, row_open in sentences)
        results[density] = (bleu, opened / sum(len(row) for row, _ in sentences))
    return own, results


def check_names(args):
    """Gated runs for `--names` (their test gates `top_k`, checked once
    each model loads), any finished runs for `--reference`, each with its
    model still under `--runs-root`; `--densities` in (0, 1]."""

    def problem(run):
        gated = run["name"] not in args.names or run["attention"] == "gated"
        return None if gated else "is not a gated run; give it with --reference"

    finished_runs(args, [*args.names, *args.reference], problem)
    for density in args.densities:
        if not 0.0 < density <= 1.0:
            raise SystemExit(f"error: --densities must lie in (0, 1]. Received: {density}")


def readme(table, rows):
    lines = [
        f"# Gated runs at other test densities, {table} (validation BLEU)",
        "",
        f"Machine: {machine()}. Greedy decoding of the validation split, batches of {BATCH}. Commands: below.",
        "",
        "rho: the share of each sentence's source tokens the test gates open (`top_k`, round(rho T)); the",
        "run's own is marked *. Open: the share of the split's source tokens open, measured. A reference run",
        "(Bahdanau) attends to every token.",
        "",
        "| run | rho | open | validation BLEU |",
        "|---|---|---|---|",
    ]
    for r in rows:
        mark = " *" if r["own"] else ""
        rho = "-" if r["density"] is None else f"{r['density']:.2f}{mark}"
        lines.append(f"| {r['run']} | {rho} | {r['open_share']:.3f} | {r['bleu']:.2f} |")
    return lines


def main(argv=None):
    parser = analysis_parser(__doc__.splitlines()[0], "gated runs under runs/seq2seq")
    parser.add_argument("--reference", nargs="*", default=[], help="runs decoded once, as they are")
    parser.add_argument("--densities", nargs="+", type=float, default=list(DENSITIES))
    args = parser.parse_args(argv)
    check_names(args)
    command = recorded_command("seq2seq_test_densities.py", argv)
    rows = []
    for name in [*args.names, *args.reference]:
        densities = args.densities if name in args.names else ()
        own, scores = validation_bleu(os.path.join(args.runs_root, name), args.data_dir, densities)
        for density, (bleu, open_share) in sorted(scores.items(), key=lambda item: item[0] or 0.0):
            row = {"run": name, "density": density, "own": density is not None and density == own, "bleu": bleu}
            rows.append({**row, "open_share": open_share, "command": command})
    table = args.names[0].split("_")[0]
    write_tables(args.out, f"test_densities_{table}", rows, readme(table, rows))


if __name__ == "__main__":
    main()
