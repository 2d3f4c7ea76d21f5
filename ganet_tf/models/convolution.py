"""A convolution-only classifier: the dilated convolutions of the `"conv"`
auxiliary network over every token, then attention pooling; no attention
between tokens (the control for the gated Transformer on long inputs)."""

import keras

from ganet_tf.layers import GatedAttentionPooling
from ganet_tf.layers.auxiliary_network import dilated_conv1d_layers
from ganet_tf.layers.auxiliary_network import masked_convolutions
from ganet_tf.models.backbone import classifier_head
from ganet_tf.models.backbone import embedded_tokens


def build_convolution(
    num_classes,
    vocabulary_size=None,
    embeddings=None,
    embedding_dim=50,
    hidden_dim=20,
    dilation_rates=(1, 2, 4, 8),
    attention_units=100,
    dropout=0.1,
    sequence_length=None,
    name="conv",
):
    """Builds the convolution-only classifier as a functional `keras.Model`.

    Data flow: token ids -> embeddings -> one `Conv1D` (kernel 3, ReLU,
    `hidden_dim` filters, `padding="same"`) per rate of `dilation_rates`,
    each reading padded positions as zeros -> additive attention pooling
    over the real tokens (`GatedAttentionPooling` without gates, layer
    `attention`) -> softmax. The convolutions are those of
    `AuxiliaryNetwork(encoder="conv")`, the gate network of
    `build_ganet_transformer(auxiliary="conv")`: with the same
    `hidden_dim` and `dilation_rates`, this model is that gated model with
    its Transformer blocks and gates taken away, the gate network's
    features pooled instead. Each token sees `1 + 2 * sum(dilation_rates)`
    tokens; the work is linear in the length.

    Args:
        num_classes: int >= 2.
        vocabulary_size: int; not needed when `embeddings` is given.
        embeddings: optional `(vocabulary_size, dim)` initial embeddings.
        embedding_dim: int, embedding width without `embeddings`.
        hidden_dim: int > 0, filters of every convolution. Defaults to
            `20`, the auxiliary network's default width.
        dilation_rates: tuple of positive ints, one convolution per rate.
            Defaults to `(1, 2, 4, 8)`, a context of 31 tokens.
        attention_units: width of the pooling's score network.
        dropout: dropout rate of the embeddings and the pooled context.
        sequence_length: optional fixed number of input steps.
        name: model name.

    Returns:
        An uncompiled `keras.Model` from token ids `(batch, steps)` to class
        probabilities `(batch, num_classes)`.

    Example:

    >>> model = build_convolution(2, vocabulary_size=100, hidden_dim=8)
    >>> tuple(model(np.array([[5, 7, 9, 0]])).shape)
    (1, 2)

    References:
        - [Tay et al., 2021](https://arxiv.org/abs/2011.04006), Long Range
          Arena: A Benchmark for Efficient Transformers.
    """
    token_ids, embedded, mask = embedded_tokens(vocabulary_size, embeddings, embedding_dim, dropout, sequence_length)
    states = dilated_convolutions(embedded, mask, hidden_dim, dilation_rates)
    context, _ = GatedAttentionPooling(units=attention_units, name="attention")(states, mask=mask)
    probabilities = classifier_head(context, num_classes, dropout)
    return keras.Model(token_ids, probabilities, name=name)


def dilated_convolutions(x, mask, hidden_dim=20, dilation_rates=(1, 2, 4, 8)):
    """The convolutions of `AuxiliaryNetwork(encoder="conv")` on `x`, as
    layers of a functional model: one `Conv1D` (kernel 3, ReLU,
    `hidden_dim` filters, `padding="same"`) per rate, named
    `convolution_1`, ..., each reading the padded positions (`mask`
    False) as zeros, so that padding changes no real token's states.

    Returns the states `(batch, steps, hidden_dim)`.
    """
    if not isinstance(hidden_dim, int) or hidden_dim <= 0:
        raise ValueError(f"`hidden_dim` must be a positive integer. Received: hidden_dim={hidden_dim}")
    dilation_rates = tuple(dilation_rates)
    if not dilation_rates or not all(isinstance(rate, int) and rate > 0 for rate in dilation_rates):
        raise ValueError(f"`dilation_rates` must be positive integers. Received: dilation_rates={dilation_rates}")
    return masked_convolutions(dilated_conv1d_layers(hidden_dim, dilation_rates, "convolution"), x, mask)
