import math

import keras
import numpy as np
import pytest

from ganet_tf.layers import GateSampler
from tests.gate_references import nucleus_reference
from tests.gate_references import relative_reference
from tests.layer_harness import check_config_round_trip
from tests.layer_harness import run_layer_test
from tests.lazy_import import tensorflow as tf
from tests.lazy_import import tensorflow_probability as tfp

TEMPERATURES = [0.1, 0.5, 1.0, 1.5, 2.0]
LOGITS = [-80.0, -40.0, -10.0, 0.0, 10.0, 40.0, 80.0]
GATE_LOGITS = np.random.default_rng(1).normal(size=[3, 8]).astype("float32")
MASK = np.array([[1] * 8, [1] * 5 + [0] * 3, [0] * 8], bool)


@pytest.mark.backends
@pytest.mark.parametrize(
    "arguments",
    [
        {"temperature": 1.5, "seed": 9},
        {
            "temperature": 0.5,
            "straight_through": True,
            "distribution": "hard_concrete",
            "inference_mode": "top_k",
            "inference_density": 0.25,
            "seed": 2,
        },
        {"temperature": 1.0, "final_temperature": 0.1, "anneal_steps": 5, "seed": 4},
        {"temperature": 0.5, "inference_mode": "relative", "inference_ratio": 0.4, "seed": 3},
        {"temperature": 0.5, "inference_mode": "nucleus", "inference_mass": 0.6, "seed": 5},
    ],
)
def test_layer_harness(arguments, tmp_path):
    # Inference gates are deterministic for `threshold` and `top_k`; the fit
    # step trains through the random relaxed gates to the logits.
    run_layer_test(GateSampler, arguments, GATE_LOGITS, tmp_path, mask=MASK)


def test_sample_mode_config_round_trip_and_shape():
    # `sample` draws random inference gates: its config only.
    check_config_round_trip(GateSampler, {"temperature": 0.7, "inference_mode": "sample", "seed": 3})
    layer = GateSampler(inference_mode="sample", seed=3)
    assert layer(np.zeros([2, 7], "float32")).shape == (2, 7)
    assert layer.compute_output_shape((2, 7)) == (2, 7)


def test_fit_step_trains_logits_through_relaxed_gates():
    inputs = keras.Input((5,))
    logits = keras.layers.Dense(5)(inputs)
    gates = GateSampler(temperature=0.5, seed=1)(logits)
    outputs = keras.layers.Dense(1)(gates)
    model = keras.Model(inputs, outputs)
    model.compile("adam", "mse")
    before = model.layers[1].get_weights()[0].copy()
    model.fit(np.random.rand(16, 5), np.random.rand(16, 1), epochs=1, verbose=0)
    assert not np.allclose(before, model.layers[1].get_weights()[0])


@pytest.mark.parametrize("temperature", TEMPERATURES)
def test_gradients_are_finite_over_the_temperature_and_logit_grid(temperature):
    logits = tf.Variable(np.tile(np.asarray(LOGITS, "float32"), (64, 1)))
    layer = GateSampler(temperature=temperature, seed=0)
    with tf.GradientTape() as tape:
        gates = layer(logits, training=True)
        loss = tf.reduce_sum(gates * tf.range(1.0, 8.0))
    gradient = np.asarray(tape.gradient(loss, logits))
    assert np.all(np.isfinite(np.asarray(gates)))
    assert np.all(np.isfinite(gradient))
    assert np.all((np.asarray(gates) >= 0) & (np.asarray(gates) <= 1))


def test_tfp_alone_gives_nan_gradients_where_the_layer_does_not():
    # The reason for the layer's custom gradient: keep it true.
    logits = tf.Variable(tf.fill([256], 40.0))
    seed = tf.constant([1, 2], "int32")
    with tf.GradientTape() as tape:
        sample = tfp.distributions.RelaxedBernoulli(0.1, logits=logits).sample(seed=seed)
        total = tf.reduce_sum(sample)
    assert not np.all(np.isfinite(np.asarray(tape.gradient(total, logits))))
    # The layer draws the same sample and gives a finite gradient.
    layer = GateSampler(temperature=0.1)
    layer._next_seed = lambda: seed
    with tf.GradientTape() as tape:
        gates = layer(logits, training=True)
        total = tf.reduce_sum(gates)
    gradient = np.asarray(tape.gradient(total, logits))
    np.testing.assert_allclose(np.asarray(gates), np.asarray(sample), rtol=1e-6)
    assert np.all(np.isfinite(gradient))


def test_gradient_equals_tfp_reparameterisation_where_tfp_is_finite():
    logits = tf.Variable(np.linspace(-4, 4, 50).astype("float32"))
    temperature = 0.7
    seed = tf.constant([5, 6], "int32")
    with tf.GradientTape() as tape:
        reference = tfp.distributions.RelaxedBernoulli(temperature, logits=logits).sample(seed=seed)
        total = tf.reduce_sum(reference)
    expected = np.asarray(tape.gradient(total, logits))
    layer = GateSampler(temperature=temperature)
    layer._next_seed = lambda: seed
    with tf.GradientTape() as tape:
        gates = layer(logits, training=True)
        total = tf.reduce_sum(gates)
    actual = np.asarray(tape.gradient(total, logits))
    np.testing.assert_allclose(np.asarray(gates), np.asarray(reference), rtol=1e-6)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-6)


@pytest.mark.backends
def test_training_samples_follow_the_gate_probability():
    layer = GateSampler(temperature=0.5, seed=2)
    logits = np.full([20000], np.log(0.2 / 0.8), "float32")
    gates = np.asarray(layer(logits, training=True))
    # P(relaxed gate > 0.5) is exactly the Bernoulli probability.
    assert abs(np.mean(gates > 0.5) - 0.2) < 0.02


def test_inference_modes():
    logits = np.array([[-3.0, -0.1, 0.1, 5.0]], "float32")
    threshold = np.asarray(GateSampler()(logits))
    np.testing.assert_array_equal(threshold, [[0, 0, 1, 1]])
    sampler = GateSampler(inference_mode="sample", seed=4)
    draws = np.asarray(sampler(np.full([20000], np.log(0.3 / 0.7), "float32")))
    assert set(np.unique(draws)) <= {0.0, 1.0}
    assert abs(draws.mean() - 0.3) < 0.02


def test_straight_through_is_hard_forward_with_relaxed_gradient():
    logits = tf.Variable(np.random.default_rng(0).normal(size=[4, 6]).astype("float32"))
    layer = GateSampler(temperature=1.0, straight_through=True, seed=0)
    with tf.GradientTape() as tape:
        gates = layer(logits, training=True)
        loss = tf.reduce_sum(gates)
    assert set(np.unique(np.asarray(gates))) <= {0.0, 1.0}
    gradient = np.asarray(tape.gradient(loss, logits))
    assert np.all(np.isfinite(gradient)) and np.any(gradient > 0)


def test_masked_positions_are_closed():
    logits = np.full([2, 4], 5.0, "float32")
    mask = np.array([[True, True, False, False], [True, False, False, False]])
    layer = GateSampler(seed=0)
    for training in (False, True):
        gates = np.asarray(layer(logits, mask=mask, training=training))
        assert np.all(gates[~mask] == 0)
        assert np.all(gates[mask] > 0.5)


@pytest.mark.backends
@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"temperature": 0.0}, "temperature"),
        ({"temperature": -1.0}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"final_temperature": float("inf"), "anneal_steps": 3}, "final_temperature"),
        ({"inference_mode": "argmax"}, "inference_mode"),
    ],
)
def test_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        GateSampler(**arguments)


# --- hard concrete gates and top_k inference (issue 13) ---------------------


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


@pytest.mark.parametrize("temperature, logit", [(0.5, 0.7), (1.0, -1.0), (2.0, 0.0)])
def test_hard_concrete_hits_exact_zeros_and_ones_at_the_closed_form_rates(temperature, logit):
    layer = GateSampler(temperature=temperature, distribution="hard_concrete", seed=3)
    gates = np.asarray(layer(np.full([40000], logit, "float32"), training=True))
    low, high = -0.1, 1.1
    p_zero = _sigmoid(temperature * np.log(-low / high) - logit)
    p_one = _sigmoid(logit - temperature * np.log((1 - low) / (high - 1)))
    assert np.all((gates >= 0) & (gates <= 1))
    assert abs(np.mean(gates == 0.0) - p_zero) < 0.01
    assert abs(np.mean(gates == 1.0) - p_one) < 0.01
    # The stretch is symmetric about 0.5: P(g > 0.5) is still p.
    assert abs(np.mean(gates > 0.5) - _sigmoid(logit)) < 0.01


@pytest.mark.parametrize("temperature", TEMPERATURES)
def test_hard_concrete_gradients_are_finite_and_zero_at_the_clipped_ends(temperature):
    logits = tf.Variable(np.tile(np.asarray(LOGITS + [0.3, -0.3], "float32"), (64, 1)))
    layer = GateSampler(temperature=temperature, distribution="hard_concrete", seed=0)
    with tf.GradientTape() as tape:
        gates = layer(logits, training=True)
        loss = tf.reduce_sum(gates)
    gradient = np.asarray(tape.gradient(loss, logits))
    gates = np.asarray(gates)
    assert np.all(np.isfinite(gradient))
    clipped = (gates == 0) | (gates == 1)
    assert np.all(gradient[clipped] == 0) and np.all(gradient[~clipped] > 0)


def test_top_k_opens_exactly_round_rho_t_real_tokens_and_never_none():
    rng = np.random.default_rng(7)
    logits = rng.normal(size=[64, 11]).astype("float32") - 5.0  # every p < 0.5
    lengths = rng.integers(0, 12, size=64)
    lengths[:3] = [1, 10, 0]
    mask = np.arange(11)[None, :] < lengths[:, None]
    for rho in (0.1, 0.3, 0.5, 1.0):
        gates = np.asarray(GateSampler(inference_mode="top_k", inference_density=rho)(logits, mask=mask))
        assert set(np.unique(gates)) <= {0.0, 1.0}
        assert np.all(gates[~mask] == 0)
        # Halves round up; a real row opens at least one token.
        expected = np.array([max(1, math.floor(round(rho * n, 6) + 0.5)) if n else 0 for n in lengths])
        np.testing.assert_array_equal(gates.sum(axis=1), expected)
        assert np.all(gates.sum(axis=1)[lengths > 0] >= 1)
        for row in np.flatnonzero(lengths > 0):
            real = logits[row, : lengths[row]]
            opened = gates[row, : lengths[row]] == 1
            if 0 < opened.sum() < lengths[row]:
                assert real[opened].min() >= real[~opened].max()


@pytest.mark.backends
@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"distribution": "kuma"}, "distribution"),
        ({"inference_mode": "top_k"}, "inference_density"),
        ({"inference_mode": "top_k", "inference_density": 0.0}, "inference_density"),
        ({"inference_density": 1.5}, "inference_density"),
        ({"final_temperature": 0.0, "anneal_steps": 3}, "final_temperature"),
        ({"final_temperature": 0.1}, "anneal_steps"),
        ({"anneal_steps": -1}, "anneal_steps"),
        ({"anneal_steps": 2.5}, "anneal_steps"),
        ({"inference_mode": "relative"}, "inference_ratio"),
        ({"inference_mode": "relative", "inference_ratio": 0.0}, "inference_ratio"),
        ({"inference_mode": "relative", "inference_ratio": 1.5}, "inference_ratio"),
        ({"inference_mode": "relative", "inference_ratio": True}, "inference_ratio"),
        ({"inference_mode": "nucleus"}, "inference_mass"),
        ({"inference_mode": "nucleus", "inference_mass": -0.2}, "inference_mass"),
        ({"inference_mode": "nucleus", "inference_mass": "0.5"}, "inference_mass"),
        ({"inference_mode": "nucleus", "inference_ratio": 0.5}, "inference_mass"),
    ],
)
def test_bad_new_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        GateSampler(**arguments)


# --- temperature annealing ----------------------------------------------------


def test_annealed_temperature_follows_the_geometric_schedule_then_stays():
    layer = GateSampler(temperature=2.0, final_temperature=0.125, anneal_steps=4, seed=0)
    logits = np.zeros([2, 3], "float32")
    seen = []
    for _ in range(7):
        seen.append(float(layer.current_temperature()))
        layer(logits, training=True)
    expected = [2.0 * (0.125 / 2.0) ** min(step / 4, 1.0) for step in range(7)]
    np.testing.assert_allclose(seen, expected, rtol=1e-6)
    # Inference calls do not advance the schedule.
    layer(logits, training=False)
    assert float(layer.anneal_step) == 7.0


def test_annealed_samples_sharpen_as_the_temperature_falls():
    # Relaxed gates at a low temperature sit near 0 or 1: the schedule is
    # the one the samples are drawn at, not only a reported number.
    layer = GateSampler(temperature=5.0, final_temperature=0.05, anneal_steps=1, seed=2)
    logits = np.full([20000], 0.4, "float32")
    hot = np.asarray(layer(logits, training=True))
    cold = np.asarray(layer(logits, training=True))
    assert np.mean((hot > 0.05) & (hot < 0.95)) > 0.8
    assert np.mean((cold > 0.05) & (cold < 0.95)) < 0.2
    # Both still open a gate with probability p = sigmoid(0.4).
    for gates in (hot, cold):
        assert abs(np.mean(gates > 0.5) - 1 / (1 + np.exp(-0.4))) < 0.02


def test_fit_advances_the_schedule_once_per_step_and_it_round_trips(tmp_path):
    inputs = keras.Input((5,))
    logits = keras.layers.Dense(5)(inputs)
    sampler = GateSampler(temperature=1.0, final_temperature=0.2, anneal_steps=100, seed=1, name="gates")
    model = keras.Model(inputs, keras.layers.Dense(1)(sampler(logits)))
    model.compile("adam", "mse")
    model.fit(np.random.rand(40, 5), np.random.rand(40, 1), batch_size=8, epochs=2, verbose=0)
    assert float(sampler.anneal_step) == 10.0
    path = str(tmp_path / "annealed.keras")
    model.save(path)
    reloaded = keras.models.load_model(path).get_layer("gates")
    assert float(reloaded.anneal_step) == 10.0
    np.testing.assert_allclose(float(reloaded.current_temperature()), 0.2**0.1, rtol=1e-6)


def test_without_annealing_the_layer_has_no_weights():
    # Models saved before annealing existed hold no weight for this layer.
    assert GateSampler(temperature=0.5).weights == []


# --- adaptive inference: relative and nucleus (issue 39) ----------------------


ADAPTIVE = [
    ("relative", "inference_ratio", relative_reference),
    ("nucleus", "inference_mass", nucleus_reference),
]


def _adaptive(mode, name, value):
    return GateSampler(inference_mode=mode, **{name: value})


@pytest.mark.parametrize("mode, name, reference", ADAPTIVE)
def test_adaptive_rules_open_as_many_gates_as_the_profile_says(mode, name, reference):
    # Two texts of 8 tokens: one token far above the rest, and alike p_t.
    # A rule that opened a fixed share would open as many in both.
    logits = np.array([[-3.0, -2.5, 4.0, -3.0, -2.0, -3.5, -2.8, -3.1], [0.1, 0.0, 0.2, 0.05, -0.1, 0.15, 0.0, 0.1]])
    logits = logits.astype("float32")
    mask = np.ones(logits.shape, bool)
    gates = np.asarray(_adaptive(mode, name, 0.5)(logits, mask=mask))
    np.testing.assert_array_equal(gates == 1, reference(logits, mask, 0.5))
    assert gates[0].sum() == 1 and gates[0, 2] == 1
    assert gates[1].sum() >= 4


@pytest.mark.backends
@pytest.mark.parametrize("mode, name, reference", ADAPTIVE)
def test_adaptive_rules_match_the_numpy_reference(mode, name, reference):
    rng = np.random.default_rng(11)
    # Rows of different spreads and levels, all p < 0.5 in some.
    logits = (rng.normal(size=[96, 13]) * rng.uniform(0.1, 6.0, size=[96, 1]) + rng.uniform(-8, 3, [96, 1])).astype(
        "float32"
    )
    lengths = rng.integers(0, 14, size=96)
    lengths[:3] = [0, 1, 13]
    mask = np.arange(13)[None, :] < lengths[:, None]
    counts = set()
    for value in (0.1, 0.3, 0.5, 0.8, 0.95):
        gates = np.asarray(_adaptive(mode, name, value)(logits, mask=mask))
        assert set(np.unique(gates)) <= {0.0, 1.0}
        np.testing.assert_array_equal(gates == 1, reference(logits, mask, value))
        # One-token floor, no all-closed real row, padding never open.
        assert np.all(gates.sum(axis=1)[lengths > 0] >= 1)
        assert np.all(gates[~mask] == 0) and np.all(gates[lengths == 0] == 0)
        counts.add(tuple(gates.sum(axis=1)[lengths == 13]))
    assert len(counts) > 1


@pytest.mark.parametrize("mode, name, reference", ADAPTIVE)
def test_adaptive_rules_keep_the_floor_for_extreme_logits_and_without_a_mask(mode, name, reference):
    logits = np.array([[-200.0, -300.0, -250.0, -90.0], [80.0, 80.0, -80.0, 10.0]], "float32")
    gates = np.asarray(_adaptive(mode, name, 0.9)(logits))
    np.testing.assert_array_equal(gates == 1, reference(logits, np.ones(logits.shape, bool), 0.9))
    np.testing.assert_array_equal(gates[0], [0, 0, 0, 1])
    assert gates[1, 0] == 1 and gates[1, 2] == 0


@pytest.mark.parametrize("mode, name, reference", ADAPTIVE)
def test_adaptive_rules_under_xla_and_unknown_shapes(mode, name, reference):
    rng = np.random.default_rng(3)
    logits = (rng.normal(size=[16, 9]) * 3).astype("float32")
    mask = np.arange(9)[None, :] < rng.integers(1, 10, size=16)[:, None]
    layer = _adaptive(mode, name, 0.4)
    spec = [tf.TensorSpec([None, None], "float32"), tf.TensorSpec([None, None], "bool")]
    dynamic = tf.function(lambda x, m: layer(x, mask=m), input_signature=spec)
    compiled = tf.function(lambda x, m: layer(x, mask=m), jit_compile=True)
    expected = reference(logits, mask, 0.4)
    for function in (dynamic, compiled):
        np.testing.assert_array_equal(np.asarray(function(logits, mask)) == 1, expected)


def test_adaptive_training_gates_are_the_relaxed_ones():
    logits = np.zeros([4, 6], "float32")
    gates = np.asarray(_adaptive("relative", "inference_ratio", 0.5)(logits, training=True))
    assert np.all((gates > 0) & (gates < 1))


@pytest.mark.parametrize("mode, name, reference", ADAPTIVE)
def test_adaptive_gates_feed_the_sparse_pooling_under_xla(mode, name, reference):
    from ganet_tf.layers import GatedAttentionPooling

    rng = np.random.default_rng(5)
    states = rng.normal(size=[8, 24, 6]).astype("float32")
    logits = (rng.normal(size=[8, 24]) * 2).astype("float32")
    mask = np.arange(24)[None, :] < rng.integers(1, 25, size=8)[:, None]
    sampler = _adaptive(mode, name, 0.5)
    dense = GatedAttentionPooling(units=4)
    # Few bucket sizes: XLA compiles one branch per size.
    sparse = GatedAttentionPooling(units=4, sparse_inference=True, sparse_buckets=(0.25, 0.5))
    gates = sampler(logits, mask=mask)
    expected = dense(states, gates=gates, mask=mask)
    sparse(states, gates=gates, mask=mask)
    sparse.set_weights(dense.get_weights())

    @tf.function(jit_compile=True)
    def compiled(states, logits, mask):
        return sparse(states, gates=sampler(logits, mask=mask), mask=mask)

    for got, want in zip(compiled(states, logits, mask), expected, strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-5)
    np.testing.assert_array_equal(np.asarray(gates) == 1, reference(logits, mask, 0.5))


@pytest.mark.backends
@pytest.mark.parametrize("temperature, logit", [(0.3, 1.5), (1.0, -0.7), (2.0, 0.0)])
def test_relaxed_samples_follow_the_concrete_distribution(temperature, logit):
    # g = sigmoid((u + L) / tau), L ~ Logistic(0, 1): P(g <= x) = sigmoid(tau logit(x) - u).
    layer = GateSampler(temperature=temperature, seed=4)
    gates = np.sort(np.asarray(layer(np.full([20000], logit, "float32"), training=True), "float64"))
    inside = (gates > 0) & (gates < 1)
    x = gates[inside]
    expected = 1.0 / (1.0 + np.exp(-(temperature * np.log(x / (1.0 - x)) - logit)))
    empirical = (np.flatnonzero(inside) + 1.0) / len(gates)
    # Kolmogorov-Smirnov distance; 0.015 is about the 0.1 % critical value.
    assert np.max(np.abs(empirical - expected)) < 0.015


@pytest.mark.parametrize("temperature", [0.1, 0.5, 2.0])
def test_keras_random_draw_is_tfp_relaxed_bernoulli_in_distribution(temperature):
    # The draw other backends use against TFP's sampler (TensorFlow's own),
    # same logits, independent seeds: close means and a small two-sample
    # Kolmogorov-Smirnov distance (about the 0.1 % critical value).
    from ganet_tf.layers.gate_sampler import relaxed_bernoulli_sample

    for logit in (-2.0, 0.0, 1.0):
        logits = np.full([20000], logit, "float32")
        ours = np.sort(np.asarray(relaxed_bernoulli_sample(logits, temperature, keras.random.SeedGenerator(5))))
        theirs = np.sort(
            np.asarray(tfp.distributions.RelaxedBernoulli(temperature, logits=logits).sample(seed=tf.constant([7, 8])))
        )
        assert abs(ours.mean() - theirs.mean()) < 0.02
        pooled = np.concatenate([ours, theirs])
        distance = np.abs(np.searchsorted(ours, pooled, "right") - np.searchsorted(theirs, pooled, "right"))
        assert distance.max() / len(logits) < 0.02
