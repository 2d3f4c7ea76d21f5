"""Synthetic texts whose label is carried by a known set of tokens.

A family of classification tasks for measuring token selection:
each text is filler words with keywords of its class put in at random
places, so the tokens that carry the label are known, and a model's attended
tokens can be scored against them (`ganet_tf.metrics.selection_scores`).
The share of keywords varies from text to text around the task's share.
"""

import numpy as np

FILLER_PREFIX = "w"
KEYWORD_PREFIX = "k"


def keyword(label, index):
    """The `index`-th keyword of class `label`, e.g. `"k2x5"`."""
    return f"{KEYWORD_PREFIX}{label}x{index}"


def selection_task(
    size,
    keyword_share,
    seed=0,
    min_length=5,
    max_length=400,
    num_classes=4,
    filler_words=500,
    keywords_per_class=10,
    share_spread=0.5,
):
    """Texts whose label only their keywords carry, with the keyword masks.

    Each text has a length drawn log-uniformly from `[min_length,
    max_length]` (so short and long texts are equally represented on a log
    scale) and a label drawn uniformly. Its keyword share is drawn uniformly
    from `keyword_share * (1 ± share_spread)` (capped at 1); that share of
    its words, rounded and at least one, are keywords of its class (drawn
    from the class's `keywords_per_class`), at random places; the other
    words are filler drawn from `filler_words` words shared by all classes.
    Words are lower-case letters and digits, so the package's text
    standardisation keeps them as they are: the `t`-th word of a text is its
    `t`-th token.

    Args:
        size: int >= 1, the number of texts.
        keyword_share: float in (0, 1], the task's mean share of keywords.
        seed: int, seed of the NumPy generator; the same arguments give the
            same task.
        min_length: int >= 1, the shortest text in words.
        max_length: int >= min_length, the longest text in words.
        num_classes: int >= 2.
        filler_words: int >= 1, the size of the filler vocabulary.
        keywords_per_class: int >= 1.
        share_spread: float in [0, 1), the relative spread of the share
            between texts.

    Returns:
        A tuple `(texts, labels, keyword_masks)`: a list of `size` strings,
        an int array `(size,)` of labels in `[0, num_classes)`, and a
        boolean array `(size, max_length)`, True at the positions of the
        keywords (False past the end of a text).

    Example:

    >>> texts, labels, masks = selection_task(3, keyword_share=0.2, seed=0, max_length=12)
    >>> len(texts), labels.shape, masks.shape
    (3, (3,), (3, 12))
    """
    _check_arguments(
        size, keyword_share, min_length, max_length, num_classes, filler_words, keywords_per_class, share_spread
    )
    rng = np.random.default_rng(seed)
    lengths = np.exp(rng.uniform(np.log(min_length), np.log(max_length + 1), size)).astype(int)
    lengths = np.clip(lengths, min_length, max_length)
    labels = rng.integers(0, num_classes, size)
    shares = np.minimum(keyword_share * rng.uniform(1 - share_spread, 1 + share_spread, size), 1.0)
    masks = np.zeros([size, max_length], bool)
    texts = []
    for row in range(size):
        length = lengths[row]
        count = int(np.clip(np.round(shares[row] * length), 1, length))
        words = [f"{FILLER_PREFIX}{index}" for index in rng.integers(0, filler_words, length)]
        places = rng.choice(length, count, replace=False)
        for place, index in zip(places, rng.integers(0, keywords_per_class, count), strict=True):
            words[place] = keyword(labels[row], index)
        masks[row, places] = True
        texts.append(" ".join(words))
    return texts, labels, masks


def _check_arguments(
    size, keyword_share, min_length, max_length, num_classes, filler_words, keywords_per_class, share_spread
):
    for name, value, lowest in (
        ("size", size, 1),
        ("min_length", min_length, 1),
        ("num_classes", num_classes, 2),
        ("filler_words", filler_words, 1),
        ("keywords_per_class", keywords_per_class, 1),
    ):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < lowest:
            raise ValueError(f"`{name}` must be an integer >= {lowest}. Received: {name}={value}")
    if not isinstance(max_length, (int, np.integer)) or max_length < min_length:
        raise ValueError(
            f"`max_length` must be an integer >= min_length ({min_length}). Received: max_length={max_length}"
        )
    if not 0 < keyword_share <= 1:
        raise ValueError(f"`keyword_share` must be in (0, 1]. Received: keyword_share={keyword_share}")
    if not 0 <= share_spread < 1:
        raise ValueError(f"`share_spread` must be in [0, 1). Received: share_spread={share_spread}")
