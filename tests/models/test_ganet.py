import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from ganet_tf.models import build_explainer
from ganet_tf.models import build_ganet
from tests.eager import functions_run_eagerly
from tests.gate_references import nucleus_open

RNG = np.random.default_rng(0)
IDS = RNG.integers(2, 50, size=[16, 9]).astype("int32")
IDS[1, 4:] = 0
IDS[2, 1:] = 0
LABELS = RNG.integers(0, 3, size=[16])


def small_ganet(**kwargs):
    arguments = dict(
        num_classes=3,
        vocabulary_size=50,
        embedding_dim=8,
        hidden_dim=6,
        attention_units=5,
        auxiliary_hidden_dim=4,
        seed=1,
    )
    arguments.update(kwargs)
    return build_ganet(**arguments)


@pytest.mark.usefixtures("eager_functions")
def test_fit_trains_and_reports_density():
    model = small_ganet(penalty=1e-2)
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(IDS, LABELS, validation_data=(IDS, LABELS), epochs=2, batch_size=8, verbose=0)
    for key in ("loss", "accuracy", "density", "val_density"):
        assert np.all(np.isfinite(history.history[key]))
    assert model.output_shape == (None, 3)


def test_gradients_reach_the_auxiliary_network_in_training():
    model = small_ganet()
    auxiliary = model.get_layer("auxiliary")
    with tf.GradientTape() as tape:
        probabilities = model(IDS, training=True)
        loss = keras.losses.sparse_categorical_crossentropy(LABELS, probabilities)
        loss = tf.reduce_mean(loss)
    gradients = tape.gradient(loss, auxiliary.trainable_weights)
    assert all(g is not None for g in gradients)
    assert all(np.all(np.isfinite(g.numpy())) for g in gradients)
    assert any(np.any(g.numpy() != 0) for g in gradients)


def test_loss_includes_the_gate_penalty_only_in_training():
    model = small_ganet(penalty=10.0, dropout=0.0)
    model(IDS, training=True)
    assert len(model.losses) == 1 and float(model.losses[0]) > 0
    model(IDS, training=False)
    assert model.losses == []


def test_explainer_gives_binary_gates_and_attention_on_open_tokens():
    model = small_ganet()
    outputs = build_explainer(model).predict(IDS, verbose=0)
    mask = IDS != 0
    assert set(np.unique(outputs["gates"])) <= {0.0, 1.0}
    assert np.all(outputs["gates"][~mask] == 0)
    # The default test gates: the fewest most probable real tokens holding
    # 0.3 of the text's gate mass (nucleus), never more than ceil(0.3 T).
    for row, length in enumerate(mask.sum(axis=1)):
        opened = outputs["gates"][row] == 1
        real_p = outputs["gate_probabilities"][row][mask[row]]
        np.testing.assert_array_equal(opened[mask[row]], nucleus_open(real_p, 0.3))
        assert 1 <= opened.sum() <= np.ceil(0.3 * length)
        probabilities, real_opened = outputs["gate_probabilities"][row][mask[row]], opened[mask[row]]
        if not real_opened.all():
            assert probabilities[real_opened].min() >= probabilities[~real_opened].max()
    attention = outputs["attention"]
    assert np.all(attention[~mask] == 0)
    np.testing.assert_allclose(attention.sum(axis=1), 1.0, atol=1e-5)
    rows_with_open = outputs["gates"].sum(axis=1) > 0
    assert np.all(attention[rows_with_open][outputs["gates"][rows_with_open] == 0] == 0)
    np.testing.assert_allclose(outputs["probabilities"], model.predict(IDS, verbose=0), atol=1e-6)


@pytest.mark.usefixtures("eager_functions")
def test_every_auxiliary_encoder_builds_and_trains():
    for encoder in ("lstm", "fnn", "attention"):
        model = small_ganet(auxiliary=encoder)
        model.compile("adam", "sparse_categorical_crossentropy")
        history = model.fit(IDS, LABELS, epochs=1, verbose=0)
        assert np.isfinite(history.history["loss"][0])


RELOAD = """
import sys
import numpy as np
import pytest
import keras
import ganet_tf.layers  # registers the layers
model = keras.models.load_model(sys.argv[1])
np.save(sys.argv[3], model.predict(np.load(sys.argv[2]), verbose=0))
"""


def test_keras_file_reloads_in_a_fresh_process_with_identical_predictions(tmp_path):
    model = small_ganet(auxiliary="bilstm")
    model.compile("adam", "sparse_categorical_crossentropy")
    with functions_run_eagerly():  # trained weights to save, not how they train
        model.fit(IDS, LABELS, epochs=1, verbose=0)
    path = str(tmp_path / "ganet.keras")
    model.save(path)
    np.save(tmp_path / "ids.npy", IDS)
    subprocess.run(
        [sys.executable, "-c", RELOAD, path, str(tmp_path / "ids.npy"), str(tmp_path / "out.npy")],
        check=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), model.predict(IDS, verbose=0))


def test_complement_weight_zero_is_ganet_and_changes_no_inference_output():
    plain = small_ganet()
    zero = small_ganet(complement_weight=0.0)
    assert [type(layer) for layer in zero.layers] == [type(layer) for layer in plain.layers]
    assert type(zero.get_layer("probabilities")) is keras.layers.Dense
    assert not zero.get_layer("attention").return_complement
    complemented = small_ganet(complement_weight=0.5)
    complemented.set_weights(plain.get_weights())
    np.testing.assert_allclose(complemented.predict(IDS, verbose=0), plain.predict(IDS, verbose=0), rtol=1e-6)
    plain(IDS, training=True)
    assert len(plain.losses) == 1  # the gate penalty only


def test_complement_loss_reaches_the_gates_only():
    model = small_ganet(complement_weight=1.0, penalty=0.0, dropout=0.0)
    head = model.get_layer("probabilities")
    with tf.GradientTape() as tape:
        model(IDS, training=True)
        (loss,) = head.losses
    auxiliary = model.get_layer("auxiliary").trainable_weights
    # Held fixed: the classifier, and the states and scores attention pools.
    fixed = [head.kernel, head.bias, *model.get_layer("attention").trainable_weights]
    fixed += model.get_layer("bilstm_2").trainable_weights
    gradients = tape.gradient(loss, [*auxiliary, *fixed])
    assert sum(float(tf.reduce_sum(tf.abs(g))) for g in gradients[: len(auxiliary)] if g is not None) > 0
    assert all(g is None for g in gradients[len(auxiliary) :])
    assert float(loss) > 0


def test_complement_weight_survives_a_keras_round_trip(tmp_path):
    model = small_ganet(complement_weight=0.3)
    path = str(tmp_path / "complement.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.get_layer("probabilities").complement_weight == 0.3
    assert loaded.get_layer("attention").return_complement
    np.testing.assert_allclose(loaded.predict(IDS, verbose=0), model.predict(IDS, verbose=0), rtol=1e-6)
    loaded(IDS, training=True)
    assert len(loaded.get_layer("probabilities").losses) == 1


def test_complement_must_be_states_or_inputs():
    with pytest.raises(ValueError, match="Received: complement=tokens"):
        small_ganet(complement="tokens", complement_weight=1.0)
    # With complement_weight 0 either kind is GA-Net as in the paper.
    assert type(small_ganet(complement="inputs")) is type(small_ganet())
    assert type(small_ganet(complement="inputs_vs_empty")) is type(small_ganet())
