import keras
import keras_tuner
import numpy as np
import pytest
import tensorflow as tf

from ganet_tf.tuning import BaselineHyperModel
from ganet_tf.tuning import GANetHyperModel
from ganet_tf.tuning import GANetTransformerHyperModel
from ganet_tf.tuning import SearchSpace
from ganet_tf.tuning import TransformerHyperModel

VOCABULARY = 40


def _tiny_ganet(**kwargs):
    return GANetHyperModel(num_classes=3, vocabulary_size=VOCABULARY, hidden_dim=4, **kwargs)


def test_ganet_from_empty_hyperparameters_has_the_documented_defaults():
    hp = keras_tuner.HyperParameters()
    model = _tiny_ganet().build(hp)
    assert hp.values == {
        "lr": 1e-3,
        "batch_size": 32,
        "tau": 0.5,
        "lam": 1e-3,
        "aux_hidden": 20,
        "aux": "bilstm",
        "target_density": 0.3,
    }
    assert float(model.optimizer.learning_rate) == pytest.approx(1e-3)
    assert model.get_layer("gates").temperature == 0.5
    assert model.get_layer("gate_sparsity").penalty == 1e-3
    auxiliary = model.get_layer("auxiliary")
    assert (auxiliary.encoder, auxiliary.hidden_dim) == ("bilstm", 20)
    assert model.loss is not None and model.compiled


def test_fixed_values_are_respected():
    space = (
        SearchSpace("ganet")
        .with_fixed("lr", 5e-3)
        .with_fixed("tau", 2.0)
        .with_fixed("lam", 4e-6)
        .with_fixed("aux", "fnn")
        .with_fixed("aux_hidden", 7)
        .with_fixed("batch_size", 8)
    )
    hypermodel = _tiny_ganet(space=space)
    hp = keras_tuner.HyperParameters()
    model = hypermodel.build(hp)
    assert hp.values == {
        "lr": 5e-3,
        "batch_size": 8,
        "tau": 2.0,
        "lam": 4e-6,
        "aux_hidden": 7,
        "aux": "fnn",
        "target_density": 0.3,
    }
    assert float(model.optimizer.learning_rate) == pytest.approx(5e-3)
    assert model.get_layer("gates").temperature == 2.0
    assert model.get_layer("gate_sparsity").penalty == 4e-6
    auxiliary = model.get_layer("auxiliary")
    assert (auxiliary.encoder, auxiliary.hidden_dim) == ("fnn", 7)
    # A trial's values win over the defaults; fixed ones cannot be changed.
    trial = keras_tuner.HyperParameters()
    _tiny_ganet().build(trial)
    trial.values.update(tau=1.5, aux="lstm")
    model = _tiny_ganet().build(trial)
    assert model.get_layer("gates").temperature == 1.5
    assert model.get_layer("auxiliary").encoder == "lstm"


@pytest.mark.parametrize("name", ["bilstm", "local", "soft", "sparsemax", "entmax"])
def test_baselines_from_empty_hyperparameters(name):
    hp = keras_tuner.HyperParameters()
    window = 4 if name == "local" else None
    model = BaselineHyperModel(name, num_classes=3, vocabulary_size=VOCABULARY, hidden_dim=4, window=window).build(hp)
    assert hp.values == {"lr": 1e-3, "batch_size": 32}
    assert model.name == name and float(model.optimizer.learning_rate) == pytest.approx(1e-3)
    if name == "local":
        assert model.get_layer("attention").window == 4


def test_bad_hypermodel_arguments():
    with pytest.raises(ValueError, match="Unknown baseline"):
        BaselineHyperModel("ganet", num_classes=3, vocabulary_size=VOCABULARY)
    with pytest.raises(ValueError, match="`window` belongs to the local"):
        BaselineHyperModel("soft", num_classes=3, vocabulary_size=VOCABULARY, window=4)
    with pytest.raises(ValueError, match="search space of 'bilstm'"):
        _tiny_ganet(space=SearchSpace("bilstm"))
    with pytest.raises(ValueError, match="density_weight"):
        _tiny_ganet(density_weight=-1)


# Keras' note at the end of a dataset of unknown size (the unbatched one).
@pytest.mark.filterwarnings("ignore:Your input ran out of data")
def test_fit_rebatches_by_the_trial_batch_size_and_logs_the_tradeoff():
    keras.utils.set_random_seed(0)
    space = SearchSpace("ganet").with_fixed("batch_size", 16).with_fixed("aux_hidden", 4)
    # Eager: tracing would cost more than the three steps.
    hypermodel = _tiny_ganet(space=space, density_weight=0.5, run_eagerly=True)
    hp = keras_tuner.HyperParameters()
    model = hypermodel.build(hp)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, VOCABULARY, size=(40, 6)).astype("int32")
    labels = rng.integers(0, 3, size=40)
    # An unbatched dataset for training, a batched one for validation.
    train = tf.data.Dataset.from_tensor_slices((ids, labels))
    validation = tf.data.Dataset.from_tensor_slices((ids, labels)).batch(7)
    steps = []
    callback = keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: steps.append(batch))
    history = hypermodel.fit(hp, model, train, validation_data=validation, epochs=1, callbacks=[callback], verbose=0)
    assert len(steps) == 3  # 40 examples in batches of 16
    logs = {name: values[-1] for name, values in history.history.items()}
    expected = logs["val_accuracy"] - 0.5 * logs["val_density"]
    assert logs["val_tradeoff"] == pytest.approx(expected, abs=1e-6)
    with pytest.raises(ValueError, match="batch_size` is a hyperparameter"):
        hypermodel.fit(hp, model, ids, labels, batch_size=4)


def test_target_density_reaches_the_gate_layers():
    space = SearchSpace("ganet").with_fixed("target_density", 0.1)
    model = _tiny_ganet(space=space).build(keras_tuner.HyperParameters())
    assert model.get_layer("gate_sparsity").target_density == 0.1
    gates = model.get_layer("gates")
    assert (gates.inference_mode, gates.inference_mass) == ("nucleus", 0.1)
    # 0 is the paper's fixed lambda, with threshold test gates.
    paper = _tiny_ganet(space=SearchSpace("ganet").with_fixed("target_density", 0.0))
    model = paper.build(keras_tuner.HyperParameters())
    assert model.get_layer("gate_sparsity").target_density is None
    assert model.get_layer("gates").inference_mode == "threshold"


def test_transformer_from_empty_hyperparameters_is_trains_setting():
    hp = keras_tuner.HyperParameters()
    model = TransformerHyperModel(num_classes=3, vocabulary_size=VOCABULARY).build(hp)
    assert hp.values == {"lr": 1e-3, "batch_size": 32, "num_layers": 2, "hidden": 100, "dropout": 0.3}
    assert model.name == "transformer" and model.compiled
    encoders = [layer for layer in model.layers if layer.name.startswith("encoder_")]
    assert [layer.name for layer in encoders] == ["encoder_1", "encoder_2"]
    assert (encoders[0].num_heads, encoders[0].intermediate_dim, encoders[0].dropout) == (4, 400, 0.3)


@pytest.mark.parametrize("model_class", [TransformerHyperModel, GANetTransformerHyperModel])
def test_transformers_build_the_trials_encoder(model_class):
    hypermodel = model_class(num_classes=3, vocabulary_size=VOCABULARY)
    trial = keras_tuner.HyperParameters()
    hypermodel.build(trial)
    trial.values.update(num_layers=1, hidden=8, dropout=0.1, lr=2e-3)
    model = hypermodel.build(trial)
    encoders = [layer for layer in model.layers if layer.name.startswith("encoder_")]
    assert [layer.name for layer in encoders] == ["encoder_1"]
    assert (encoders[0].num_heads, encoders[0].intermediate_dim, encoders[0].dropout) == (4, 32, 0.1)
    assert model.get_layer("embedding_projection").units == 8
    assert model.get_layer("embedding_dropout").rate == 0.1
    assert float(model.optimizer.learning_rate) == pytest.approx(2e-3)


def test_ganet_transformer_gates_take_the_trials_values():
    space = (
        SearchSpace("ganet_transformer")
        .with_fixed("hidden", 8)
        .with_fixed("target_density", 0.1)
        .with_fixed("tau", 2.0)
        .with_fixed("lam", 4e-6)
        .with_fixed("aux", "fnn")
        .with_fixed("aux_hidden", 7)
    )
    hypermodel = GANetTransformerHyperModel(num_classes=3, vocabulary_size=VOCABULARY, space=space, seed=5)
    model = hypermodel.build(keras_tuner.HyperParameters())
    assert model.name == "ganet_transformer"
    sparsity = model.get_layer("gate_sparsity")
    assert (sparsity.target_density, sparsity.penalty) == (0.1, 4e-6)
    gates = model.get_layer("gates")
    assert (gates.temperature, gates.inference_mode, gates.inference_density) == (2.0, "top_k", 0.1)
    auxiliary = model.get_layer("auxiliary")
    assert (auxiliary.encoder, auxiliary.hidden_dim) == ("fnn", 7)
    paper = space.with_fixed("target_density", 0.0)
    model = GANetTransformerHyperModel(num_classes=3, vocabulary_size=VOCABULARY, space=paper).build(
        keras_tuner.HyperParameters()
    )
    assert model.get_layer("gate_sparsity").target_density is None


def test_transformers_take_their_width_and_dropout_from_the_trial_only():
    for model_class in (TransformerHyperModel, GANetTransformerHyperModel):
        with pytest.raises(ValueError, match="hyperparameters of the trial.*Received: hidden_dim=64"):
            model_class(num_classes=3, vocabulary_size=VOCABULARY, hidden_dim=64)
        with pytest.raises(ValueError, match="Received: dropout=0.5"):
            model_class(num_classes=3, vocabulary_size=VOCABULARY, dropout=0.5)
    with pytest.raises(ValueError, match="search space of 'ganet'"):
        GANetTransformerHyperModel(num_classes=3, vocabulary_size=VOCABULARY, space=SearchSpace("ganet"))
