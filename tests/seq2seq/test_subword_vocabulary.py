import gzip
import os
import unicodedata

import pytest

from ganet_tf.errors import GANetInputError
from ganet_tf.seq2seq.run_vocabularies import learn_vocabularies
from ganet_tf.seq2seq.run_vocabularies import vocabularies_from_json
from ganet_tf.seq2seq.run_vocabularies import vocabularies_to_json
from ganet_tf.seq2seq.subword_vocabulary import SubwordVocabulary

TEXTS = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee.", "A man rides a bike.", "Two dogs play."] * 30
# Scripts and characters no training sentence holds.
UNSEEN = ["Δύο γάτες κοιμούνται.", "两只猫在睡觉。", "Ein 🐱 schläft", "مرحبا بالعالم", "Ωmega ≠ ∑"]


def _normalised(text):
    """What the docs promise back: NFKC, runs of white space as one space, no space at the ends."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


@pytest.fixture(scope="module")
def small():
    return SubwordVocabulary.train(TEXTS, size=300)


def _lines(path):
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [line.strip() for line in handle]


@pytest.mark.parametrize("model_type", ["unigram", "bpe"])
def test_detokenise_tokenise_gives_back_every_multi30k_training_sentence(data_dir, model_type):
    folder = os.path.join(data_dir, "multi30k")
    sentences = _lines(os.path.join(folder, "train.de.gz")) + _lines(os.path.join(folder, "train.en.gz"))
    vocabulary = SubwordVocabulary.train(sentences, size=8000, model_type=model_type)
    ids = vocabulary.encode(sentences)
    assert not any(1 in row for row in ids)  # nothing unknown
    decoded = vocabulary.decode(ids)
    wrong = [(s, d) for s, d in zip(sentences, decoded, strict=True) if _normalised(s) != d]
    assert wrong == []
    assert vocabulary.size == 8000


def test_characters_outside_the_training_split_are_spelled_in_bytes_not_unknown(small):
    ids = small.encode(UNSEEN)
    assert all(len(row) > 0 and 1 not in row for row in ids)
    assert small.decode(ids) == UNSEEN
    # A 2,000-character line is tokenised whole.
    long = "Ein Mann " * 222 + "ab"
    assert small.decode(small.encode([long])) == [_normalised(long)]


def test_ids_keep_the_projects_convention(small):
    assert small.pieces[:4] == ["<pad>", "<unk>", "<s>", "</s>"]
    (row,) = small.encode(["Ein Mann."], target=True)
    assert row[0] == 2 and row[-1] == 3 and 0 not in row
    (source,) = small.encode(["Ein Mann."])
    assert list(source) == list(row[1:-1])
    # Decoding stops at the end token and skips padding and the start token.
    assert small.decode([[2, *source, 3, *source, 0]]) == ["Ein Mann."]
    assert small.decode([[]]) == [""]
    assert small.tokens == small.pieces[2:]


def test_json_round_trip_gives_the_same_model(small):
    again = SubwordVocabulary.from_json(small.to_json())
    assert again.pieces == small.pieces
    assert [list(r) for r in again.encode(UNSEEN)] == [list(r) for r in small.encode(UNSEEN)]


def test_a_run_learns_one_joint_model_and_reads_it_back():
    source, target = learn_vocabularies(TEXTS[:60], TEXTS[60:], "bpe", 300)
    assert source is target
    saved = vocabularies_to_json(source, target, "bpe")
    assert saved["tokenizer"] == "bpe" and saved["source"] == saved["target"] == source.tokens
    read, again = vocabularies_from_json(saved)
    assert read is again and read.pieces == source.pieces
    # Word-level files (every run before subwords) have no tokenizer key.
    words = vocabularies_to_json(*learn_vocabularies(["ein hund"], ["a dog"], "word"), "word")
    assert set(words) == {"source", "target"}
    source, target = vocabularies_from_json(words)
    assert source.pieces[:2] == ["", "[UNK]"] and sorted(source.tokens) == ["ein", "hund"]
    assert target.tokens[:2] == ["[start]", "[end]"] and sorted(target.tokens[2:]) == ["a", "dog"]


def test_a_damaged_vocabulary_file_is_one_input_error(small):
    saved = vocabularies_to_json(small, small, "unigram")
    with pytest.raises(GANetInputError, match="damaged subword model"):
        vocabularies_from_json({**saved, "model": "bm90IGEgbW9kZWw="}, "run/vocabularies.json")
    with pytest.raises(GANetInputError, match="do not match"):
        vocabularies_from_json({**saved, "target": saved["target"][:-1]}, "run/vocabularies.json")
    with pytest.raises(GANetInputError, match="not a valid vocabulary file"):
        vocabularies_from_json({**saved, "tokenizer": "wordpiece"}, "run/vocabularies.json")


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="model_type"):
        SubwordVocabulary.train(TEXTS, 300, model_type="wordpiece")
    with pytest.raises(GANetInputError, match="No training sentences"):
        SubwordVocabulary.train(["", "  "], 300)
    with pytest.raises(ValueError, match="proto"):
        SubwordVocabulary(b"")
