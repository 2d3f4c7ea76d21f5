"""Keras' own layer test, `run_layer_test`, on every public layer of
`ganet_tf.layers` in the configurations the models and users build.

Each case gives the counts Keras checks (trainable and non-trainable
weights, seed generators, losses of one call) from a small function of the
layer's arguments that follows the layer's code: which sublayers it makes
and how many weights each holds. A Keras `Dense` holds a kernel and a bias
(2, 1 without bias), an `EinsumDense` of `MultiHeadAttention` the same, an
`LSTM` or `GRU` cell a kernel, a recurrent kernel and a bias (3) and a seed
generator, a `Conv1D` a kernel and a bias (2), a `LayerNormalization` a
gamma and a beta (2), a `Dropout` a seed generator when its rate is above
0; a `LayerMean` metric adds two non-trainable sums to its layer.

Keras' harness leaves `call_kwargs` out of `build`, of its fit step and of
`compute_output_spec`: layers with several inputs that `build` needs (the
attention layers' query and value) are given them as `input_shape` dicts,
without the fit step (Keras' own tests of `MultiHeadAttention` do the same),
and the fit step of the others runs without their gates (the project's
harness, `tests/layer_harness.run_layer_test`, fits the gated paths).

`tests/test_backends.py` runs this module under JAX too.
"""

import keras
import numpy as np
import pytest

import ganet_tf.layers
from ganet_tf.layers import AuxiliaryNetwork
from ganet_tf.layers import BahdanauAttention
from ganet_tf.layers import ComplementClassifier
from ganet_tf.layers import GatedAttentionPooling
from ganet_tf.layers import GatedMultiHeadAttention
from ganet_tf.layers import GatedSourceAttention
from ganet_tf.layers import GatedTransformerEncoder
from ganet_tf.layers import GateSampler
from ganet_tf.layers import GateSparsity
from ganet_tf.layers import HierarchicalAttention
from ganet_tf.layers import LinearAttention
from ganet_tf.layers import LocalAttentionPooling
from ganet_tf.layers import PositionEmbedding
from ganet_tf.layers import SparseAttentionPooling
from ganet_tf.layers import UninformedGates
from tests.layer_harness import run_keras_layer_test

BATCH, STEPS, FEATURES = 2, 6, 8
RNG = np.random.default_rng(0)
STATES = RNG.normal(size=[BATCH, STEPS, FEATURES]).astype("float32")
LOGITS = RNG.normal(size=[BATCH, STEPS]).astype("float32")
CONTEXT = RNG.normal(size=[BATCH, FEATURES]).astype("float32")
MASK = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]], bool)
# Binary gates with a row whose real gates are all closed (the fallback).
GATES = np.array([[1, 0, 1, 1, 0, 1], [0, 0, 0, 0, 1, 1]], "float32")
RELAXED = RNG.uniform(0.05, 0.95, size=[BATCH, STEPS]).astype("float32")
SEQUENCE = (BATCH, STEPS, FEATURES)
POOLED = ((BATCH, FEATURES), (BATCH, STEPS))  # (context, weights)
QUERY_AND_VALUES = {"query_shape": (BATCH, FEATURES), "values_shape": SEQUENCE}
SELF_ATTENTION = {"query_shape": SEQUENCE, "value_shape": SEQUENCE}

DENSE, DENSE_WITHOUT_BIAS, RECURRENT_CELL, CONVOLUTION, LAYER_NORM = 2, 1, 3, 2, 2
# `keras.layers.MultiHeadAttention` (bias on): query, key, value and output
# projections.
ATTENTION_PROJECTIONS = 4 * DENSE
LAYER_MEAN = 2  # its `_total` and `_count` sums


def dropout_seeds(rate, dropouts=1):
    """The seed generators of `dropouts` Keras `Dropout` layers of `rate`."""
    return dropouts if rate > 0 else 0


def case(layer_cls, init_kwargs, counts, case_id, **arguments):
    """A `pytest.param` of the arguments of `run_keras_layer_test`; `counts`:
    `(trainable, non_trainable, seed_generators)` or with the losses of one
    call last."""
    trainable, non_trainable, seeds, losses = (*counts, 0)[:4]
    arguments = {
        "expected_num_trainable_weights": trainable,
        "expected_num_non_trainable_weights": non_trainable,
        "expected_num_seed_generators": seeds,
        "expected_num_losses": losses,
        **arguments,
    }
    return pytest.param(layer_cls, init_kwargs, arguments, id=f"{layer_cls.__name__}-{case_id}")


def auxiliary_network_counts(encoder, dilation_rates=(1, 2, 4, 8), **_):
    """The encoder's weights and seeds, then `gate_unit` (a `Dense`)."""
    trainable, seeds = {
        "bilstm": (2 * RECURRENT_CELL, 2),  # `Bidirectional`: two LSTMs
        "lstm": (RECURRENT_CELL, 1),
        "fnn": (DENSE, 0),
        "attention": (ATTENTION_PROJECTIONS, 0),  # `MultiHeadAttention`, no dropout
        "conv": (CONVOLUTION * len(dilation_rates), 0),  # one `Conv1D` per rate
    }[encoder]
    return trainable + DENSE, 0, seeds


def gate_sampler_counts(final_temperature=None, **_):
    """No weights; `anneal_step` with annealing; one seed generator; no
    losses."""
    return 0, int(final_temperature is not None), 1


def gate_sparsity_counts(penalty=1e-4, target_density=None, training=False):
    """The `density` metric, and the multiplier of a target; a loss while
    training (the constraint, or the penalty when above 0)."""
    losses = int(training and (target_density is not None or penalty > 0))
    return 0, LAYER_MEAN + int(target_density is not None), 0, losses


def additive_pooling_counts():
    """`GatedAttentionPooling`, `SparseAttentionPooling`: `score_hidden` (a
    `Dense`), `score` (one without bias) and the `attended_density` metric."""
    return DENSE + DENSE_WITHOUT_BIAS, LAYER_MEAN, 0


def attention_counts(dropout=0.0, use_bias=True, use_gate=False, **_):
    """`MultiHeadAttention`'s four projections and with `use_gate` the
    output gate's (`EinsumDense`s: one weight each without bias), and its
    attention dropout."""
    projections = 4 + int(use_gate)
    return projections * (DENSE if use_bias else DENSE_WITHOUT_BIAS), 0, dropout_seeds(dropout)


def transformer_counts(dropout=0.0, **_):
    """`GatedMultiHeadAttention`, two `LayerNormalization`s, the two `Dense`
    layers of the feedforward network; three dropouts (the attention
    weights', the attention output's, the feedforward output's)."""
    trainable = ATTENTION_PROJECTIONS + 2 * LAYER_NORM + 2 * DENSE
    return trainable, 0, dropout_seeds(dropout, 3)


def additive_attention_counts():
    """`BahdanauAttention`, `GatedSourceAttention`: `query_dense` (no bias),
    `key_dense`, `score_dense` (no bias)."""
    return 2 * DENSE_WITHOUT_BIAS + DENSE, 0, 0


def hierarchical_counts(
    summarizer="cnn",
    levels=2,
    summary_inputs="states",
    target_block_size=None,
    halting_penalty=1e-3,
    training=False,
    **_,
):
    """`additive_attention_counts`, then per summarised level (`levels - 1`):
    `"act"` a halting `Dense` (and a multiplier with a target block size,
    and a loss while training); `"rnn"`/`"cnn"` a GRU (3 weights, a seed
    generator) or a `Conv1D`, `summary_query` (no bias), `summary_key` only
    when reading the states, `summary_score` (no bias)."""
    trainable, non_trainable, seeds = additive_attention_counts()
    summarised = levels - 1
    if summarizer == "act":
        losses = summarised if training and (target_block_size is not None or halting_penalty > 0) else 0
        return trainable + summarised * DENSE, summarised * int(target_block_size is not None), seeds, losses
    reader = RECURRENT_CELL if summarizer == "rnn" else CONVOLUTION
    key = DENSE if summary_inputs == "states" else 0
    per_level = reader + DENSE_WITHOUT_BIAS + key + DENSE_WITHOUT_BIAS
    return trainable + summarised * per_level, non_trainable, seeds + summarised * int(summarizer == "rnn")


def auxiliary_network_cases():
    cases = []
    for encoder in ("bilstm", "lstm", "fnn", "attention", "conv"):
        arguments = {"encoder": encoder, "hidden_dim": 4}
        if encoder == "conv":
            arguments["dilation_rates"] = [1, 2]
        if encoder == "fnn":
            arguments["return_logits"] = True
        cases.append(
            case(
                AuxiliaryNetwork,
                arguments,
                auxiliary_network_counts(**arguments),
                encoder,
                input_data=STATES,
                call_kwargs={"mask": MASK},
                expected_output_shape=(BATCH, STEPS),
                expected_output_dtype="float32",
                supports_masking=True,
            )
        )
    return cases


def gate_sampler_cases():
    # Keras' fit step calls the layer with `training=True`: the relaxed
    # draw, whatever the inference mode, so only the training cases fit.
    inference = [
        ("threshold", {}),
        ("sample", {"inference_mode": "sample", "seed": 1}),
        ("top_k", {"inference_mode": "top_k", "inference_density": 0.5}),
        ("relative", {"inference_mode": "relative", "inference_ratio": 0.5}),
        ("nucleus", {"inference_mode": "nucleus", "inference_mass": 0.5}),
    ]
    training = [
        ("relaxed_bernoulli", {"seed": 1}),
        ("hard_concrete_straight_through", {"distribution": "hard_concrete", "straight_through": True}),
        ("annealed", {"temperature": 2.0, "final_temperature": 0.5, "anneal_steps": 10}),
    ]
    return [
        case(
            GateSampler,
            arguments,
            gate_sampler_counts(**arguments),
            name,
            input_data=LOGITS,
            call_kwargs={"mask": MASK, "training": is_training},
            expected_output_shape=(BATCH, STEPS),
            expected_output_dtype="float32",
            supports_masking=True,
            run_training_check=is_training,
        )
        for cases, is_training in ((inference, False), (training, True))
        for name, arguments in cases
    ]


def gate_sparsity_cases():
    return [
        case(
            GateSparsity,
            arguments,
            gate_sparsity_counts(**arguments, training=True),
            name,
            input_data=RELAXED,
            call_kwargs={"mask": MASK, "training": True},
            expected_output_shape=(BATCH, STEPS),
            expected_output_dtype="float32",
        )
        for name, arguments in (("penalty", {"penalty": 1e-3}), ("target_density", {"target_density": 0.3}))
    ]


# The gated cases of the layers below fit no step: Keras' fit step passes
# no `call_kwargs`, so it would fit the ungated path of another case again.


def gated_attention_pooling_cases():
    gated = {"gates": GATES, "mask": MASK}
    relaxed = {"gates": RELAXED, "mask": MASK, "training": True}
    # (name, arguments, call_kwargs, output shapes, fit step)
    configurations = [
        ("soft", {"units": 4}, {"mask": MASK}, POOLED, True),
        ("gates", {"units": 4}, gated, POOLED, False),
        ("most_probable", {"units": 4, "fallback": "most_probable"}, {**gated, "gate_scores": LOGITS}, POOLED, False),
        ("sparse_inference", {"units": 4, "sparse_inference": True, "sparse_buckets": [0.5]}, gated, POOLED, False),
        ("sparse_training", {"units": 4, "sparse_training": True, "training_density": 0.5}, relaxed, POOLED, False),
        # Three outputs, the complement zeros outside training.
        ("complement", {"units": 4, "return_complement": True}, relaxed, (*POOLED, (BATCH, FEATURES)), True),
        ("context_only", {"units": 4, "return_attention_scores": False}, gated, (BATCH, FEATURES), True),
    ]
    return [
        case(
            GatedAttentionPooling,
            arguments,
            additive_pooling_counts(),
            name,
            input_data=STATES,
            call_kwargs=call_kwargs,
            expected_output_shape=shape,
            expected_output_dtype="float32",
            supports_masking=True,
            run_training_check=fit,
        )
        for name, arguments, call_kwargs, shape, fit in configurations
    ]


def gated_multi_head_attention_cases():
    base = {"num_heads": 2, "key_dim": 4}
    configurations = [
        ("ungated", base, {}),
        ("gates", base, {"gates": GATES}),
        ("gates_training", {**base, "dropout": 0.1}, {"gates": RELAXED, "training": True}),
        # Its sparse path without query dropping runs in the blocks of
        # `GatedTransformerEncoder`'s `sparse_inference` case.
        (
            "query_dropping_output_gate",
            {**base, "sparse_inference": True, "query_dropping": True, "sparse_buckets": [0.5], "use_gate": True},
            {"gates": GATES},
        ),
        (
            "sparse_training_without_bias",
            {**base, "sparse_training": True, "training_density": 0.5, "use_bias": False},
            {"gates": RELAXED, "training": True},
        ),
    ]
    return [
        case(
            GatedMultiHeadAttention,
            arguments,
            attention_counts(**arguments),
            name,
            input_shape=SELF_ATTENTION,
            call_kwargs=call_kwargs,
            expected_output_shape=SEQUENCE,
            expected_output_dtype="float32",
            run_training_check=False,
        )
        for name, arguments, call_kwargs in configurations
    ]


def gated_transformer_encoder_cases():
    base = {"intermediate_dim": 16, "num_heads": 2}
    gated = {"gates": GATES, "padding_mask": MASK}
    # `build_ganet_transformer`'s blocks: sparse inference, token dropping
    # unless turned off, sparse training as an option.
    sparse = {**base, "sparse_inference": True, "sparse_buckets": [0.5]}
    # (name, arguments, call_kwargs, fit step)
    configurations = [
        ("ungated", {**base, "dropout": 0.1}, {"padding_mask": MASK}, True),
        ("gates_normalize_first", {**base, "normalize_first": True}, gated, True),
        ("sparse_inference", sparse, gated, False),
        ("token_dropping", {**sparse, "token_dropping": True}, gated, False),
        (
            "sparse_training",
            {**base, "dropout": 0.1, "sparse_training": True, "training_density": 0.5},
            {"gates": RELAXED, "padding_mask": MASK, "training": True},
            False,
        ),
    ]
    return [
        case(
            GatedTransformerEncoder,
            arguments,
            transformer_counts(**arguments),
            name,
            input_data=STATES,
            call_kwargs=call_kwargs,
            expected_output_shape=SEQUENCE,
            expected_output_dtype="float32",
            supports_masking=True,
            run_training_check=fit,
        )
        for name, arguments, call_kwargs, fit in configurations
    ]


def pooling_cases():
    """`LocalAttentionPooling`: `centre_hidden`, `centre` (`Dense`s) and
    `score_projection` (no bias); `SparseAttentionPooling`:
    `additive_pooling_counts`."""
    local = (2 * DENSE + DENSE_WITHOUT_BIAS, 0, 0)
    return [
        case(
            LocalAttentionPooling,
            {"window": 2, "units": 4},
            local,
            "last_state_query",
            input_data=STATES,
            call_kwargs={"mask": MASK},
            expected_output_shape=POOLED,
            expected_output_dtype="float32",
        ),
        case(
            LocalAttentionPooling,
            {"window": 2, "units": 4, "return_attention_scores": False},
            local,
            "query",
            input_data=STATES,
            call_kwargs={"query": CONTEXT, "mask": MASK},
            expected_output_shape=(BATCH, FEATURES),
            expected_output_dtype="float32",
            run_training_check=False,
        ),
        *[
            case(
                SparseAttentionPooling,
                {"units": 4, "normalizer": normalizer},
                additive_pooling_counts(),
                normalizer,
                input_data=STATES,
                call_kwargs={"mask": MASK},
                expected_output_shape=POOLED,
                expected_output_dtype="float32",
            )
            for normalizer in ("sparsemax", "entmax15")
        ],
    ]


def source_attention_cases():
    return [
        case(
            BahdanauAttention,
            {"units": 4},
            additive_attention_counts(),
            "one_step",
            input_shape=QUERY_AND_VALUES,
            call_kwargs={"values_mask": MASK},
            expected_output_shape=POOLED,
            expected_output_dtype="float32",
            run_training_check=False,
        ),
        case(
            BahdanauAttention,
            {"units": 4, "return_attention_scores": False},
            additive_attention_counts(),
            "all_steps",
            input_shape={"query_shape": (BATCH, 3, FEATURES), "values_shape": SEQUENCE},
            expected_output_shape=(BATCH, 3, FEATURES),
            expected_output_dtype="float32",
            run_training_check=False,
        ),
        # `gates` is a required argument: Keras' `compute_output_spec` of
        # the mixed precision check passes the `input_shape` tensors only.
        *[
            case(
                GatedSourceAttention,
                {"units": 4, "fallback": fallback},
                additive_attention_counts(),
                fallback,
                input_shape={**QUERY_AND_VALUES, "gates_shape": (BATCH, STEPS)},
                call_kwargs={"values_mask": MASK},
                expected_output_shape=POOLED,
                expected_output_dtype="float32",
                run_training_check=False,
            )
            for fallback in ("all", "none")
        ],
    ]


def hierarchical_attention_cases():
    configurations = [
        ("cnn", {"units": 4, "summarizer": "cnn", "block_size": 2}),
        ("rnn_keys", {"units": 4, "summarizer": "rnn", "block_size": 3, "summary_inputs": "keys"}),
        ("act", {"units": 4, "summarizer": "act", "levels": 3, "max_block_size": 3}),
        ("act_target", {"units": 4, "summarizer": "act", "target_block_size": 2.0}),
    ]
    return [
        case(
            HierarchicalAttention,
            arguments,
            hierarchical_counts(**arguments, training=True),
            name,
            input_shape=QUERY_AND_VALUES,
            call_kwargs={"values_mask": MASK, "training": True},
            expected_output_shape=POOLED,
            expected_output_dtype="float32",
            run_training_check=False,
        )
        for name, arguments in configurations
    ]


def other_cases():
    return [
        # A `Dense`; a loss while training with a complement and a weight.
        case(
            ComplementClassifier,
            {"units": 3, "complement_weight": 0.5},
            (DENSE, 0, 0, 1),
            "complement",
            input_data=CONTEXT,
            call_kwargs={"complement": CONTEXT, "training": True},
            expected_output_shape=(BATCH, 3),
            expected_output_dtype="float32",
        ),
        # The `embeddings` table.
        case(
            PositionEmbedding,
            {"max_length": 16},
            (1, 0, 0),
            "learned",
            input_data=STATES,
            expected_output_shape=SEQUENCE,
            expected_output_dtype="float32",
            supports_masking=True,
        ),
        # No weights; a seed generator, drawn from by `"random"` only.
        *[
            case(
                UninformedGates,
                {"rule": rule, "density": 0.5},
                (0, 0, 1),
                rule,
                input_data=STATES,
                call_kwargs={"mask": MASK},
                expected_output_shape=(BATCH, STEPS),
                expected_output_dtype="float32",
                supports_masking=True,
            )
            for rule in ("random", "strided")
        ],
        # Query, key, value and output `EinsumDense`s with biases; a
        # `Dropout` of the output.
        case(
            LinearAttention,
            {"num_heads": 2, "key_dim": 4, "dropout": 0.1},
            (ATTENTION_PROJECTIONS, 0, dropout_seeds(0.1)),
            "self_attention",
            input_shape=SELF_ATTENTION,
            call_kwargs={"value_mask": MASK},
            expected_output_shape=SEQUENCE,
            expected_output_dtype="float32",
            run_training_check=False,
        ),
    ]


CASES = [
    *auxiliary_network_cases(),
    *gate_sampler_cases(),
    *gate_sparsity_cases(),
    *gated_attention_pooling_cases(),
    *gated_multi_head_attention_cases(),
    *gated_transformer_encoder_cases(),
    *pooling_cases(),
    *source_attention_cases(),
    *hierarchical_attention_cases(),
    *other_cases(),
]


@pytest.mark.backends
@pytest.mark.parametrize("layer_cls, init_kwargs, arguments", CASES)
def test_keras_layer_test(layer_cls, init_kwargs, arguments):
    run_keras_layer_test(layer_cls, init_kwargs, **arguments)


def test_every_public_layer_has_a_case():
    # `LayerMean` is a metric, not a layer: `tests/layers/test_layer_mean.py`.
    layers = {
        name
        for name in ganet_tf.layers.__all__
        if isinstance(getattr(ganet_tf.layers, name), type)
        and issubclass(getattr(ganet_tf.layers, name), keras.layers.Layer)
    }
    covered = {param.values[0].__name__ for param in CASES}
    assert layers - covered == set()
