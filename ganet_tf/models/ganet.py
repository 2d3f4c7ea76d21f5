"""GA-Net: BiLSTM states pooled by attention over the gates that an
auxiliary network opens."""

import keras

from ganet_tf.layers import ComplementClassifier
from ganet_tf.layers import GatedAttentionPooling
from ganet_tf.layers.argument_checks import is_real
from ganet_tf.models.backbone import bilstm_states
from ganet_tf.models.backbone import classifier_head
from ganet_tf.models.backbone import embedded_tokens
from ganet_tf.models.gate_layers import gated_tokens
from ganet_tf.models.gate_layers import with_gate_defaults
from ganet_tf.models.input_complement_model import InputComplementModel

# What the complement loss reads: the attention over the closed tokens'
# states, or the closed tokens' text re-encoded.
COMPLEMENTS = ("states", "inputs", "inputs_vs_empty", "adversarial")


def build_ganet(
    num_classes,
    vocabulary_size=None,
    embeddings=None,
    embedding_dim=50,
    hidden_dim=100,
    num_layers=2,
    attention_units=100,
    fallback="all",
    sparse_inference=False,
    complement_weight=0.0,
    complement="states",
    complement_target=None,
    dropout=0.3,
    sequence_length=None,
    seed=None,
    name="ganet",
    **gate_options,
):
    """Builds the Gated Attention Network as a functional `keras.Model`.

    Data flow: token ids -> embeddings -> (auxiliary network -> gate logits
    -> gates) and (2-layer BiLSTM -> states) -> gated attention -> softmax.
    The model maps padded token ids `(batch, steps)` (0 = padding) to class
    probabilities `(batch, num_classes)`; its loss adds
    `penalty * ||G||_1 / T` (layer `gate_sparsity`) to whatever loss it is
    compiled with, and it reports the metric `density`. Layers are named
    `embedding`, `auxiliary`, `gates`, `gate_sparsity`, `attention` and
    `probabilities`; `ganet_tf.models.build_explainer` reads them.

    Args:
        num_classes: int >= 2.
        vocabulary_size: int, size of the token vocabulary (with padding
            and OOV); not needed when `embeddings` is given.
        embeddings: optional `(vocabulary_size, dim)` array of initial
            embeddings, e.g. GloVe.
        embedding_dim: int, embedding width without `embeddings`.
        hidden_dim: LSTM units each way of the backbone (paper: 100).
        num_layers: BiLSTM layers of the backbone (paper: 2).
        attention_units: width of the additive attention score network.
        fallback: weights of a row whose gates are all closed, `"all"` or
            `"most_probable"`.
        sparse_inference: bool, the attention pooling scores only the
            attended states at inference (see `GatedAttentionPooling`;
            `results/pooling_gather/` measures what it saves).
        complement_weight: float >= 0, the weight mu of the complement
            loss: while training, attention also pools the tokens whose
            gates are closed, and the classifier, held fixed, must find no
            label there (`ComplementClassifier`). 0 (the default) adds no
            loss and gives GA-Net as in the paper.
        complement: what the complement loss reads, `"states"` (the
            default: attention pools the BiLSTM states of the closed
            tokens, `ComplementClassifier`) or `"inputs"` (the closed
            tokens' embeddings `x_t * (1 - g_t)` are re-encoded by the
            encoder, attention and classifier held fixed; the model is then
            an `InputComplementModel`), or `"inputs_vs_empty"` (the same,
            with the classifier's prediction on the emptied text in place
            of the uniform distribution as the "no label" reference), or
            `"adversarial"` (the closed tokens' embeddings are read by a
            complement predictor trained alongside to recover the model's
            prediction from them, `InputComplementModel(reader="predictor")`).
            Only used with a positive `complement_weight`.
        complement_target: None or float > 0, with `"inputs"`,
            `"inputs_vs_empty"` or `"adversarial"`: the bound in nats on the
            mean complement divergence, the weight then a multiplier
            started at `complement_weight` (`InputComplementModel`).
        dropout: dropout rate on embeddings and on the pooled context.
        sequence_length: optional fixed number of steps of the input.
        seed: seed of the gate sampler.
        name: model name.
        **gate_options: the options of the gate branch
            (`ganet_tf.models.gate_layers.GATE_DEFAULTS` has their defaults):
            auxiliary: encoder of the auxiliary network, `"bilstm"` (the
                default), `"lstm"`, `"fnn"`, `"attention"` or `"conv"`; or
                a rule without weights, `"random"` or `"strided"`
                (`UninformedGates`, the controls of learned gates).
            auxiliary_hidden_dim: width of the auxiliary encoder (20).
            initial_gate_logit: the initial bias of the gate logits;
                positive values start with most gates open. Defaults to
                `logit(rho)` with a `target_density` rho, else 0.
            temperature: Gumbel-softmax temperature tau of the gates (1.0).
            penalty: lambda, weight of the gate L1 penalty (the
                multiplier's initial value with a `target_density`; 1e-4).
            straight_through: hard gates forward, relaxed gradient
                backward (False).
            inference_mode: `"threshold"` (p > 0.5), `"sample"`
                (Bernoulli), `"top_k"` (the
                `max(1, round(inference_density * T))` most probable),
                `"relative"` (`p_t >= inference_ratio * max p`) or
                `"nucleus"` (the fewest most probable tokens holding the
                share `inference_mass` of the text's gate mass; see
                `GateSampler`). Defaults to `"nucleus"` at
                `inference_mass = target_density` with a `target_density`
                (at most as many tokens as `"top_k"` would open, fewer
                where a few gate probabilities stand out), else
                `"threshold"`; `"top_k"` when only `inference_density` is
                given.
            gate_distribution: training gates, `"relaxed_bernoulli"` (the
                default) or `"hard_concrete"` (see `GateSampler`).
            target_density: None or rho in (0, 1): the gate density that a
                Lagrange multiplier steers training to (see
                `GateSparsity`). Defaults to 0.3; None gives the paper's
                fixed `penalty`.
            inference_density: share of tokens `"top_k"` opens; defaults
                to `target_density`.
            final_temperature: None (the default), or the temperature that
                training anneals `temperature` to over `anneal_steps` steps
                (see `GateSampler`).
            anneal_steps: training steps of the annealing (0).
            inference_ratio: r of `"relative"`, in (0, 1].
            inference_mass: pi of `"nucleus"`, in (0, 1]; defaults to
                `target_density`.

    Returns:
        An uncompiled `keras.Model`.

    Example:

    >>> model = build_ganet(6, vocabulary_size=100)
    >>> tuple(model(np.array([[5, 7, 9, 0]])).shape)
    (1, 6)

    References:
        - [Xue et al., 2020](https://arxiv.org/abs/1912.00349), Not All
          Attention Is Needed: Gated Attention Network for Sequence Data.
    """
    options = with_gate_defaults(gate_options)
    if not is_real(complement_weight) or complement_weight < 0:
        raise ValueError(f"`complement_weight` must be a number >= 0. Received: complement_weight={complement_weight}")
    if complement not in COMPLEMENTS:
        raise ValueError(f"`complement` must be one of {COMPLEMENTS}. Received: complement={complement}")
    if complement_target is not None and (complement == "states" or not complement_weight):
        raise ValueError(
            "`complement_target` bounds the loss of a re-encoded complement: give `complement` other than "
            f"'states' and a positive `complement_weight`. Received: complement={complement}, "
            f"complement_weight={complement_weight}"
        )
    token_ids, embedded, mask = embedded_tokens(vocabulary_size, embeddings, embedding_dim, dropout, sequence_length)
    gate_logits, gates = gated_tokens(embedded, options, seed, target_rule="nucleus")
    states = bilstm_states(embedded, hidden_dim, num_layers)
    on_states = complement == "states" and complement_weight > 0
    pooled = GatedAttentionPooling(
        units=attention_units,
        fallback=fallback,
        sparse_inference=sparse_inference,
        return_complement=on_states,
        name="attention",
    )(states, gates=gates, gate_scores=gate_logits, mask=mask)
    if on_states:
        context, _, closed_context = pooled
        if dropout:
            context = keras.layers.Dropout(dropout, name="head_dropout")(context)
        probabilities = ComplementClassifier(
            num_classes, complement_weight=complement_weight, dtype="float32", name="probabilities"
        )(context, complement=closed_context)
    else:
        probabilities = classifier_head(pooled[0], num_classes, dropout)
    if complement != "states" and complement_weight > 0:
        reference = "empty" if complement == "inputs_vs_empty" else "uniform"
        reader = "predictor" if complement == "adversarial" else "model"
        return InputComplementModel(
            token_ids,
            probabilities,
            complement_weight=complement_weight,
            reference=reference,
            reader=reader,
            complement_target=complement_target,
            name=name,
        )
    return keras.Model(token_ids, probabilities, name=name)
