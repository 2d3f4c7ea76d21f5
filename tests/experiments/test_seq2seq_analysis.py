"""`seq2seq_analysis gates`' counts, on sentences of pieces and gates made
by hand: pieces by their place in a word, words by class."""

import os
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from experiments import seq2seq_analysis  # noqa: E402

# "Ein Hund läuft in einem Park ." with "läuft" in two pieces.
PIECES = ["▁Ein", "▁Hund", "▁läu", "ft", "▁in", "▁einem", "▁Park", "▁."]


@pytest.mark.parametrize(
    "pieces, expected",
    [
        (["▁Ein"], "function word"),
        (["▁einem"], "function word"),
        (["▁läu", "ft"], "content word"),
        (["▁Hund"], "content word"),
        (["▁."], "punctuation"),
        ([","], "punctuation"),
    ],
)
def test_a_word_has_one_class(pieces, expected):
    assert seq2seq_analysis.word_class(pieces) == expected


def test_gate_stats_count_words_open_where_any_piece_is():
    gates = np.array([0, 1, 0, 1, 1, 0, 1, 0], bool)
    stats = seq2seq_analysis.gate_stats([(PIECES, gates)], draws=2)
    classes = stats["word_classes"]
    assert classes["content word"] == {"words": 3, "open_share": 1.0}  # Hund, läu|ft (half open), Park
    assert classes["function word"] == {"words": 3, "open_share": pytest.approx(1 / 3)}  # Ein, in, einem
    assert classes["punctuation"] == {"words": 1, "open_share": 0.0}
    assert stats["kinds"]["later piece"] == {"pieces": 1, "open_share": 1.0}
    assert stats["kinds"]["first piece"] == {"pieces": 1, "open_share": 0.0}
    assert stats["words_reached"] == pytest.approx(4 / 7)
    assert stats["multi_piece_words"] == 1 and stats["multi_piece_all_open"] == 0.0


def test_the_density_curve_averages_a_recipes_seeds_per_test_gate_rule():
    def row(run, density, bleu, open_share, own=False, mass=None):
        rule = "nucleus" if mass else "top_k" if density else None
        return {
            "run": run,
            "rule": rule,
            "density": density,
            "mass": mass,
            "own": own,
            "bleu": bleu,
            "open_share": open_share,
        }

    rows = [
        row("t_gated_seed0", 0.5, 30.0, 0.52, own=True),
        row("t_gated_seed0", 1.0, 34.0, 1.0),
        row("t_gated_seed0", None, 20.0, 0.33, mass=0.5),
        row("t_gated_seed1", 0.5, 32.0, 0.50, own=True),
        row("t_gated_seed1", 1.0, 35.0, 1.0),
        row("t_bahdanau_seed0", None, 36.0, 1.0),
    ]
    lines = seq2seq_analysis.density_curve(rows)
    assert lines[2:] == [
        "| gated | top_k 0.50 * | 0,1 | 0.510 | 31.00 ± 1.41 |",
        "| gated | top_k 1.00 | 0,1 | 1.000 | 34.50 ± 0.71 |",
        "| gated | nucleus 0.50 | 0 | 0.330 | 20.00 |",
        "| bahdanau | - | 0 | 1.000 | 36.00 |",
    ]
