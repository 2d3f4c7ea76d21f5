import keras
import numpy as np

from ganet_tf.fitting.optimizer import build_optimizer
from ganet_tf.models import build_ganet
from ganet_tf.training.train import compile_model


def _traces_of_one_fit(model):
    """How many times `fit` traces the model's train step (each trace is a
    Python call of `train_step`; a traced step runs without one)."""
    traces = []
    step = model.train_step

    def counted(data):
        traces.append(data)
        return step(data)

    model.train_step = counted
    x = np.random.default_rng(0).integers(1, 20, size=(8, 6))
    model.fit(x, np.arange(8) % 3, batch_size=4, epochs=2, verbose=0)
    return len(traces)


def _ganet():
    return build_ganet(
        3, vocabulary_size=20, sequence_length=6, embedding_dim=4, hidden_dim=4, auxiliary_hidden_dim=3, seed=0
    )


def test_a_compiled_ganet_traces_its_train_step_once():
    model = compile_model(_ganet(), 1e-3)
    assert model.optimizer.built and len(model.optimizer.variables) > len(model.trainable_variables)
    assert _traces_of_one_fit(model) == 1
    # Keras alone builds the optimizer inside the first trace: TensorFlow traces twice.
    plain = _ganet()
    plain.compile("adam", "sparse_categorical_crossentropy")
    assert _traces_of_one_fit(plain) == 2


def test_an_unbuilt_model_is_left_to_build_in_fit():
    model = keras.Sequential([keras.layers.Dense(2)])
    model.compile("adam", "mse")
    assert build_optimizer(model) is model and not model.optimizer.built
    model.fit(np.ones((4, 3)), np.zeros((4, 2)), verbose=0)
    assert model.optimizer.built and model.optimizer.iterations.numpy() == 1


def _adam_weights(gradients, accumulation_steps):
    weights = keras.Variable(np.zeros(3, "float32"))
    optimizer = keras.optimizers.Adam(0.1, gradient_accumulation_steps=accumulation_steps)
    for gradient in gradients:
        optimizer.apply_gradients([(keras.ops.convert_to_tensor(gradient), weights)])
    return keras.ops.convert_to_numpy(weights), int(keras.ops.convert_to_numpy(optimizer.iterations))


def test_adam_counts_its_bias_correction_per_update_under_gradient_accumulation():
    # `train --gradient-accumulation-steps` (lra_text's dense runs) relies on
    # Keras' Adam counting updates, not micro-batches, in its bias correction:
    # 8 micro-batches accumulated by 4 must equal 2 plain steps on their means.
    micro = np.random.default_rng(0).normal(size=(8, 3)).astype("float32")
    accumulated, updates = _adam_weights(micro, 4)
    plain, steps = _adam_weights(micro.reshape(2, 4, 3).mean(axis=1), None)
    np.testing.assert_allclose(accumulated, plain, rtol=1e-6, atol=1e-7)
    assert updates == steps == 2


def test_cosine_schedule_decays_to_zero_over_the_runs_updates():
    import pytest

    from ganet_tf.errors import GANetInputError
    from ganet_tf.training import TrainConfig
    from ganet_tf.training.train import anneal_steps
    from ganet_tf.training.train import learning_rate

    assert learning_rate(TrainConfig(lr=0.01), 95) == 0.01
    cosine = TrainConfig(lr=0.01, lr_schedule="cosine", epochs=2, batch_size=4)
    schedule = learning_rate(cosine, 8)
    assert schedule.decay_steps == 4  # 2 epochs of ceil(8 / 4) batches
    accumulated = TrainConfig(lr=0.01, lr_schedule="cosine", epochs=3, batch_size=10, gradient_accumulation_steps=2)
    assert learning_rate(accumulated, 95).decay_steps == 15  # 30 batches, an update every 2
    counted = TrainConfig(lr=0.01, lr_schedule="cosine", epochs=16, batch_size=32, steps_per_epoch=352)
    assert learning_rate(counted, 22_500).decay_steps == 16 * 352
    # The gates' temperature anneals over the same epochs.
    assert anneal_steps(TrainConfig(anneal_epochs=2, batch_size=32, steps_per_epoch=352), 22_500) == 2 * 352
    assert anneal_steps(TrainConfig(anneal_epochs=2, batch_size=32), 22_500) == 2 * 704
    with pytest.raises(GANetInputError, match="Unknown --lr-schedule 'linear'"):
        TrainConfig(lr_schedule="linear").validate()
    # A fit of those 2 epochs makes exactly the schedule's updates: it ends at 0.
    model = _ganet()
    compile_model(model, schedule, jit_compile=False)
    x = np.random.default_rng(0).integers(1, 20, size=(8, 6))
    model.fit(x, np.arange(8) % 3, batch_size=4, epochs=2, verbose=0)
    assert int(model.optimizer.iterations) == 4
    assert float(model.optimizer.learning_rate) == pytest.approx(0.0, abs=1e-9)
    assert float(schedule(0)) == pytest.approx(0.01)


def test_lr_schedule_flag_reaches_the_config():
    from ganet_tf.cli import build_parser
    from ganet_tf.training.commands import config_from

    parse = build_parser().parse_args
    assert config_from(parse(["train", "--out", "x", "--lr-schedule", "cosine"])).lr_schedule == "cosine"
    assert config_from(parse(["train", "--out", "x"])).lr_schedule is None
