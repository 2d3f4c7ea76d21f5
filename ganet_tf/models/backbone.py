"""The shared front of every model: token ids -> embeddings -> BiLSTM states."""

import keras
from keras import ops


def embedded_tokens(
    vocabulary_size=None,
    embeddings=None,
    embedding_dim=50,
    dropout=0.0,
    sequence_length=None,
):
    """The model input and its embeddings.

    Returns `(token_ids, embedded, mask)`: the input of padded token ids
    `(batch, steps)` (0 = padding), the (dropped-out) embeddings and the
    boolean mask of real tokens. `embeddings` is an optional
    `(vocabulary_size, dim)` matrix of initial vectors (e.g. GloVe, see
    `ganet_tf.embeddings.glove`); they are fine-tuned.
    """
    if embeddings is not None:
        vocabulary_size, embedding_dim = embeddings.shape
    if not isinstance(vocabulary_size, int) or vocabulary_size < 2:
        raise ValueError(
            f"Pass `embeddings` or an integer `vocabulary_size` >= 2. Received: vocabulary_size={vocabulary_size}"
        )
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"`dropout` must be in [0, 1). Received: dropout={dropout}")
    embedding = keras.layers.Embedding(
        vocabulary_size,
        int(embedding_dim),
        mask_zero=True,
        weights=None if embeddings is None else [embeddings],
        name="embedding",
    )
    token_ids = keras.Input(shape=(sequence_length,), dtype="int32", name="token_ids")
    embedded = embedding(token_ids)
    mask = ops.not_equal(token_ids, 0)
    if dropout:
        embedded = keras.layers.Dropout(dropout, name="embedding_dropout")(embedded)
    return token_ids, embedded, mask


def bilstm_states(embedded, hidden_dim=100, num_layers=2, return_state=False):
    """A stack of `num_layers` BiLSTMs (`hidden_dim` units each way).

    Returns the states `(batch, steps, 2 * hidden_dim)` of the last layer, and
    with `return_state=True` also its final state `(batch, 2 * hidden_dim)`:
    the forward LSTM at the last real token joined with the backward LSTM at
    the first. LSTMs keep Keras' defaults so that cuDNN runs them on GPU.
    """
    if not isinstance(num_layers, int) or num_layers < 1:
        raise ValueError(f"`num_layers` must be an integer >= 1. Received: num_layers={num_layers}")
    states = embedded
    for index in range(num_layers):
        last = index == num_layers - 1
        layer = keras.layers.Bidirectional(
            keras.layers.LSTM(
                hidden_dim,
                return_sequences=True,
                return_state=last and return_state,
            ),
            name=f"bilstm_{index + 1}",
        )
        states = layer(states)
    if not return_state:
        return states
    states, forward_h, _, backward_h, _ = states
    final = keras.layers.Concatenate(name="final_state")([forward_h, backward_h])
    return states, final


def classifier_head(features, num_classes, dropout=0.0):
    """Dropout and the softmax classifier; output named `probabilities`."""
    if not isinstance(num_classes, int) or num_classes < 2:
        raise ValueError(f"`num_classes` must be an integer >= 2. Received: num_classes={num_classes}")
    if dropout:
        features = keras.layers.Dropout(dropout, name="head_dropout")(features)
    return keras.layers.Dense(num_classes, activation="softmax", dtype="float32", name="probabilities")(features)
