"""The gate options of issue 13 through `train`: attended density in the
summary and the inference rule in the export (the all-closed warning:
tests/metrics/test_all_closed_warning.py)."""

import numpy as np
import pytest
import tensorflow as tf

from ganet_tf.cli import build_parser
from ganet_tf.cli import main
from ganet_tf.errors import GANetInputError
from ganet_tf.models import build_ganet
from ganet_tf.training import TrainConfig
from ganet_tf.training import train_and_evaluate
from ganet_tf.training.evaluate import evaluate_model

IDS = np.array([[5, 6, 7, 8, 0, 0], [9, 10, 0, 0, 0, 0], [11, 12, 13, 14, 15, 16]], "int32")


@pytest.mark.parametrize("fallback", ["all", "most_probable"])
def test_attended_density_counts_the_rows_the_fallback_pools(fallback):
    model = build_ganet(
        2,
        vocabulary_size=20,
        embedding_dim=4,
        hidden_dim=3,
        attention_units=3,
        auxiliary_hidden_dim=3,
        initial_gate_logit=-30.0,
        fallback=fallback,
        target_density=None,
    )  # the paper's gates: p > 0.5 closes them all
    result = evaluate_model(model, IDS, np.array([0, 1, 0]), ["a", "b"])
    assert result["density"] == 0.0 and result["all_closed_rate"] == 1.0
    expected = 1.0 if fallback == "all" else np.mean([1 / 4, 1 / 2, 1 / 6])
    assert result["attended_density"] == pytest.approx(expected)
    if fallback == "all":  # the identity experiments/runner.attended_density uses for older runs
        assert result["attended_density"] == pytest.approx(result["density"] + result["all_closed_rate"])


def test_gate_flags_reach_the_model_the_schedule_ends_at_final_tau_and_the_export_serves_top_k(data_dir, tmp_path):
    """One tiny run for both: the gate options of issue 13 (attended density,
    top_k tests and export) and temperature annealing (the schedule in the
    saved gates)."""
    import keras

    from ganet_tf.export import export_saved_model

    args = build_parser().parse_args(
        [
            "train",
            "--target-density",
            "0.3",
            "--gate-distribution",
            "hard_concrete",
            "--inference-mode",
            "top_k",
            "--fallback",
            "most_probable",
        ]
    )
    assert (args.target_density, args.gate_distribution, args.inference_mode, args.fallback) == (
        0.3,
        "hard_concrete",
        "top_k",
        "most_probable",
    )
    annealed = ["--temperature", "1.0", "--final-temperature", "0.2", "--anneal-epochs", "1"]
    args = build_parser().parse_args(["train", *annealed])
    assert (args.temperature, args.final_temperature, args.anneal_epochs) == (1.0, 0.2, 1)
    out = tmp_path / "run"
    result = train_and_evaluate(
        TrainConfig(
            dataset="trec",
            data_dir=data_dir,
            limit=64,
            epochs=2,
            patience=5,
            hidden=4,
            auxiliary_hidden_dim=3,
            verbose=0,
            glove_vocabulary=0,
            target_density=0.3,
            gate_distribution="hard_concrete",
            inference_mode="top_k",
            fallback="most_probable",
            temperature=1.0,
            final_temperature=0.2,
            anneal_epochs=1,
            out=str(out),
        )
    )
    for split in ("test", "validation"):
        # round(0.3 T) / T is within 0.5 / T of 0.3; TREC's texts have T >= 2.
        assert 0.05 <= result[f"{split}_attended_density"] <= 0.55
    # top_k never leaves a text all-closed; it opens round(0.3 T) of T tokens.
    assert result["test_all_closed_rate"] == 0.0
    assert result["test_attended_density"] == pytest.approx(result["test_density"])
    assert "attended_density" in result["history"] and "val_attended_density" in result["history"]

    gates = keras.models.load_model(str(out / "model.keras")).get_layer("gates")
    # One epoch of the training split (limit 64 minus the validation share) at batch 32.
    steps_per_epoch = int(np.ceil(result["train_examples"] / 32))
    assert (gates.temperature, gates.final_temperature, gates.anneal_steps) == (1.0, 0.2, steps_per_epoch)
    # The saved weights are the best epoch's, the step count with them: at
    # least one epoch, so the schedule reached its end and stays at final_temperature.
    assert float(gates.anneal_step) >= steps_per_epoch
    assert float(gates.current_temperature()) == pytest.approx(0.2)

    path = export_saved_model(str(out), "top_k", base=str(tmp_path / "saved_models"))
    serve = tf.saved_model.load(path).signatures["serve_token_ids"]
    ids = np.zeros([3, serve.structured_input_signature[1]["token_ids"].shape[1]], "int32")
    for row, length in enumerate((1, 5, 10)):
        ids[row, :length] = np.arange(2, 2 + length)
    gates = serve(token_ids=tf.constant(ids))["gates"].numpy()
    # round(0.3 T), at least 1, halves up.
    np.testing.assert_array_equal(gates.sum(axis=1), [1, 2, 3])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--target-density", "1.5"], "--target-density must be in"),
        (["--target-density", "0", "--inference-mode", "top_k"], "--inference-mode top_k"),
        (["--inference-density", "0"], "--inference-density must be in"),
        (["--final-temperature", "0.1"], "--final-temperature and --anneal-epochs go together"),
        (["--anneal-epochs", "3"], "--final-temperature and --anneal-epochs go together"),
        (["--final-temperature", "0", "--anneal-epochs", "3"], "--final-temperature must be positive"),
    ],
)
def test_bad_gate_flags_give_one_error_line(argv, message, capsys, tmp_path):
    assert main(["train", "--out", str(tmp_path / "x"), *argv]) == 2
    assert message in capsys.readouterr().err
    with pytest.raises(GANetInputError):
        TrainConfig(
            **{
                a.lstrip("-").replace("-", "_"): (float(b) if b[0].isdigit() else b)
                for a, b in zip(argv[::2], argv[1::2], strict=True)
            }
        ).validate()


def test_sparse_training_flag_reaches_the_builder_and_needs_a_density(capsys, tmp_path):
    from types import SimpleNamespace

    from ganet_tf.training.train import model_arguments

    parse = build_parser().parse_args
    assert parse(["train", "--model", "ganet_transformer", "--sparse-training"]).sparse_training is True
    assert parse(["train", "--model", "ganet_transformer", "--no-sparse-training"]).sparse_training is False
    assert parse(["train", "--model", "ganet_transformer"]).sparse_training is None
    splits = SimpleNamespace(train_texts=["a"], name="trec")

    def sparse(**config):
        arguments = model_arguments(TrainConfig(model="ganet_transformer", hidden=8, **config), splits, None)
        return arguments.get("sparse_training", False)

    # The default (issue 41): on whenever a density is there to keep.
    assert sparse() is True
    assert sparse(target_density=0.2) is True
    assert sparse(target_density=0, inference_density=0.3) is True
    assert sparse(target_density=0, inference_mode="threshold") is False
    assert sparse(sparse_training=False) is False
    assert sparse(sparse_training=True) is True
    assert "sparse_training" not in model_arguments(TrainConfig(model="ganet", hidden=8), splits, None)
    argv = ["train", "--out", str(tmp_path / "x"), "--model", "ganet_transformer", "--sparse-training"]
    assert main([*argv, "--target-density", "0"]) == 2
    assert "--sparse-training keeps round(rho T) tokens" in capsys.readouterr().err


def test_complement_weight_flag_reaches_the_ganet_builder_and_is_checked(capsys, tmp_path):
    from types import SimpleNamespace

    from ganet_tf.training.train import model_arguments

    args = build_parser().parse_args(["train", "--complement-weight", "0.5"])
    assert args.complement_weight == 0.5
    splits = SimpleNamespace(train_texts=["a"], name="trec")
    assert model_arguments(TrainConfig(complement_weight=0.5), splits, None)["complement_weight"] == 0.5
    assert "complement_weight" not in model_arguments(TrainConfig(), splits, None)
    assert main(["train", "--out", str(tmp_path / "x"), "--complement-weight", "-1"]) == 2
    assert "--complement-weight" in capsys.readouterr().err


def test_complement_flag_reaches_the_ganet_builder_and_is_checked(capsys, tmp_path):
    from types import SimpleNamespace

    from ganet_tf.models.ganet import COMPLEMENTS
    from ganet_tf.training.commands import COMPLEMENT_CHOICES
    from ganet_tf.training.train import model_arguments

    assert COMPLEMENT_CHOICES == COMPLEMENTS  # the CLI spells them without importing TensorFlow
    args = build_parser().parse_args(["train", "--complement-weight", "1", "--complement", "inputs"])
    assert args.complement == "inputs"
    splits = SimpleNamespace(train_texts=["a"], name="trec")
    arguments = model_arguments(TrainConfig(complement_weight=1.0, complement="inputs"), splits, None)
    assert arguments["complement"] == "inputs" and arguments["complement_weight"] == 1.0
    assert "complement" not in model_arguments(TrainConfig(complement_weight=1.0), splits, None)
    assert main(["train", "--out", str(tmp_path / "x"), "--complement", "inputs"]) == 2
    error = capsys.readouterr().err
    assert "--complement-weight MU > 0" in error and len(error.strip().splitlines()) == 1
    with pytest.raises(GANetInputError, match="Unknown --complement 'tokens'"):
        TrainConfig(complement="tokens", complement_weight=1.0).validate()
    assert not (tmp_path / "x").exists()


def test_complement_target_flag_reaches_the_ganet_builder_and_is_checked(capsys, tmp_path):
    from types import SimpleNamespace

    from ganet_tf.training.train import model_arguments

    flags = ["--complement-weight", "1", "--complement", "adversarial", "--complement-target", "0.1"]
    config = TrainConfig(
        **{
            k: v
            for k, v in vars(build_parser().parse_args(["train", *flags])).items()
            if k in ("complement_weight", "complement", "complement_target")
        }
    )
    arguments = model_arguments(config, SimpleNamespace(train_texts=["a"], name="trec"), None)
    assert arguments["complement_target"] == 0.1 and arguments["complement"] == "adversarial"
    assert main(["train", "--out", str(tmp_path / "x"), "--complement-weight", "1", "--complement-target", "0.1"]) == 2
    error = capsys.readouterr().err
    assert "--complement-target" in error and len(error.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_the_old_gate_flag_spellings_set_the_same_fields_with_one_warning_each(capsys, tmp_path):
    from ganet_tf.training.commands import config_from

    old = ["--aux", "fnn", "--aux-hidden", "3", "--tau", "1.0", "--final-tau", "0.2", "--anneal-epochs", "1"]
    config = config_from(build_parser().parse_args(["train", *old, "--lam", "0", "--gate-bias", "1"]))
    assert (config.auxiliary, config.auxiliary_hidden_dim, config.temperature, config.final_temperature) == (
        "fnn",
        3,
        1.0,
        0.2,
    )
    assert (config.penalty, config.initial_gate_logit) == (0.0, 1.0)
    warnings = capsys.readouterr().err.splitlines()
    assert warnings[0] == "ganet_tf: warning: --aux is deprecated: use --auxiliary."
    assert len(warnings) == 6 and all("is deprecated: use --" in line for line in warnings)
    # `main` parses twice (the flags given, for the flags a model ignores): still one line.
    assert main(["train", "--out", str(tmp_path / "x"), "--tau", "0.7", "--lr=nan"]) == 2
    err = capsys.readouterr().err
    assert err.count("--tau is deprecated: use --temperature.") == 1 and "--lr must be" in err


def test_uninformed_gates_without_a_density_are_one_error_line(capsys, tmp_path):
    argv = ["train", "--out", str(tmp_path / "x"), "--model", "ganet_transformer", "--auxiliary", "random"]
    assert main([*argv, "--target-density", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "ganet_tf: error: --auxiliary random chooses round(rho T) tokens per text without weights: "
        "give rho with --target-density (or --inference-density)."
    ]
    assert not (tmp_path / "x").exists()
    # The conv model reads no gates: the same flags do not stop it here (it warns that they are ignored).
    TrainConfig(model="conv", auxiliary="strided", target_density=0).validate()


def test_pooling_all_without_sparse_training_is_one_error_line(capsys, tmp_path):
    from types import SimpleNamespace

    from ganet_tf.training.train import model_arguments

    argv = ["train", "--out", str(tmp_path / "x"), "--model", "ganet_transformer", "--pooling", "all"]
    assert main([*argv, "--no-sparse-training"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ganet_tf: error: --pooling all reads the closed tokens")
    assert not (tmp_path / "x").exists()
    splits = SimpleNamespace(train_texts=["a"], name="trec")
    config = TrainConfig(model="ganet_transformer", hidden=8, pooling="all", target_density=0.2)
    assert model_arguments(config, splits, None)["pooling"] == "all"
    assert "pooling" not in model_arguments(TrainConfig(model="ganet_transformer", hidden=8), splits, None)


def test_no_position_embedding_flag_reaches_the_builder():
    from types import SimpleNamespace

    from ganet_tf.training.train import model_arguments

    def parse(argv):
        return build_parser().parse_args(["train", "--out", "x", "--model", "ganet_transformer", *argv])

    assert parse([]).position_embedding is True
    assert parse(["--no-position-embedding"]).position_embedding is False
    splits = SimpleNamespace(train_texts=["a"], name="trec")
    config = TrainConfig(model="ganet_transformer", hidden=8, position_embedding=False)
    assert model_arguments(config, splits, None)["position_embedding"] is False
    assert "position_embedding" not in model_arguments(TrainConfig(model="ganet_transformer", hidden=8), splits, None)
