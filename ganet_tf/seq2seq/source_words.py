"""Which SentencePiece pieces of a source sentence begin a word.

One rule for the model and for what people read: `word_begins` groups a
sentence's pieces into words for `translate --explain`, and `word_codes`
gives every id of a vocabulary the code from which `EncoderDecoder(...,
gate_unit="word")` finds the same words inside the model.
"""

import itertools

WORD_START = "\u2581"  # SentencePiece's mark of a piece that begins a word
# The codes of `word_codes`: a piece that continues a word, one that begins
# a word, and a punctuation piece (a word of its own: it and the piece after
# it each begin a word).
CONTINUES, BEGINS, PUNCTUATION = 0, 1, 2


def is_punctuation(piece):
    """Whether a piece is punctuation: not empty without its U+2581 mark,
    and no letter or digit in it."""
    text = piece.lstrip(WORD_START)
    return bool(text) and not any(character.isalnum() for character in text)


def word_begins(pieces):
    """Whether each SentencePiece piece of a sentence begins a word: a piece
    marked with U+2581 does, and a punctuation piece and the piece after one
    each begin a unit of their own (so "bike." is the word "bike" and ".")."""
    return [
        index == 0 or piece.startswith(WORD_START) or is_punctuation(piece) or is_punctuation(pieces[index - 1])
        for index, piece in enumerate(pieces)
    ]


def word_spans(pieces):
    """`(begin, end)` piece spans of a sentence's words and punctuation marks (`word_begins`)."""
    firsts = [index for index, begins in enumerate(word_begins(pieces)) if begins] + [len(pieces)]
    return list(itertools.pairwise(firsts))


def word_codes(pieces):
    """Every id's code for `EncoderDecoder`'s word gates: `PUNCTUATION`,
    `BEGINS` (marked with U+2581) or `CONTINUES`, so that a piece begins a
    word where its code is not `CONTINUES`, where the piece before is
    `PUNCTUATION`, or at the sentence's start: `word_begins`' rule.

    Args:
        pieces: the vocabulary's piece of every id (`SubwordVocabulary.pieces`).

    Returns:
        A list of ints, one per id.
    """
    return [
        PUNCTUATION if is_punctuation(piece) else BEGINS if piece.startswith(WORD_START) else CONTINUES
        for piece in pieces
    ]
