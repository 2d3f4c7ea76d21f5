"""Translation and synthetic-task scores."""

import tensorflow as tf

from ganet_tf.extras import import_extra


def corpus_bleu(hypotheses, references):
    """Case-insensitive corpus BLEU of detokenised text (sacrebleu, 13a)."""
    (sacrebleu,) = import_extra("seq2seq", "BLEU", "sacrebleu")
    return sacrebleu.corpus_bleu(list(hypotheses), [list(references)], lowercase=True).score


def exact_match(hypotheses, references):
    """Share of hypotheses (token lists) equal to their reference."""
    pairs = list(zip(hypotheses, references, strict=True))
    if not pairs:
        return 0.0
    return sum(list(h) == list(r) for h, r in pairs) / len(pairs)


def symbol_error_rate(hypotheses, references):
    """Symbol edits from the hypotheses to their references, over the symbols.

    The edit (Levenshtein) distance of each hypothesis to its reference, in
    symbols inserted, deleted or substituted (`tf.edit_distance`), summed
    over the pairs and divided by the references' summed length (at least
    1): the character error rate of speech recognition, on symbols. 0 is a
    perfect decode. Unlike `exact_match`, one wrong symbol of a long
    sequence costs one symbol, and unlike a position-by-position score, a
    dropped or repeated symbol does not count every later one as wrong. It
    exceeds 1 where the hypotheses are longer than the references and wrong.
    """
    pairs = list(zip(hypotheses, references, strict=True))
    if not pairs:
        return 0.0

    def sparse(rows):
        rows = [[str(token) for token in row] for row in rows]
        return tf.ragged.constant(rows, dtype=tf.string, ragged_rank=1).to_sparse()

    edits = tf.edit_distance(sparse([h for h, _ in pairs]), sparse([r for _, r in pairs]), normalize=False)
    return float(tf.reduce_sum(edits)) / max(sum(len(r) for _, r in pairs), 1)
