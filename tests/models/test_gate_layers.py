"""The defaults of the gate branch that the GA-Net builders share."""

import math

import pytest

from ganet_tf.models import build_ganet
from ganet_tf.models import build_ganet_transformer
from ganet_tf.models import build_soft_attention
from ganet_tf.models import gate_rule
from ganet_tf.models.gate_layers import resolve_gate_defaults


@pytest.mark.parametrize(
    "given, target_rule, expected",
    [
        # (target_density, inference_mode, inference_density, inference_mass)
        ((0.3, None, None, None), "nucleus", ("nucleus", None, 0.3)),
        ((0.3, None, None, None), "top_k", ("top_k", 0.3, None)),
        ((0.2, None, None, None), "nucleus", ("nucleus", None, 0.2)),
        ((None, None, None, None), "nucleus", ("threshold", None, None)),
        # A parameter alone picks its mode.
        ((0.3, None, 0.1, None), "nucleus", ("top_k", 0.1, None)),
        ((0.3, None, None, 0.5), "top_k", ("nucleus", None, 0.5)),
        # An explicit mode wins and takes rho as its parameter.
        ((0.3, "top_k", None, None), "nucleus", ("top_k", 0.3, None)),
        ((0.4, "nucleus", None, None), "top_k", ("nucleus", None, 0.4)),
        ((0.3, "threshold", None, None), "nucleus", ("threshold", None, None)),
    ],
)
def test_resolve_gate_defaults(given, target_rule, expected):
    target_density, mode, density, mass = given
    logit, *rule = resolve_gate_defaults(None, target_density, mode, density, mass, target_rule=target_rule)
    assert tuple(rule) == expected
    assert logit == pytest.approx(math.log(target_density / (1 - target_density)) if target_density else 0.0)


def test_resolve_gate_defaults_rejects_an_unknown_target_rule():
    with pytest.raises(ValueError, match="`target_rule` must be one of .* Received: target_rule=relative"):
        resolve_gate_defaults(None, 0.3, None, None, target_rule="relative")


def test_builders_default_test_gates():
    # GA-Net attends text by text (nucleus at pi = rho); the gated Transformer
    # keeps top_k, the share its sparse blocks train on.
    assert gate_rule(build_ganet(2, vocabulary_size=20)) == {"inference_mode": "nucleus", "inference_mass": 0.3}
    assert gate_rule(build_ganet(2, vocabulary_size=20, target_density=None)) == {"inference_mode": "threshold"}
    transformer = build_ganet_transformer(2, vocabulary_size=20, hidden_dim=8, num_heads=2, max_length=8)
    assert gate_rule(transformer) == {"inference_mode": "top_k", "inference_density": 0.3}
    assert gate_rule(build_soft_attention(2, vocabulary_size=20)) is None


@pytest.mark.parametrize("builder", [build_ganet, build_ganet_transformer])
def test_the_builders_share_one_list_of_gate_options(builder):
    from ganet_tf.models.gate_layers import GATE_DEFAULTS
    from ganet_tf.models.gate_layers import with_gate_defaults

    assert with_gate_defaults({"temperature": 0.2}) == {**GATE_DEFAULTS, "temperature": 0.2}
    with pytest.raises(TypeError, match=r"`tau` is not an argument of the GA-Net builders.*Received: tau=0.5"):
        builder(2, vocabulary_size=10, tau=0.5)
