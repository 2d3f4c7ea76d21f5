"""The paper's baselines: BiLSTM (last state), BiLSTM+localAtt, BiLSTM+softAtt;
and BiLSTM with sparsemax or 1.5-entmax attention."""

import keras

from ganet_tf.layers import GatedAttentionPooling
from ganet_tf.layers import LocalAttentionPooling
from ganet_tf.layers import SparseAttentionPooling
from ganet_tf.models.backbone import bilstm_states
from ganet_tf.models.backbone import classifier_head
from ganet_tf.models.backbone import embedded_tokens


def build_bilstm(num_classes, name="bilstm", **kwargs):
    """BiLSTM baseline: the final state of a `num_layers` BiLSTM, classified.

    Args:
        num_classes: int >= 2.
        name: model name.
        **kwargs: the backbone arguments, as in `build_ganet`:
            `vocabulary_size`, `embeddings`, `embedding_dim` (50),
            `hidden_dim` (100), `num_layers` (2), `dropout` (0.3) and
            `sequence_length`.

    Returns:
        An uncompiled `keras.Model` from token ids `(batch, steps)` to
        probabilities `(batch, num_classes)`.
    """
    return _bilstm_classifier(num_classes, name, lambda states, final, mask: final, final_state=True, **kwargs)


def build_soft_attention(num_classes, attention_units=100, name="soft", **kwargs):
    """BiLSTM+softAtt: additive attention over every real token.

    The same attention as GA-Net with every gate open (layer `attention`, a
    `GatedAttentionPooling` called without gates).

    Args:
        num_classes: int >= 2.
        attention_units: width of the additive attention score network.
        name: model name.
        **kwargs: the backbone arguments, as in `build_bilstm`.

    Returns:
        An uncompiled `keras.Model`, as `build_bilstm`'s.
    """
    return _attention_classifier(
        num_classes, name, lambda: GatedAttentionPooling(units=attention_units, name="attention"), **kwargs
    )


def build_sparsemax_attention(num_classes, attention_units=100, name="sparsemax", **kwargs):
    """BiLSTM+sparsemax: additive attention whose weights are a sparsemax.

    The score network of `build_soft_attention`, with the softmax replaced
    by sparsemax over the real tokens (layer `attention`, a
    `SparseAttentionPooling`): each text attends to the tokens its scores
    put above a threshold, with exact zeros elsewhere. Its arguments and
    the model it returns are `build_soft_attention`'s.
    """
    return _sparse_attention_classifier(num_classes, attention_units, "sparsemax", name, **kwargs)


def build_entmax_attention(num_classes, attention_units=100, name="entmax", **kwargs):
    """BiLSTM+1.5-entmax: additive attention whose weights are a 1.5-entmax.

    As `build_sparsemax_attention` (the same arguments and model), with
    1.5-entmax, whose weights are denser and smoother than sparsemax's but
    still hold exact zeros.
    """
    return _sparse_attention_classifier(num_classes, attention_units, "entmax15", name, **kwargs)


def _sparse_attention_classifier(num_classes, attention_units, normalizer, name, **kwargs):
    def attention():
        return SparseAttentionPooling(units=attention_units, normalizer=normalizer, name="attention")

    return _attention_classifier(num_classes, name, attention, **kwargs)


def _attention_classifier(num_classes, name, attention, **kwargs):
    """The baselines that pool the BiLSTM states with an attention layer,
    `attention()`, made after the BiLSTM (the order that seeds its weights)."""

    def pool(states, final, mask):
        context, _ = attention()(states, mask=mask)
        return context

    return _bilstm_classifier(num_classes, name, pool, final_state=False, **kwargs)


def build_local_attention(num_classes, attention_units=100, window=8, name="local", **kwargs):
    """BiLSTM+localAtt: Luong local-p attention centred by the last state.

    Args:
        num_classes: int >= 2.
        attention_units: width of the attention score network.
        window: the half-width D of the window (paper: 40/16/8/8/4 for
            IMDB/AG News/SST-1/SST-2/TREC).
        name: model name.
        **kwargs: the backbone arguments, as in `build_bilstm`.

    Returns:
        An uncompiled `keras.Model`, as `build_bilstm`'s.
    """

    def pool(states, final, mask):
        context, _ = LocalAttentionPooling(window=window, units=attention_units, name="attention")(
            states, query=final, mask=mask
        )
        return context

    return _bilstm_classifier(num_classes, name, pool, final_state=True, **kwargs)


def _bilstm_classifier(
    num_classes,
    name,
    pool,
    final_state,
    vocabulary_size=None,
    embeddings=None,
    embedding_dim=50,
    hidden_dim=100,
    num_layers=2,
    dropout=0.3,
    sequence_length=None,
):
    """The baselines' model: embeddings -> BiLSTM -> `pool` -> softmax.

    `pool(states, final, mask)` makes the layers that reduce the BiLSTM
    states to the features the head classifies; `final` is the BiLSTM's
    final state with `final_state`, else None.
    """
    token_ids, embedded, mask = embedded_tokens(vocabulary_size, embeddings, embedding_dim, dropout, sequence_length)
    outputs = bilstm_states(embedded, hidden_dim, num_layers, return_state=final_state)
    states, final = outputs if final_state else (outputs, None)
    probabilities = classifier_head(pool(states, final, mask), num_classes, dropout)
    return keras.Model(token_ids, probabilities, name=name)
