"""The dense Transformer baseline: embeddings + positions -> encoder blocks
-> attention pooling."""

import keras

from ganet_tf.layers import GatedAttentionPooling
from ganet_tf.layers import GatedTransformerEncoder
from ganet_tf.layers.position_embedding import PositionEmbedding
from ganet_tf.models.backbone import classifier_head
from ganet_tf.models.backbone import embedded_tokens
from ganet_tf.models.convolution import dilated_convolutions


def check_transformer_arguments(hidden_dim, num_heads, num_layers, max_length):
    for name, value in (
        ("hidden_dim", hidden_dim),
        ("num_heads", num_heads),
        ("num_layers", num_layers),
        ("max_length", max_length),
    ):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"`{name}` must be a positive integer. Received: {name}={value}")
    if hidden_dim % num_heads:
        raise ValueError(
            f"`hidden_dim` must be a multiple of `num_heads`. Received: hidden_dim={hidden_dim}, num_heads={num_heads}"
        )


def transformer_inputs(
    vocabulary_size,
    embeddings,
    embedding_dim,
    hidden_dim,
    max_length,
    dropout,
    sequence_length,
    stem_dim=None,
    position_embedding=True,
):
    """Token ids -> embeddings (projected to `hidden_dim` when their width
    differs) + learned positions (none with `position_embedding=False`).
    Returns `(token_ids, embedded, x, mask)`:
    `embedded` are the token embeddings the auxiliary network reads, `x`
    the encoder input. With `stem_dim`, a convolution stem
    (`dilated_convolutions`, `stem_dim` filters) reads the embeddings:
    `embedded` is then its states, and the encoder input is the embeddings
    and the stem's states joined and projected to `hidden_dim`."""
    token_ids, embedded, mask = embedded_tokens(vocabulary_size, embeddings, embedding_dim, dropout, sequence_length)
    x = embedded
    if stem_dim is not None:
        embedded = dilated_convolutions(x, mask, stem_dim)
        x = keras.layers.Concatenate(name="embeddings_and_stem")([x, embedded])
    if x.shape[-1] != hidden_dim:
        x = keras.layers.Dense(hidden_dim, name="embedding_projection")(x)
    if position_embedding:
        positions = PositionEmbedding(max_length, name="position_embedding")(x)
        x = keras.layers.Add(name="embeddings_and_positions")([x, positions])
    return token_ids, embedded, x, mask


def encoder_blocks(
    x, mask, num_layers, hidden_dim, num_heads, intermediate_dim, dropout, normalize_first, gates=None, **options
):
    """The encoder of the Transformer models: `num_layers` blocks on `x`.

    Args:
        x: the encoder input `(batch, steps, hidden_dim)`.
        mask: the padding mask `(batch, steps)`.
        num_layers, hidden_dim, num_heads, intermediate_dim, dropout,
            normalize_first: as in `build_transformer`.
        gates: optional gates `(batch, steps)` that every block attends by
            (GA-Net); None for the dense encoder.
        **options: further `GatedTransformerEncoder` arguments of every
            block, e.g. `token_dropping`.

    Returns:
        The output of the last block, a `GatedTransformerEncoder` named
        `encoder_<num_layers>`.
    """
    inputs = {"padding_mask": mask} if gates is None else {"padding_mask": mask, "gates": gates}
    for index in range(num_layers):
        x = GatedTransformerEncoder(
            intermediate_dim or 4 * hidden_dim,
            num_heads,
            dropout=dropout,
            normalize_first=normalize_first,
            name=f"encoder_{index + 1}",
            **options,
        )(x, **inputs)
    return x


def build_transformer(
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
    normalize_first=False,
    sequence_length=None,
    sliding_window=None,
    name="transformer",
):
    """Builds the dense Transformer baseline as a functional `keras.Model`.

    Data flow: token ids -> embeddings (a linear projection to `hidden_dim`
    when their width differs) + learned position embeddings ->
    `num_layers` Transformer encoder blocks (`GatedTransformerEncoder`
    without gates: keras-hub's `TransformerEncoder` computation) ->
    additive attention pooling (`GatedAttentionPooling` without gates, layer
    `attention`) -> softmax classifier. Padding (id 0) is masked throughout.

    Args:
        num_classes: int >= 2.
        vocabulary_size: int; not needed when `embeddings` is given.
        embeddings: optional `(vocabulary_size, dim)` initial embeddings.
        embedding_dim: int, embedding width without `embeddings`.
        hidden_dim: int, width of the encoder; a multiple of `num_heads`.
        num_layers: int, encoder blocks.
        num_heads: int, attention heads.
        intermediate_dim: int, feedforward width; defaults to
            `4 * hidden_dim`.
        attention_units: width of the pooling's score network.
        max_length: int, the most positions (>= the padded length).
        dropout: dropout rate of embeddings, encoder blocks and the pooled
            context.
        normalize_first: pre-norm encoder blocks.
        sequence_length: optional fixed number of input steps.
        sliding_window: None or int > 0, local attention in every block:
            each token attends the tokens less than `sliding_window`
            positions away (`GatedTransformerEncoder`; a mask on the dense
            scores, as costly as dense attention).
        name: model name.

    Returns:
        An uncompiled `keras.Model` from token ids `(batch, steps)` to class
        probabilities `(batch, num_classes)`.

    Example:

    >>> model = build_transformer(2, vocabulary_size=100, hidden_dim=16)
    >>> tuple(model(np.array([[5, 7, 9, 0]])).shape)
    (1, 2)
    """
    check_transformer_arguments(hidden_dim, num_heads, num_layers, max_length)
    token_ids, _, x, mask = transformer_inputs(
        vocabulary_size, embeddings, embedding_dim, hidden_dim, max_length, dropout, sequence_length
    )
    x = encoder_blocks(
        x,
        mask,
        num_layers,
        hidden_dim,
        num_heads,
        intermediate_dim,
        dropout,
        normalize_first,
        sliding_window=sliding_window,
    )
    context, _ = GatedAttentionPooling(units=attention_units, name="attention")(x, mask=mask)
    probabilities = classifier_head(context, num_classes, dropout)
    return keras.Model(token_ids, probabilities, name=name)
