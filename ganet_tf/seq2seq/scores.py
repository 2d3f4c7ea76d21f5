"""Translation and synthetic-task scores."""

import sacrebleu


def corpus_bleu(hypotheses, references):
    """Case-insensitive corpus BLEU of detokenised text (sacrebleu, 13a)."""
    return sacrebleu.corpus_bleu(list(hypotheses), [list(references)], lowercase=True).score


def exact_match(hypotheses, references):
    """Share of hypotheses (token lists) equal to their reference."""
    pairs = list(zip(hypotheses, references, strict=True))
    if not pairs:
        return 0.0
    return sum(list(h) == list(r) for h, r in pairs) / len(pairs)
