"""The paper's baselines: BiLSTM (last state), BiLSTM+localAtt, BiLSTM+softAtt."""

import keras

from ganet_tf.layers import GatedAttentionPooling
from ganet_tf.layers import LocalAttentionPooling
from ganet_tf.models.backbone import bilstm_states
from ganet_tf.models.backbone import classifier_head
from ganet_tf.models.backbone import embedded_tokens


def build_bilstm(
    num_classes,
    vocabulary_size=None,
    embeddings=None,
    embedding_dim=50,
    hidden_dim=100,
    num_layers=2,
    dropout=0.3,
    sequence_length=None,
    name="bilstm",
):
    """BiLSTM baseline: the final state of a `num_layers` BiLSTM, classified.

    Arguments as in `build_ganet`. Returns an uncompiled `keras.Model` from
    token ids `(batch, steps)` to probabilities `(batch, num_classes)`.
    """
    token_ids, embedded, _ = embedded_tokens(vocabulary_size, embeddings, embedding_dim, dropout, sequence_length)
    _, final = bilstm_states(embedded, hidden_dim, num_layers, return_state=True)
    probabilities = classifier_head(final, num_classes, dropout)
    return keras.Model(token_ids, probabilities, name=name)


def build_soft_attention(
    num_classes,
    vocabulary_size=None,
    embeddings=None,
    embedding_dim=50,
    hidden_dim=100,
    num_layers=2,
    attention_units=100,
    dropout=0.3,
    sequence_length=None,
    name="soft",
):
    """BiLSTM+softAtt: additive attention over every real token.

    The same attention as GA-Net with every gate open (layer `attention`, a
    `GatedAttentionPooling` called without gates). Arguments as in
    `build_ganet`.
    """
    token_ids, embedded, mask = embedded_tokens(vocabulary_size, embeddings, embedding_dim, dropout, sequence_length)
    states = bilstm_states(embedded, hidden_dim, num_layers)
    context, _ = GatedAttentionPooling(units=attention_units, name="attention")(states, mask=mask)
    probabilities = classifier_head(context, num_classes, dropout)
    return keras.Model(token_ids, probabilities, name=name)


def build_local_attention(
    num_classes,
    vocabulary_size=None,
    embeddings=None,
    embedding_dim=50,
    hidden_dim=100,
    num_layers=2,
    attention_units=100,
    window=8,
    dropout=0.3,
    sequence_length=None,
    name="local",
):
    """BiLSTM+localAtt: Luong local-p attention centred by the last state.

    `window` is the half-width D (paper: 40/16/8/8/4 for
    IMDB/AG News/SST-1/SST-2/TREC). Other arguments as in `build_ganet`.
    """
    token_ids, embedded, mask = embedded_tokens(vocabulary_size, embeddings, embedding_dim, dropout, sequence_length)
    states, final = bilstm_states(embedded, hidden_dim, num_layers, return_state=True)
    context, _ = LocalAttentionPooling(window=window, units=attention_units, name="attention")(
        states, query=final, mask=mask
    )
    probabilities = classifier_head(context, num_classes, dropout)
    return keras.Model(token_ids, probabilities, name=name)
