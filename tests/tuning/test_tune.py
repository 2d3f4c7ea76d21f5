import keras_tuner
import pytest

from tuning.tune import SearchConfig
from tuning.tune import make_oracle


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
