import keras_tuner
import pytest

from ganet_tf.errors import GANetInputError
from ganet_tf.tuning.search_space import SearchSpace

PAPER_DEFAULTS = {
    "lr": 1e-3,
    "batch_size": 32,
    "tau": 0.5,
    "lam": 1e-3,
    "aux_hidden": 20,
    "aux": "bilstm",
    "target_density": 0.3,  # not the paper's: `train`'s default (issue 13)
}


def test_empty_hyperparameters_give_the_documented_defaults():
    space = SearchSpace("ganet")
    hp = keras_tuner.HyperParameters()
    values = {name: space.declare(hp, name) for name in space.names}
    assert values == PAPER_DEFAULTS == space.defaults()
    assert hp.values == PAPER_DEFAULTS
    assert space.domain("lr")["values"] == [1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2]
    assert space.domain("batch_size")["values"] == [8, 16, 32, 64, 128]
    assert space.domain("tau")["values"] == [0.5, 1.0, 1.5, 2.0]
    assert space.domain("lam")["values"] == [4e-6, 5e-6, 1e-5, 4e-5, 5e-5, 1e-4, 1e-3]
    assert space.domain("aux")["values"] == ["bilstm", "lstm", "fnn", "attention"]
    assert space.domain("target_density")["values"] == [0.0, 0.1, 0.2, 0.3, 0.5]
    aux_hidden = space.domain("aux_hidden")
    assert (aux_hidden["min_value"], aux_hidden["max_value"], aux_hidden["step"]) == (20, 100, 20)


@pytest.mark.parametrize("model", ["bilstm", "local", "soft", "sparsemax", "entmax"])
def test_baselines_tune_the_optimisation_only(model):
    assert SearchSpace(model).defaults() == {"lr": 1e-3, "batch_size": 32}


def test_fixed_values_choices_and_ranges():
    space = (
        SearchSpace("ganet")
        .with_fixed("aux", "fnn")
        .with_fixed("lr", "2e-3")
        .with_choices("lam", ["1e-3", "1e-2"])
        .with_choices("tau", [1.0, 2.0])
        .with_range("aux_hidden", 30, 90, 30)
        .with_range("batch_size", 16, 64, 16)
    )
    hp = keras_tuner.HyperParameters()
    values = {name: space.declare(hp, name) for name in space.names}
    assert values == {
        "lr": 2e-3,
        "batch_size": 32,
        "tau": 1.0,
        "lam": 1e-3,
        "aux_hidden": 30,
        "aux": "fnn",
        "target_density": 0.3,
    }
    declared = {parameter.name: parameter for parameter in hp.space}
    assert isinstance(declared["lr"], keras_tuner.engine.hyperparameters.Fixed)
    assert declared["lam"].values == [1e-3, 1e-2]
    assert space.with_range("lr", 1e-4, 1e-2).domain("lr")["sampling"] == "log"
    # The original space is unchanged.
    assert SearchSpace("ganet").defaults() == PAPER_DEFAULTS


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda s: s.with_range("aux_hidden", 100, 20, 20), "minimum 100 is above the maximum 20"),
        (lambda s: s.with_fixed("lr", 0), "lr must be positive"),
        (lambda s: s.with_choices("batch_size", [16, -8]), "batch_size must be positive"),
        (lambda s: s.with_choices("batch_size", [16, 8.5]), "batch_size must be an integer"),
        (lambda s: s.with_fixed("lam", -1e-3), "lam must be >= 0"),
        (lambda s: s.with_fixed("aux", "gru"), "aux must be one of"),
        (lambda s: s.with_fixed("tau", "hot"), "tau must be a number"),
        (lambda s: s.with_fixed("depth", 3), "'depth' is not a hyperparameter of ganet"),
        (lambda s: s.with_range("aux", 1, 2), "aux is categorical"),
        (lambda s: s.with_choices("lam", [1e-3, 1e-3]), "lists a value twice"),
        (lambda s: s.with_fixed("target_density", 1.0), "target_density must be in"),
    ],
)
def test_impossible_domains_are_refused(change, message):
    with pytest.raises(GANetInputError, match=message):
        change(SearchSpace("ganet"))


def test_a_baseline_has_no_gate_hyperparameters():
    with pytest.raises(GANetInputError, match="'tau' is not a hyperparameter of soft"):
        SearchSpace("soft").with_fixed("tau", 1.0)


def test_holds_tells_whether_a_value_lies_in_the_domain():
    space = (
        SearchSpace("ganet").with_fixed("aux", "fnn").with_range("aux_hidden", 10, 50, 10).with_range("lr", 1e-4, 1e-2)
    )
    assert space.holds("aux", "fnn") and not space.holds("aux", "bilstm")
    assert space.holds("batch_size", 32) and not space.holds("batch_size", 33)
    assert space.holds("aux_hidden", 30) and not space.holds("aux_hidden", 35)
    assert not space.holds("aux_hidden", 60)
    assert space.holds("lr", 1e-3) and not space.holds("lr", 0.1)
    assert space.holds("lam", 1e-3) and not space.holds("lam", 1e-2)


# `ganet_tf train --model transformer`'s encoder: --hidden 100, --dropout
# 0.3 and the builders' 2 blocks.
TRANSFORMER_DEFAULTS = {"lr": 1e-3, "batch_size": 32, "num_layers": 2, "hidden": 100, "dropout": 0.3}


def test_transformer_spaces_and_their_defaults():
    space = SearchSpace("transformer")
    assert space.defaults() == TRANSFORMER_DEFAULTS
    assert space.domain("num_layers")["values"] == [1, 2, 4]
    assert space.domain("hidden")["values"] == [64, 100, 128, 256]
    assert space.domain("dropout")["values"] == [0.0, 0.1, 0.2, 0.3]
    gated = SearchSpace("ganet_transformer")
    # GA-Net's gates with `train`'s defaults: lambda 1e-2 joins the paper's grid.
    assert gated.defaults() == {**TRANSFORMER_DEFAULTS, **PAPER_DEFAULTS, "lam": 1e-2}
    assert gated.domain("lam")["values"] == [4e-6, 5e-6, 1e-5, 4e-5, 5e-5, 1e-4, 1e-3, 1e-2]
    # GA-Net's own space is unchanged.
    assert SearchSpace("ganet").domain("lam")["values"] == [4e-6, 5e-6, 1e-5, 4e-5, 5e-5, 1e-4, 1e-3]
    # A width range steps by the 4 heads unless told otherwise.
    hidden = space.with_range("hidden", 32, 96).domain("hidden")
    assert (hidden["min_value"], hidden["max_value"], hidden["step"], hidden["default"]) == (32, 96, 4, 32)
    assert space.with_choices("hidden", [8, 16]).defaults()["hidden"] == 8


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda s: s.with_fixed("hidden", 30), "hidden must be a positive multiple of 4"),
        (
            lambda s: s.with_range("hidden", 32, 96, 6),
            r"hidden must be a positive multiple of 4 \(the attention heads\), got 6",
        ),
        (lambda s: s.with_fixed("num_layers", 0), "num_layers must be positive"),
        (lambda s: s.with_fixed("dropout", 1.0), "dropout must be in"),
        (lambda s: s.with_fixed("tau", 1.0), "'tau' is not a hyperparameter of transformer"),
    ],
)
def test_impossible_transformer_domains_are_refused(change, message):
    with pytest.raises(GANetInputError, match=message):
        change(SearchSpace("transformer"))
