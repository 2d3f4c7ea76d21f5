import inspect

import keras_tuner
import pytest

from ganet_tf.tuning.oracles import make_oracle
from ganet_tf.tuning.search_config import SearchConfig


@pytest.mark.parametrize(
    "tuner, objective, oracle_class, name, direction",
    [
        ("random", "val_accuracy", "RandomSearchOracle", "val_accuracy", "max"),
        ("hyperband", "val_loss", "HyperbandOracle", "val_loss", "min"),
        ("bayesian", "tradeoff", "BayesianOptimizationOracle", "val_tradeoff", "max"),
    ],
)
def test_oracles_and_objectives(tuner, objective, oracle_class, name, direction):
    if tuner == "bayesian":
        pytest.importorskip("sklearn", reason="KerasTuner's Bayesian oracle needs scikit-learn")
    oracle = make_oracle(SearchConfig(tuner=tuner, objective=objective, max_trials=7, epochs=9))
    assert isinstance(oracle, getattr(keras_tuner.oracles, oracle_class))
    assert (oracle.objective.name, oracle.objective.direction) == (name, direction)
    assert oracle.max_trials == 7
    if tuner == "hyperband":
        assert oracle.max_epochs == 9


def test_settings_that_a_resumed_search_must_share():
    base = SearchConfig(tuner="random", fixed={"aux": "bilstm"})
    assert (
        base.settings()
        == SearchConfig(
            tuner="random",
            fixed={"aux": "bilstm"},
            max_trials=50,
            overwrite=True,
            verbose=0,
            density_weight=0.5,
            initial_points=3,
            run_eagerly=True,
        ).settings()
    )
    assert base.settings() != SearchConfig(tuner="random", fixed={"aux": "fnn"}).settings()
    assert base.settings() != SearchConfig(tuner="random", fixed={"aux": "bilstm"}, folds=5).settings()
    assert base.settings()["search_space"]["domains"]["aux"] == {"type": "fixed", "value": "bilstm"}
    assert SearchConfig(dataset="sst2", model="soft").project == "sst2_soft_bayesian"


def test_hand_set_first_starts_the_search_at_the_train_defaults():
    config = SearchConfig(
        tuner="random", hand_set_first=True, choices={"lam": ["1e-4", "1e-2"], "aux_hidden": ["40", "60"]}
    )
    values = config.hand_set_values()
    # The train defaults where the space holds them; aux_hidden 20 is not in it.
    assert values == {
        "lr": 1e-3,
        "batch_size": 32,
        "tau": 0.5,
        "lam": 1e-2,
        "aux_hidden": 40,
        "aux": "bilstm",
        "target_density": 0.3,
    }
    oracle = make_oracle(config)
    assert oracle.populate_space("0") == {"status": "RUNNING", "values": values}
    assert make_oracle(SearchConfig(tuner="random")).first_values is None


def test_hand_set_first_is_refused_with_hyperband():
    from ganet_tf.errors import GANetInputError

    with pytest.raises(GANetInputError, match="--hand-set-first needs --tuner random or bayesian"):
        SearchConfig(tuner="hyperband", hand_set_first=True).validate()


@pytest.mark.parametrize("model", ["transformer", "ganet_transformer"])
def test_transformer_hand_set_first_builds_what_train_builds(model, monkeypatch):
    """The first trial is `ganet_tf train --model MODEL`'s defaults, routed
    through `train`'s own builder arguments (`model_arguments`)."""
    import types

    import numpy as np

    from ganet_tf.models import MODEL_BUILDERS
    from ganet_tf.models.gate_layers import GATE_DEFAULTS
    from ganet_tf.training.train import TrainConfig
    from ganet_tf.training.train import model_arguments
    from ganet_tf.tuning import ganet_transformer_hypermodel
    from ganet_tf.tuning import transformer_hypermodel
    from ganet_tf.tuning.tune import make_hypermodel

    config = SearchConfig(model=model, tuner="random", hand_set_first=True)
    values = config.hand_set_values()
    assert values == config.search_space().defaults()
    assert make_oracle(config).populate_space("0") == {"status": "RUNNING", "values": values}

    builder = MODEL_BUILDERS[model]
    calls = []
    module = transformer_hypermodel if model == "transformer" else ganet_transformer_hypermodel
    monkeypatch.setattr(
        module, builder.__name__, lambda *args, **kwargs: calls.append(kwargs) or builder(*args, **kwargs)
    )
    embeddings = np.random.default_rng(0).normal(size=(30, 50)).astype("float32")
    hypermodel = make_hypermodel(config, 6, embeddings, "trec")
    trial = keras_tuner.HyperParameters()
    hypermodel.build(trial)
    trial.values.update(values)
    hypermodel.build(trial)

    splits = types.SimpleNamespace(name="trec", train_texts=["a text"] * 10)
    trained = model_arguments(TrainConfig(model=model), splits, embeddings)
    defaults = {
        name: parameter.default
        for name, parameter in inspect.signature(builder).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }
    if model == "ganet_transformer":
        defaults.update(GATE_DEFAULTS)  # its `**gate_options`
    searched, trains = {**defaults, **calls[-1]}, {**defaults, **trained}
    assert searched.pop("embeddings") is trains.pop("embeddings") is embeddings
    assert searched == trains


def test_transformers_tune_their_width_and_dropout():
    from ganet_tf.errors import GANetInputError

    with pytest.raises(
        GANetInputError, match="--hidden is a hyperparameter of --model transformer: give it with --fix"
    ):
        SearchConfig(model="transformer", hidden=64).validate()
    with pytest.raises(GANetInputError, match="--dropout is a hyperparameter of --model ganet_transformer"):
        SearchConfig(model="ganet_transformer", dropout=0.1).validate()
    # The gated Transformer may weigh its density; the dense one has no gates.
    SearchConfig(model="ganet_transformer", objective="tradeoff").validate()
    with pytest.raises(GANetInputError, match="transformer has no gates"):
        SearchConfig(model="transformer", objective="tradeoff").validate()
    # GA-Net's hand-set first trial is unchanged: lambda 1e-2 is off its grid.
    assert SearchConfig(model="ganet").hand_set_values()["lam"] == 1e-3
    assert SearchConfig(model="ganet_transformer").hand_set_values()["lam"] == 1e-2


def test_a_retraining_that_diverges_writes_nothing(data_dir):
    """The best trial is retrained under `NonFiniteGuard`: a diverging
    retraining is one error line before `write_outputs` runs."""
    from ganet_tf.errors import GANetInputError
    from ganet_tf.training.prepare import prepare
    from ganet_tf.tuning.tune import _retrain

    fixed = {"lr": "1e38", "batch_size": "8", "aux_hidden": "4", "aux": "fnn"}
    config = SearchConfig(
        dataset="trec", data_dir=data_dir, limit=24, hidden=4, fixed=fixed, run_eagerly=True, verbose=0
    )
    config.validate()
    best = keras_tuner.engine.trial.Trial(keras_tuner.HyperParameters(), trial_id="7")
    best.best_step = 0
    with pytest.raises(GANetInputError, match=r"the best trial \(7\) diverged when retrained .* with seed 0") as error:
        _retrain(config, prepare(config.data_config()), best, [0])
    assert "No model was saved" in str(error.value) and "\n" not in str(error.value)
