"""The linear-attention Transformer (Katharopoulos et al., 2020): the dense
Transformer baseline with `LinearAttention` in place of softmax attention,
an efficient-attention peer of the gated Transformer."""

import keras

from ganet_tf.layers import GatedAttentionPooling
from ganet_tf.layers import LinearAttention
from ganet_tf.models.backbone import classifier_head
from ganet_tf.models.transformer import check_transformer_arguments
from ganet_tf.models.transformer import transformer_inputs


def build_linear_transformer(
    num_classes,
    vocabulary_size=None,
    embeddings=None,
    embedding_dim=50,
    hidden_dim=128,
    num_layers=2,
    num_heads=4,
    intermediate_dim=None,
    attention_units=100,
    max_length=4096,
    dropout=0.1,
    sequence_length=None,
    name="linear_transformer",
):
    """Builds the linear-attention Transformer as a functional `keras.Model`.

    Data flow: as `build_transformer` (embeddings + learned positions ->
    `num_layers` post-norm encoder blocks -> additive attention pooling,
    layer `attention` -> softmax), with each block's softmax self-attention
    replaced by `LinearAttention` (`phi(x) = elu(x) + 1`, padded keys left
    out of both sums): `x = LayerNorm(x + Dropout(LinearAttention(x)))`,
    then `x = LayerNorm(x + Dropout(Dense(Dense_relu(x))))`, the
    computation of `GatedTransformerEncoder` without gates. The work of a
    block grows linearly with the length.

    Args:
        num_classes, vocabulary_size, embeddings, embedding_dim, hidden_dim,
            num_layers, num_heads, intermediate_dim, attention_units,
            max_length, dropout, sequence_length, name: as in
            `build_transformer`.

    Returns:
        An uncompiled `keras.Model` from token ids `(batch, steps)` to class
        probabilities `(batch, num_classes)`.

    Example:

    >>> model = build_linear_transformer(2, vocabulary_size=100, hidden_dim=16)
    >>> tuple(model(np.array([[5, 7, 9, 0]])).shape)
    (1, 2)

    References:
        - [Katharopoulos et al., 2020](https://arxiv.org/abs/2006.16236),
          Transformers are RNNs: Fast Autoregressive Transformers with
          Linear Attention.
    """
    check_transformer_arguments(hidden_dim, num_heads, num_layers, max_length)
    token_ids, _, x, mask = transformer_inputs(
        vocabulary_size, embeddings, embedding_dim, hidden_dim, max_length, dropout, sequence_length
    )
    for index in range(1, num_layers + 1):
        attended = LinearAttention(num_heads, hidden_dim // num_heads, name=f"linear_attention_{index}")(
            x, x, query_mask=mask, value_mask=mask
        )
        attended = keras.layers.Dropout(dropout, name=f"attention_dropout_{index}")(attended)
        x = keras.layers.LayerNormalization(epsilon=1e-5, name=f"attention_layer_norm_{index}")(x + attended)
        fed = keras.layers.Dense(intermediate_dim or 4 * hidden_dim, activation="relu", name=f"feedforward_{index}")(x)
        fed = keras.layers.Dense(hidden_dim, name=f"feedforward_output_{index}")(fed)
        fed = keras.layers.Dropout(dropout, name=f"feedforward_dropout_{index}")(fed)
        x = keras.layers.LayerNormalization(epsilon=1e-5, name=f"feedforward_layer_norm_{index}")(x + fed)
    context, _ = GatedAttentionPooling(units=attention_units, name="attention")(x, mask=mask)
    probabilities = classifier_head(context, num_classes, dropout)
    return keras.Model(token_ids, probabilities, name=name)
