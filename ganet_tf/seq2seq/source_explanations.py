"""What a seq2seq model attends to in its sources, readable: the source words
its test gates leave open (`attention="gated"`), or the blocks its hierarchy
groups them in (`"hier-*"`).

`explain_sources` is the API (`TextTranslator.explain` and `translate
--explain` read it). `source_gates`, `source_levels` and `word_spans`
(`ganet_tf.seq2seq.source_words`) are the computations under it, which the
analyses of finished runs (`experiments/seq2seq_analysis.py`) read too.
"""

import numpy as np
import tensorflow as tf
from keras import ops

from ganet_tf.seq2seq.evaluation import decoder_batches
from ganet_tf.seq2seq.source_words import word_spans
from ganet_tf.seq2seq.subword_vocabulary import SubwordVocabulary
from ganet_tf.seq2seq.vocabulary import standardize_translation


def source_gates(model, source_ids, batch_size):
    """Each source sentence as `(ids, open)`: its token ids without the
    padding and, beside them, whether the model's test gates
    (`model.encode(source, training=False)`) leave each token open (every
    token, for a model without gates). `source_ids`: one id array per
    sentence, none empty."""
    sentences = []
    for source, _ in decoder_batches(source_ids, batch_size):
        _, _, gates = model.encode(source, training=False)
        source = ops.convert_to_numpy(source)
        opened = ops.convert_to_numpy(gates) > 0 if gates is not None else np.ones(source.shape, bool)
        sentences.extend((row[row > 0], row_open[row > 0]) for row, row_open in zip(source, opened, strict=True))
    return sentences


def source_levels(model, source_ids, batch_size):
    """Each source sentence's hierarchy as `(nodes, sizes, starts)`, under a
    hierarchical (`"hier-*"`) model's test-time memory (`model.encode(source,
    training=False)`, the compact memory decoding reads): `nodes`, the real
    nodes of every level, bottom up (level 0: the tokens), an int array;
    `sizes` and `starts`, the level-1 nodes' blocks of level-0 tokens: how
    many tokens each holds and the token it starts at, int arrays in
    order. `source_ids`: one id array per sentence, none empty."""
    sentences = []
    for source, _ in decoder_batches(source_ids, batch_size):
        memory, _, _ = model.encode(source, training=False)
        levels = memory["levels"]
        nodes = np.stack([ops.convert_to_numpy(ops.sum(ops.cast(level["mask"], "int32"), -1)) for level in levels], -1)
        bottom = levels[0]
        if "sizes" in bottom:  # ACT: children per block slot (0: unused)
            sizes = ops.convert_to_numpy(bottom["sizes"])
            starts = ops.convert_to_numpy(bottom["starts"])
        else:  # fixed blocks: `(b, p, k)` children masks, block p from token p * k
            sizes = ops.convert_to_numpy(ops.sum(ops.cast(bottom["block_mask"], "int32"), -1))
            block_size = bottom["block_mask"].shape[-1]
            starts = np.broadcast_to(np.arange(sizes.shape[1], dtype=sizes.dtype) * block_size, sizes.shape)
        for row_nodes, row_sizes, row_starts in zip(nodes, sizes, starts, strict=True):
            real = row_sizes > 0
            sentences.append((row_nodes, row_sizes[real], row_starts[real]))
    return sentences


def explain_sources(model, source_vocabulary, sentences, batch_size=64):
    """What a gated or hierarchical seq2seq model attends to in each sentence.

    Args:
        model: a trained `EncoderDecoder` of `attention="gated"` or
            `"hier-rnn"`, `"hier-cnn"`, `"hier-act"`; a gated model's test
            gates follow its current rule (`with_translation_gates`).
        source_vocabulary: its source `WordVocabulary` or `SubwordVocabulary`.
        sentences: a list of raw source sentences.
        batch_size: sentences encoded at once (the result does not depend
            on it).

    Returns:
        One JSON-ready dict per sentence. The tokens are the user's words:
        a word run's standardised words (lower case, punctuation split off,
        a word out of the vocabulary as written); a subword run's words are
        its pieces joined (`word_begins`: a piece marked U+2581 begins a
        word; a punctuation mark is a word of its own), decoded to text.

        Gated: `{"words": [[WORD, OPEN], ...], "open": [WORD, ...],
        "closed": [WORD, ...], "open_share": WORDS_OPEN / WORDS}`, in
        sentence order, where a word is open when its test gate (a subword
        word: any of its pieces' gates) is; a subword run adds `"pieces":
        [[PIECE, OPEN], ...]`, `"open_pieces"` and `"piece_open_share"`
        (the share of pieces open: the model's own density).

        Hierarchical: `{"blocks": [[TOKEN, ...], ...], "nodes": [N0, N1,
        ...]}`: the source tokens (a subword run's pieces, which a block
        may split) grouped into the level-1 nodes as the model groups them,
        and the real nodes of each level, bottom up (level 0: the tokens).

        A sentence without tokens gets empty lists (`"open_share": None`).

    Raises:
        ValueError: for a model without gates or hierarchy (`"bahdanau"`).

    Example:

    >>> from ganet_tf.seq2seq.run_translator import load_translator_parts
    >>> # Not run by the tests: needs a trained run (`seq2seq --out runs/m30k_gated`).
    >>> model, source, _ = load_translator_parts("runs/m30k_gated")  # doctest: +SKIP
    >>> explain_sources(model, source, ["Ein Hund läuft."])  # doctest: +SKIP
    [{'words': [['ein', False], ['hund', True], ['läuft', True], ['.', False]],
      'open': ['hund', 'läuft'], 'closed': ['ein', '.'], 'open_share': 0.5}]
    """
    attention = getattr(model, "attention", None)
    if attention != "gated" and not str(attention).startswith("hier-"):
        raise ValueError(
            "`model` must be a gated or hierarchical translator (attention 'gated' or 'hier-*') "
            f"to explain. Received: attention={attention}"
        )
    sentences = list(sentences)
    ids = source_vocabulary.encode(sentences)
    kept = [index for index, row in enumerate(ids) if len(row)]
    subwords = isinstance(source_vocabulary, SubwordVocabulary)
    if subwords:
        tokens = [[source_vocabulary.pieces[i] for i in row.tolist()] for row in ids]
    else:
        words = tf.strings.split(standardize_translation(tf.constant(sentences, tf.string))).to_list()
        tokens = [[word.decode("utf-8") for word in row] for row in words]
    explanations = [None] * len(sentences)
    if attention == "gated":
        gates = source_gates(model, [ids[i] for i in kept], batch_size) if kept else []
        opened = dict(zip(kept, (row_open for _, row_open in gates), strict=True))
        for index, row_tokens in enumerate(tokens):
            row_open = opened.get(index, np.zeros(0, bool)).tolist()
            if subwords:
                explanations[index] = _subword_gates(source_vocabulary, ids[index], row_tokens, row_open)
            else:
                explanations[index] = _word_gates(row_tokens, row_open)
        return explanations
    levels = source_levels(model, [ids[i] for i in kept], batch_size) if kept else []
    found = dict(zip(kept, levels, strict=True))
    for index, row_tokens in enumerate(tokens):
        nodes, sizes, starts = found.get(index, (np.zeros(model.levels, int), [], []))
        blocks = [row_tokens[int(start) : int(start) + int(size)] for start, size in zip(starts, sizes, strict=True)]
        explanations[index] = {"blocks": blocks, "nodes": [int(count) for count in nodes]}
    return explanations


def _word_gates(words, opened):
    """The gated explanation of one sentence's words and their gates."""
    return {
        "words": [[word, bool(gate)] for word, gate in zip(words, opened, strict=True)],
        "open": [word for word, gate in zip(words, opened, strict=True) if gate],
        "closed": [word for word, gate in zip(words, opened, strict=True) if not gate],
        "open_share": sum(opened) / len(opened) if opened else None,
    }


def _subword_gates(vocabulary, ids, pieces, opened):
    """`_word_gates` of a subword sentence's words (a word open where any of
    its pieces is), with its pieces and their gates."""
    spans = word_spans(pieces)
    words = vocabulary.decode([ids[begin:end] for begin, end in spans]) if spans else []
    explanation = _word_gates(words, [any(opened[begin:end]) for begin, end in spans])
    explanation["pieces"] = [[piece, bool(gate)] for piece, gate in zip(pieces, opened, strict=True)]
    explanation["open_pieces"] = [piece for piece, gate in zip(pieces, opened, strict=True) if gate]
    explanation["piece_open_share"] = sum(opened) / len(opened) if opened else None
    return explanation
