"""GA-Net on a Transformer: the gates of an auxiliary network decide which
tokens the encoder blocks and the pooling attend, and, at inference, which
tokens they compute at all."""

import keras
from keras import ops

from ganet_tf.layers import GatedAttentionPooling
from ganet_tf.layers.sparse_gather import COARSE_SPARSE_BUCKETS
from ganet_tf.models.backbone import classifier_head
from ganet_tf.models.gate_layers import gated_tokens
from ganet_tf.models.gate_layers import with_gate_defaults
from ganet_tf.models.transformer import check_transformer_arguments
from ganet_tf.models.transformer import encoder_blocks
from ganet_tf.models.transformer import transformer_inputs

# The stems the gates and the encoder may share (None: none).
STEMS = (None, "conv")
# What the pooling reads: the open tokens (GA-Net) or every real token.
POOLINGS = ("gated", "all")


def _check_pooling(pooling, token_dropping, sparse_training):
    if pooling not in POOLINGS:
        raise ValueError(f"`pooling` must be one of {POOLINGS}. Received: pooling={pooling}")
    if pooling == "all" and token_dropping and not sparse_training:
        raise ValueError(
            "`pooling='all'` reads the closed tokens, which token-dropping blocks pass through unchanged at inference "
            "but encode while training: give `sparse_training=True` (they pass through then too) or "
            f"`token_dropping=False`. Received: token_dropping={token_dropping}, sparse_training={sparse_training}"
        )


def build_ganet_transformer(
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
    normalize_first=False,
    fallback="all",
    token_dropping=True,
    sparse_buckets=COARSE_SPARSE_BUCKETS,
    sparse_bucket_multiple=1,
    sparse_training=False,
    stem=None,
    pooling="gated",
    position_embedding=True,
    dropout=0.1,
    sequence_length=None,
    seed=None,
    name="ganet_transformer",
    **gate_options,
):
    """Builds GA-Net with a Transformer encoder as a functional `keras.Model`.

    Data flow: token ids -> embeddings -> auxiliary network -> gate logits
    -> `GateSampler` -> `GateSparsity` -> gates; embeddings (+ positions) ->
    `num_layers` `GatedTransformerEncoder` blocks attending only the open
    tokens -> `GatedAttentionPooling` over the open tokens -> softmax.
    While training the relaxed gates bias the attention scores by `log g`;
    at inference they are binary, and with `token_dropping` every block
    runs only on the open tokens (gathered into a bucketed compact sequence,
    see `GatedTransformerEncoder`), so the encoder's work scales with the
    gate density. Since every block and the pooling use the same gates, the
    closed tokens are never read, and dropping them does not change the
    output. A row whose gates are all closed is encoded with every real
    token open (the pooling then applies its `fallback`).

    With `sparse_training` the blocks drop tokens while training too: each
    keeps the `top_k` share rho of real tokens of highest relaxed gate
    (rho the inference density) and runs on them only, their gates entering
    as straight-through ones (see `GatedTransformerEncoder`); the pooling
    attends to the same tokens.

    Layers are named as in `build_ganet` (`embedding`, `auxiliary`,
    `gates`, `gate_sparsity`, `attention`, `probabilities`), so
    `build_explainer`, `explain` and `export` work unchanged.

    Args:
        num_classes, vocabulary_size, embeddings, embedding_dim, hidden_dim,
            num_layers, num_heads, intermediate_dim, attention_units,
            max_length, normalize_first, dropout, sequence_length: as in
            `build_transformer`.
        fallback, seed: as in `build_ganet`.
        token_dropping: bool, encoder blocks compute only open tokens at
            inference. Defaults to `True`.
        sparse_buckets: bucket fractions of the compacted length, or None
            for exact (dynamic, not XLA-compilable) lengths. Defaults to a
            ladder of ratio 2^(1/2) from 1/32 to 1 (11 sizes): each size is a
            branch per block that XLA compiles ahead of time, so fewer
            sizes compile faster (`docs/transformers.md`).
        sparse_bucket_multiple: int, round the bucket sizes up to a
            multiple of it: 64 on a GPU, whose fused attention kernels
            refuse other lengths (`docs/devices.md`). Defaults to `1`.
        sparse_training: bool, encoder blocks compute only the `top_k`
            tokens of the relaxed gates while training (needs a
            `target_density` or `inference_density`). Defaults to `False`.
        stem: None or `"conv"`: a stem that the gates and the encoder
            share. `"conv"` runs the dilated convolutions of the `"conv"`
            auxiliary network (`auxiliary_hidden_dim` filters) over every
            token; the auxiliary network then reads the stem's states
            (`auxiliary="fnn"` gates each token by its stem state alone),
            and the encoder input is the embeddings joined with them, so
            the attention over the open tokens sees each one's context.
            Defaults to `None` (the gates and the encoder read the
            embeddings).
        pooling: `"gated"`, the pooling attends the open tokens (GA-Net),
            or `"all"`, it attends every real token: the open ones as the
            blocks left them, the closed ones as they entered the blocks
            (with a `stem`, each with its context), so that the blocks add
            attention among the open tokens to what the stem reads of every
            token. `"all"` needs the blocks to treat closed tokens alike in
            training and at inference: `sparse_training=True`, or
            `token_dropping=False`. Defaults to `"gated"`.
        position_embedding: bool, the encoder input adds learned position
            embeddings (`max_length` of them). With `False` the blocks see
            no positions: their attention is order-blind, and only a `stem`
            gives each token its neighbours. Defaults to `True`.
        name: model name.
        **gate_options: the options of the gate branch, as in
            `build_ganet`, except that with a `target_density` and no
            `inference_mode` the test gates are `"top_k"` (the share that
            `sparse_training` trains on), not `"nucleus"`.

    Returns:
        An uncompiled `keras.Model` from token ids `(batch, steps)` to class
        probabilities `(batch, num_classes)`, with the gate penalty in its
        losses and the metric `density`.

    References:
        - [Xue et al., 2020](https://arxiv.org/abs/1912.00349), Not All
          Attention Is Needed: Gated Attention Network for Sequence Data.
        - [Goyal et al., 2020](https://arxiv.org/abs/2001.08950), PoWER-BERT.
    """
    check_transformer_arguments(hidden_dim, num_heads, num_layers, max_length)
    if stem not in STEMS:
        raise ValueError(f"`stem` must be one of {STEMS}. Received: stem={stem}")
    _check_pooling(pooling, token_dropping, sparse_training)
    options = with_gate_defaults(gate_options)
    target_density, inference_density = options["target_density"], options["inference_density"]
    training_density = None
    if sparse_training:
        training_density = target_density if inference_density is None else inference_density
        if training_density is None:
            raise ValueError(
                "`sparse_training=True` keeps the round(rho T) most open tokens: give rho as "
                "`target_density` or `inference_density`. "
                f"Received: target_density={target_density}, inference_density={inference_density}"
            )
    stem_dim = options["auxiliary_hidden_dim"] if stem == "conv" else None
    inputs = (vocabulary_size, embeddings, embedding_dim, hidden_dim, max_length, dropout, sequence_length, stem_dim)
    token_ids, embedded, x, mask = transformer_inputs(*inputs, position_embedding=position_embedding)
    # Given: a stem's convolutions do not carry the padding mask to their states.
    gate_logits, gates = gated_tokens(embedded, options, seed, mask=mask)
    real = ops.cast(mask, gates.dtype)
    any_open = ops.any(ops.greater(gates, 0.5), axis=1, keepdims=True)
    every_real = real
    if sparse_training:
        # Still every real token open at inference (> 0.5), but ranked by
        # the gates, so that a relaxed row without a gate above 0.5 keeps
        # the tokens the pooling keeps, and their gates learn.
        every_real = real * (0.75 + 0.25 * gates)
    x = encoder_blocks(
        x,
        mask,
        num_layers,
        hidden_dim,
        num_heads,
        intermediate_dim,
        dropout,
        normalize_first,
        gates=ops.where(any_open, gates, every_real),
        sparse_inference=True,
        token_dropping=token_dropping,
        sparse_buckets=sparse_buckets,
        sparse_bucket_multiple=sparse_bucket_multiple,
        sparse_training=bool(sparse_training),
        training_density=training_density,
    )
    if pooling == "all":
        context, _ = GatedAttentionPooling(units=attention_units, name="attention")(x, mask=mask)
    else:
        options = {"fallback": fallback, "sparse_training": bool(sparse_training), "training_density": training_density}
        pooling_layer = GatedAttentionPooling(units=attention_units, name="attention", **options)
        context, _ = pooling_layer(x, gates=gates, gate_scores=gate_logits, mask=mask)
    probabilities = classifier_head(context, num_classes, dropout)
    return keras.Model(token_ids, probabilities, name=name)
