import keras
import numpy as np
import pytest

from ganet_tf.layers import GateSampler
from ganet_tf.layers import UninformedGates
from tests.layer_harness import check_config_round_trip
from tests.layer_harness import run_layer_test

EMBEDDED = np.zeros([3, 10, 4], "float32")
MASK = np.array([[1] * 10, [1] * 6 + [0] * 4, [0] * 10], bool)


def _chosen(logits):
    return keras.ops.convert_to_numpy(logits) > 0


def _strided_reference(mask, density):
    """Every round(1 / density)-th real position, counted over real ones."""
    stride = max(1, round(1 / density))
    index = np.cumsum(mask, axis=1) - 1
    return mask & (index % stride == 0)


@pytest.mark.backends
@pytest.mark.parametrize("density", [0.2, 0.3, 0.5, 1.0])
def test_strided_matches_a_numpy_reference(density):
    mask = MASK.copy()
    mask[0, [2, 5]] = False  # padding inside a row: positions count real tokens only
    logits = keras.ops.convert_to_numpy(UninformedGates(rule="strided", density=density)(EMBEDDED, mask=mask))
    np.testing.assert_array_equal(logits > 0, _strided_reference(mask, density))
    assert np.all(logits[mask] == np.where(_strided_reference(mask, density), 20.0, -20.0)[mask])
    assert np.all(logits[~mask] <= -1e4)


@pytest.mark.backends
def test_random_opens_round_rho_t_real_tokens_afresh_at_every_call():
    layer = UninformedGates(rule="random", density=0.3, seed=0)
    draws = [_chosen(layer(EMBEDDED, mask=MASK)) for _ in range(40)]
    for chosen in draws:
        assert not chosen[~MASK].any()
        # max(1, round(0.3 T)) of each row's T real tokens; none of none.
        assert chosen.sum(axis=1).tolist() == [3, 2, 0]
    assert len({chosen.tobytes() for chosen in draws}) > 30
    # Uniform over the real positions: each is chosen about 0.3 (row 0) and
    # 2 / 6 (row 1) of the time.
    frequency = np.mean(draws, axis=0)
    assert np.all(np.abs(frequency[0] - 0.3) < 0.2) and np.all(np.abs(frequency[1, :6] - 2 / 6) < 0.2)


@pytest.mark.backends
def test_the_same_seed_draws_the_same_tokens():
    first = UninformedGates(rule="random", density=0.3, seed=7)(EMBEDDED, mask=MASK)
    second = UninformedGates(rule="random", density=0.3, seed=7)(EMBEDDED, mask=MASK)
    np.testing.assert_array_equal(_chosen(first), _chosen(second))


@pytest.mark.backends
@pytest.mark.parametrize("rule", ["random", "strided"])
@pytest.mark.parametrize("training", [True, False])
def test_a_gate_sampler_opens_the_chosen_tokens(rule, training):
    # Relaxed at temperature 1 (training) or by threshold (test, the GA-Net
    # builders' rule for these gates): the gates are the chosen tokens.
    layer = UninformedGates(rule=rule, density=0.3, seed=1)
    logits = layer(EMBEDDED, mask=MASK)
    sampler = GateSampler(temperature=1.0, inference_mode="threshold", seed=0)
    gates = keras.ops.convert_to_numpy(sampler(logits, mask=MASK, training=training))
    np.testing.assert_allclose(gates, _chosen(logits).astype("float32"), atol=1e-6)


@pytest.mark.backends
def test_the_builders_test_with_the_tokens_chosen():
    from ganet_tf.models import build_ganet_transformer

    model = build_ganet_transformer(2, vocabulary_size=20, hidden_dim=8, num_heads=2, auxiliary="strided", seed=0)
    assert model.get_layer("gates").inference_mode == "threshold"
    assert model.get_layer("auxiliary").density == 0.3  # the builders' default target density
    with pytest.raises(ValueError, match="give rho as `target_density` or `inference_density`"):
        build_ganet_transformer(
            2, vocabulary_size=20, hidden_dim=8, num_heads=2, auxiliary="random", target_density=None
        )


def test_the_layer_test_harness(tmp_path):
    # Strided only: random draws differ between the harness's calls. No fit
    # step: the layer has no weights and its logits do not depend on inputs.
    run_layer_test(UninformedGates, {"rule": "strided", "density": 0.3}, EMBEDDED, tmp_path, mask=MASK, fit=False)
    check_config_round_trip(UninformedGates, {"rule": "random", "density": 0.2, "logit": 10.0, "seed": 3})


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"rule": "uniform"}, "`rule` must be one of"),
        ({"density": 0.0}, r"`density` must be a number in \(0, 1\]"),
        ({"density": 1.5}, r"`density` must be a number in \(0, 1\]"),
        ({"logit": -1.0}, "`logit` must be a positive number"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        UninformedGates(**kwargs)
