"""How well the tokens a model attends to match the tokens that carry the label."""

import numpy as np

# Length buckets of `selection_scores`: [5, 20), [20, 50), ..., [200, 400].
DEFAULT_LENGTH_EDGES = (5, 20, 50, 100, 200, 400)


def selection_scores(attended, keywords, real, length_edges=DEFAULT_LENGTH_EDGES):
    """Precision, recall and density of the attended tokens, overall and by length.

    For a set of texts, with per-token masks of the tokens a model attends
    to (an open gate, or an attention weight above 0) and of the tokens
    known to carry the label:

    - `precision`: attended keywords / attended tokens, over all tokens of
      the texts (None when nothing is attended);
    - `recall`: attended keywords / keywords (None without keywords);
    - `attended_density`: the mean over texts of attended / real tokens;
    - `true_share`: the mean over texts of keywords / real tokens, the
      density a perfect selection would have;
    - `texts`: the number of texts.

    Only real tokens count; texts without a real token are left out.

    Args:
        attended: boolean array `(texts, steps)`, True at attended tokens.
        keywords: boolean array `(texts, steps)`, True at the tokens that
            carry the label.
        real: boolean array `(texts, steps)`, True at real tokens (not
            padding).
        length_edges: increasing ints; text lengths (real tokens) in
            `[edges[i], edges[i + 1])` form a bucket named
            `"edges[i]-(edges[i + 1] - 1)"`, the last one closed
            (`"edges[-2]-edges[-1]"`). Lengths outside the edges form the
            buckets `"<edges[0]"` and `">edges[-1]"`.

    Returns:
        A dict: the scores of all texts under `"all"`, and under
        `"by_length"` a dict from bucket name to the scores of its texts
        (buckets without texts left out), in increasing length.

    Example:

    >>> real = np.array([[1, 1, 1, 1, 0]], bool)
    >>> keywords = np.array([[1, 0, 0, 0, 0]], bool)
    >>> attended = np.array([[1, 1, 0, 0, 0]], bool)
    >>> selection_scores(attended, keywords, real, length_edges=(1, 10))["all"]
    {'texts': 1, 'precision': 0.5, 'recall': 1.0, 'attended_density': 0.5, 'true_share': 0.25}
    """
    real, attended, keywords = (np.asarray(array, bool) for array in (real, attended, keywords))
    if attended.shape != real.shape or keywords.shape != real.shape or real.ndim != 2:
        raise ValueError(
            "`attended`, `keywords` and `real` must be boolean arrays of one shape (texts, steps). "
            f"Received: shapes {np.shape(attended)}, {np.shape(keywords)} and {np.shape(real)}"
        )
    attended, keywords = attended & real, keywords & real
    edges = [int(edge) for edge in length_edges]
    if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
        raise ValueError(f"`length_edges` must be at least two increasing ints. Received: length_edges={length_edges}")
    lengths = real.sum(axis=1)
    kept = lengths > 0
    attended, keywords, real, lengths = attended[kept], keywords[kept], real[kept], lengths[kept]
    result = {"all": _scores(attended, keywords, lengths), "by_length": {}}
    for name, rows in _buckets(lengths, edges):
        if np.any(rows):
            result["by_length"][name] = _scores(attended[rows], keywords[rows], lengths[rows])
    return result


def _buckets(lengths, edges):
    """(name, rows) of each length bucket, in increasing length."""
    yield f"<{edges[0]}", lengths < edges[0]
    for index, (low, high) in enumerate(zip(edges, edges[1:], strict=False)):
        last = index == len(edges) - 2
        rows = (lengths >= low) & ((lengths <= high) if last else (lengths < high))
        yield (f"{low}-{high}" if last else f"{low}-{high - 1}"), rows
    yield f">{edges[-1]}", lengths > edges[-1]


def _scores(attended, keywords, lengths):
    hits = int(np.sum(attended & keywords))
    opened, relevant = int(attended.sum()), int(keywords.sum())
    return {
        "texts": int(len(lengths)),
        "precision": hits / opened if opened else None,
        "recall": hits / relevant if relevant else None,
        "attended_density": float(np.mean(attended.sum(axis=1) / lengths)) if len(lengths) else None,
        "true_share": float(np.mean(keywords.sum(axis=1) / lengths)) if len(lengths) else None,
    }
