"""`explain_sources`: the source words a gated run's test gates leave open,
the blocks a hierarchical run groups them in, read from the model itself."""

import json
import os

import numpy as np
import pytest

from ganet_tf.seq2seq import EncoderDecoder
from ganet_tf.seq2seq.run_translator import load_translator_parts
from ganet_tf.seq2seq.run_translator import with_translation_gates
from ganet_tf.seq2seq.source_explanations import explain_sources
from ganet_tf.seq2seq.source_words import WORD_START
from ganet_tf.seq2seq.source_words import word_codes
from ganet_tf.seq2seq.subword_vocabulary import SubwordVocabulary
from ganet_tf.seq2seq.word_vocabulary import WordVocabulary

TEXTS = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee!", "Eine Frau liest ein Buch, draußen."]


def _own_gates(model, ids):
    """Each row's test gates, straight from `model.encode` (one sentence a batch)."""
    gates = []
    for row in ids:
        _, _, row_gates = model.encode(np.asarray([row], "int32"), training=False)
        gates.append(np.asarray(row_gates)[0] > 0)
    return gates


def test_a_gated_run_opens_the_words_its_own_test_gates_open(gated_translator_run):
    model, source, _ = load_translator_parts(gated_translator_run)
    with open(os.path.join(gated_translator_run, "examples.json"), encoding="utf-8") as handle:
        sentences = [example["source"] for example in json.load(handle)][:5]
    sentences = [*sentences, "", sentences[0].upper() + " unseen ."]
    explanations = explain_sources(model, source, sentences, batch_size=3)
    assert explanations == explain_sources(model, source, sentences, batch_size=64)  # no batch effect
    for sentence, explanation in zip(sentences, explanations, strict=True):
        words = sentence.lower().split()
        if not words:
            assert explanation == {"words": [], "open": [], "closed": [], "open_share": None}
            continue
        gates = _own_gates(model, source.encode([sentence]))[0]
        assert explanation["words"] == [[word, bool(gate)] for word, gate in zip(words, gates, strict=True)]
        assert explanation["open"] == [word for word, gate in zip(words, gates, strict=True) if gate]
        assert explanation["closed"] == [word for word, gate in zip(words, gates, strict=True) if not gate]
        assert explanation["open_share"] == pytest.approx(gates.mean())
        assert "pieces" not in explanation  # a word run's words are its tokens
    # top_k at 0.5: half of each sentence's words, rounded.
    assert all(0 < len(e["open"]) < len(e["words"]) for e in explanations if len(e["words"]) > 2)


def test_a_subword_word_is_open_where_any_of_its_pieces_is():
    vocabulary = SubwordVocabulary.train(TEXTS * 20, 320)
    model = EncoderDecoder(vocabulary.size, vocabulary.size, embedding_dim=4, hidden=4, attention="gated", seed=1)
    model.build()
    with_translation_gates(model, {"inference_mode": "top_k", "inference_density": 0.4}, "tiny")
    explanations = explain_sources(model, vocabulary, TEXTS)
    mixed = 0  # words with open and closed pieces: open, by any piece
    ids_rows = vocabulary.encode(TEXTS)
    for ids, gates, explanation in zip(ids_rows, _own_gates(model, ids_rows), explanations, strict=True):
        pieces = [vocabulary.pieces[index] for index in ids]
        assert explanation["pieces"] == [[piece, bool(gate)] for piece, gate in zip(pieces, gates, strict=True)]
        assert explanation["open_pieces"] == [piece for piece, gate in zip(pieces, gates, strict=True) if gate]
        assert explanation["piece_open_share"] == pytest.approx(gates.mean())
        # The words are the pieces joined: each word's pieces, in order, make it up.
        words = [word for word, _ in explanation["words"]]
        assert "".join(pieces).replace(WORD_START, "") == "".join(words)
        position = 0
        for word, word_open in explanation["words"]:
            text, piece_gates = "", []
            while text != word:
                text += pieces[position].replace(WORD_START, "")
                piece_gates.append(bool(gates[position]))
                position += 1
            assert word_open == any(piece_gates)
            mixed += any(piece_gates) and not all(piece_gates)
        assert position == len(pieces)
        assert explanation["open"] == [word for word, word_open in explanation["words"] if word_open]
        assert "." in words or "!" in words  # punctuation is a word of its own
    assert mixed > 0
    assert [word for word, _ in explanations[0]["words"]] == ["Ein", "Mann", "fährt", "Fahrrad", "."]


def test_word_gates_leave_no_word_half_open():
    vocabulary = SubwordVocabulary.train(TEXTS * 20, 320)
    model = EncoderDecoder(
        vocabulary.size,
        vocabulary.size,
        embedding_dim=4,
        hidden=4,
        attention="gated",
        gate_unit="word",
        source_word_codes=word_codes(vocabulary.pieces),
        inference_mode="top_k",
        inference_density=0.4,
        seed=1,
    )
    model.build()
    for explanation in explain_sources(model, vocabulary, TEXTS):
        pieces = explanation["pieces"]
        open_words = [word for word, word_open in explanation["words"] if word_open]
        # Every piece of an open word is open: the open pieces make up exactly the open words.
        assert "".join(piece for piece, _ in pieces if _).replace(WORD_START, "") == "".join(open_words)
        assert len(open_words) == int(np.floor(0.4 * len(explanation["words"]) + 0.5))


@pytest.mark.parametrize("attention", ["hier-cnn", "hier-act"])
def test_a_hierarchical_run_gives_its_level_1_blocks(attention):
    words = [f"w{index}" for index in range(9)]
    vocabulary = WordVocabulary(words)
    model = EncoderDecoder(vocabulary.size, 6, embedding_dim=4, hidden=4, attention=attention, levels=3, seed=2)
    model.build()
    sentences = [" ".join(words), "w3 w1 unseen w2", "", "W8"]
    explanations = explain_sources(model, vocabulary, sentences, batch_size=2)
    assert explanations == explain_sources(model, vocabulary, sentences)
    for sentence, explanation in zip(sentences, explanations, strict=True):
        tokens = sentence.lower().split()
        blocks = explanation["blocks"]
        assert [token for block in blocks for token in block] == tokens  # every word once, in order
        assert len(explanation["nodes"]) == 3
        assert explanation["nodes"][:2] == [len(tokens), len(blocks)]
        assert explanation["nodes"][2] <= len(blocks)
        if attention == "hier-cnn":  # blocks of k = 3 (the default), the last one shorter
            assert [len(block) for block in blocks] == [
                min(3, len(tokens) - start) for start in range(0, len(tokens), 3)
            ]
        if tokens:
            memory, _, _ = model.encode(np.asarray(vocabulary.encode([sentence])), training=False)
            assert int(np.sum(memory["levels"][1]["mask"])) == len(blocks)


def test_a_bahdanau_model_has_nothing_to_explain():
    vocabulary = WordVocabulary(["a", "b"])
    model = EncoderDecoder(vocabulary.size, 6, embedding_dim=4, hidden=4)
    with pytest.raises(ValueError, match="gated or hierarchical.*Received: attention=bahdanau"):
        explain_sources(model, vocabulary, ["a b"])
