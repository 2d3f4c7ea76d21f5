import csv
import json

import keras
import numpy as np
import pytest

from ganet_tf.errors import GANetInputError
from ganet_tf.layers.layer_mean import SUM_SUFFIXES
from ganet_tf.seq2seq.config import Seq2SeqConfig
from ganet_tf.seq2seq.encoder_decoder import EncoderDecoder
from ganet_tf.seq2seq.evaluation import decoded_split_scores
from ganet_tf.seq2seq.evaluation import teacher_forced_scores
from ganet_tf.seq2seq.initial_run import load_initial_weights
from ganet_tf.seq2seq.run import build_model
from ganet_tf.seq2seq.run import run_seq2seq
from ganet_tf.seq2seq.vocabulary import make_dataset
from tests.eager import functions_run_eagerly

RNG = np.random.default_rng(0)
SOURCE = [list(RNG.integers(2, 12, size=length)) for length in (7, 4, 6, 2)]
TARGET = [list(RNG.integers(4, 10, size=length)) for length in (5, 3, 6, 2)]


def scores(attention, **kwargs):
    model = EncoderDecoder(12, 10, embedding_dim=6, hidden=5, attention=attention, attention_units=4, seed=1, **kwargs)
    return teacher_forced_scores(model, make_dataset(SOURCE, TARGET, batch_size=3))


@pytest.mark.parametrize("initial_gate_logit, rate", [(-10.0, 1.0), (10.0, 0.0)])
def test_all_closed_rate_counts_the_sentences_the_fallback_attends(initial_gate_logit, rate):
    result = scores("gated", initial_gate_logit=initial_gate_logit)
    assert result["test_all_closed_rate"] == rate
    # closed or open, every state is attended: the fallback counts in the density
    assert result["test_attended_density"] == pytest.approx(1.0)


def test_top_k_gates_leave_no_sentence_all_closed():
    result = scores("gated", initial_gate_logit=-10.0, inference_mode="top_k", inference_density=0.2)
    assert result["test_all_closed_rate"] == 0.0
    assert result["test_attended_density"] < 0.6


def test_all_closed_rate_is_none_without_gates():
    result = scores("bahdanau")
    assert result["test_all_closed_rate"] is None
    assert result["test_attended_density"] == pytest.approx(1.0)


# A copy-task run small enough to train in seconds: sentences of 2 to 6
# symbols (the task's default, 10 to 100, only makes each step longer). The
# runs below train and decode eagerly (`tests.eager`): on sentences this
# short that takes half the time of tracing (45 s against 94-125 s a run on
# a loaded 2-core machine); tests/seq2seq/test_cli.py keeps a traced run.
TINY_COPY = dict(
    task="copy", limit=8, epochs=1, hidden=4, embedding_dim=4, batch_size=4, min_length=2, max_length=6, verbose=0
)


@pytest.fixture(scope="module")
def bahdanau_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("init") / "bahdanau"
    with functions_run_eagerly():
        run_seq2seq(Seq2SeqConfig(**TINY_COPY, out=str(out)))
    return str(out)


def test_init_from_copies_the_shared_weights_and_leaves_the_gates_fresh(bahdanau_run):
    initial = keras.models.load_model(f"{bahdanau_run}/model.keras")
    with open(f"{bahdanau_run}/vocabularies.json") as handle:
        vocabularies = json.load(handle)
    sizes = [len(vocabularies[side]) + 2 for side in ("source", "target")]
    fresh = build_model(Seq2SeqConfig(attention="gated", hidden=4, embedding_dim=4), *sizes)
    fresh.build()
    auxiliary = [w.copy() for w in fresh.auxiliary.get_weights()]
    load_initial_weights(fresh, bahdanau_run)
    for name in ("source_embedding", "encoder", "bridge_h", "decoder", "attention", "logits"):
        for mine, theirs in zip(
            fresh.get_layer(name).get_weights(), initial.get_layer(name).get_weights(), strict=True
        ):
            np.testing.assert_array_equal(mine, theirs)
    for mine, before in zip(fresh.auxiliary.get_weights(), auxiliary, strict=True):
        np.testing.assert_array_equal(mine, before)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"hidden": 8}, r"--init-from .* other data or shapes: --hidden 4 there, 8 here\. Pass the same flags"),
        ({"limit": 9}, r"--limit 8 there, 9 here"),
    ],
)
def test_init_from_a_run_of_other_data_or_shapes_is_refused(bahdanau_run, change, message):
    flags = {**TINY_COPY, **change}
    with pytest.raises(GANetInputError, match=message):
        run_seq2seq(Seq2SeqConfig(attention="gated", init_from=bahdanau_run, **flags))


def test_init_from_a_folder_that_is_no_run_is_refused(tmp_path):
    with pytest.raises(GANetInputError, match=r"--init-from .* is not a finished seq2seq run .* --out folder"):
        run_seq2seq(Seq2SeqConfig(init_from=str(tmp_path)))


@pytest.mark.usefixtures("eager_functions")  # as the run decoded
def test_decoded_split_scores_give_back_the_runs_test_score_and_score_validation(bahdanau_run):
    with open(f"{bahdanau_run}/metrics.json") as handle:
        saved = json.load(handle)
    test = decoded_split_scores(bahdanau_run, "test")
    assert (test["bleu"], test["exact_match"]) == (None, saved["test_exact_match"])
    assert test["symbol_error_rate"] == saved["test_symbol_error_rate"]
    validation = decoded_split_scores(bahdanau_run, "val")
    assert validation["bleu"] is None and 0.0 <= validation["exact_match"] <= 1.0
    assert validation["symbol_error_rate"] >= 0.0


def _state(model):
    """`model`'s weights without the gate metrics' sums (`LayerMean`: state
    that a `.keras` file leaves out, so a loaded model's are zero)."""
    return [variable.numpy() for variable in model.weights if not variable.name.endswith(SUM_SUFFIXES)]


def _assert_same_weights(model, weights):
    for mine, theirs in zip(_state(model), weights, strict=True):
        np.testing.assert_array_equal(mine, theirs)


def _write_history(path, rows):
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


@pytest.mark.usefixtures("eager_functions")
def test_a_gated_run_from_init_from_resumes_after_failing_and_patience_keeps_the_best_epoch(
    bahdanau_run, tmp_path, monkeypatch
):
    """One gated run started from `bahdanau_run` (`--init-from`) goes
    through every attempt a backup serves: it fails after training, resumes
    with nothing left to train, trains on under a later `--patience` and,
    once that patience has run out, trains no more."""
    from ganet_tf.seq2seq import run

    backup = tmp_path / "b"
    flags = {**TINY_COPY, "epochs": 2, "attention": "gated", "init_from": bahdanau_run}
    config = Seq2SeqConfig(**flags, out=str(tmp_path / "run"), backup_dir=str(backup))
    trained = {}

    def decoding_fails(model, *args, **kwargs):
        trained["weights"] = _state(model)
        raise RuntimeError("decoding failed")

    with monkeypatch.context() as patched:
        patched.setattr(run, "decoded_scores", decoding_fails)
        with pytest.raises(RuntimeError, match="decoding failed"):
            run_seq2seq(config)
    assert not (tmp_path / "run" / "model.keras").exists()
    seconds = json.loads((backup / "epoch_seconds.json").read_text())
    assert sorted(seconds) == ["0", "1"]
    # the backup keeps the initial run's vocabularies for the resumed run
    with open(f"{bahdanau_run}/vocabularies.json") as handle:
        assert json.loads((backup / "vocabularies.json").read_text()) == json.load(handle)
    # a backup that records the older option names resumes as well
    fingerprint = json.loads((backup / "run_config.json").read_text())
    older = {"auxiliary": "aux", "auxiliary_hidden_dim": "aux_hidden", "penalty": "gate_penalty"}
    (backup / "run_config.json").write_text(json.dumps({older.get(k, k): v for k, v in fingerprint.items()}))

    result = run_seq2seq(config)
    assert result["init_from"] == bahdanau_run
    # the second attempt trained no epoch: same weights, same epoch times,
    # and the training time is the first attempt's
    assert json.loads((backup / "epoch_seconds.json").read_text()) == seconds
    assert result["train_seconds"] == pytest.approx(sum(seconds.values()))
    assert result["seconds_per_epoch"] == pytest.approx(sum(seconds.values()) / 2)
    _assert_same_weights(keras.models.load_model(tmp_path / "run" / "model.keras"), trained["weights"])

    # The finished run (its 2 epochs trained without --patience) given more
    # epochs and a patience: the patience counts from epoch 3 on, the epochs
    # trained and the best epoch count the first two, and the run keeps the
    # best epoch's weights.
    config = Seq2SeqConfig(**{**config.__dict__, "epochs": 4, "patience": 5})
    result = run_seq2seq(config)
    with open(backup / "history.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    losses = [float(row["val_loss"]) for row in rows]
    assert len(losses) == 2  # epochs 3 and 4: the first two ran without --patience
    assert result["epochs_trained"] == 4
    every = json.loads((backup / "epoch_seconds.json").read_text())
    assert list(every)[:2] == list(seconds) and len(every) == 4
    assert result["train_seconds"] == pytest.approx(sum(every.values()))  # all three attempts
    assert result["best_epoch"] == 3 + int(np.argmin(losses))
    best = EncoderDecoder.from_config(keras.models.load_model(tmp_path / "run" / "model.keras").get_config())
    best.build()
    best.load_weights(backup / "best.weights.h5")
    _assert_same_weights(keras.models.load_model(tmp_path / "run" / "model.keras"), _state(best))

    # An unbeatable epoch 3: with patience 1 the earlier attempt has
    # stopped, so a longer budget trains nothing and keeps the saved best.
    rows[0]["val_loss"] = "0.0"
    _write_history(backup / "history.csv", rows)
    seconds = (backup / "epoch_seconds.json").read_text()
    again = run_seq2seq(Seq2SeqConfig(**{**config.__dict__, "epochs": 6, "patience": 1}))
    assert (backup / "epoch_seconds.json").read_text() == seconds
    assert (again["epochs_trained"], again["best_epoch"]) == (4, 3)
    _assert_same_weights(keras.models.load_model(tmp_path / "run" / "model.keras"), _state(best))


def test_an_unreadable_epoch_seconds_file_is_one_error_naming_restart(tmp_path):
    from ganet_tf.fitting.epoch_timer import EpochTimer

    path = tmp_path / "epoch_seconds.json"
    path.write_text("{not json")
    with pytest.raises(GANetInputError, match=r"epoch_seconds\.json is unreadable .*pass --restart"):
        EpochTimer(str(path)).on_train_begin()


def test_without_patience_every_epoch_trains_and_no_best_epoch_is_named(bahdanau_run):
    with open(f"{bahdanau_run}/metrics.json") as handle:
        metrics = json.load(handle)
    assert (metrics["patience"], metrics["epochs_trained"], metrics["best_epoch"]) == (None, 1, None)


def test_a_patience_below_one_is_one_error_line():
    with pytest.raises(GANetInputError, match=r"--patience must be a positive integer, got 0"):
        run_seq2seq(Seq2SeqConfig(**TINY_COPY, patience=0))


def parsed_config(*flags):
    """The resolved `Seq2SeqConfig` that `python -m ganet_tf seq2seq FLAGS` runs."""
    import dataclasses

    from ganet_tf.cli import build_parser
    from ganet_tf.seq2seq.config import resolve_defaults

    args = vars(build_parser().parse_args(["seq2seq", *flags]))
    names = {field.name for field in dataclasses.fields(Seq2SeqConfig)}
    return resolve_defaults(Seq2SeqConfig(**{k: v for k, v in args.items() if k in names}))


# experiments/studies.py's gated-hc row: the recipe validation chose (seq2seq_recipes).
GATED_HC = ["--target-density", "0.6", "--inference-mode", "top_k", "--inference-density", "0.6"]
GATED_HC += ["--gate-input", "states", "--auxiliary", "fnn", "--gate-distribution", "hard_concrete"]


def test_each_hierarchy_alone_trains_its_table_row_and_a_given_flag_wins():
    # experiments/studies.py SEQ2SEQ_TABLES' multi30k-long rows (hier-act: the chosen target)
    rows = {
        "hier-cnn": ["--block-size", "3", "--levels", "3"],
        "hier-rnn": ["--block-size", "6", "--levels", "2", "--summary-inputs", "keys"],
        "hier-act": ["--levels", "3", "--target-block-size", "2.5"],
    }
    for attention, flags in rows.items():
        assert parsed_config("--attention", attention) == parsed_config("--attention", attention, *flags)
    given = parsed_config("--attention", "hier-rnn", "--levels", "3")
    assert (given.levels, given.block_size) == (3, 6)
    model = build_model(parsed_config("--attention", "hier-cnn", "--hidden", "4", "--embedding-dim", "4"), 9, 9)
    assert (model.levels, model.block_size, model.summary_inputs) == (3, 3, "states")
    assert parsed_config("--attention", "hier-rnn", "--summary-inputs", "states").summary_inputs == "states"


def test_gated_alone_trains_the_chosen_recipe_and_a_given_flag_wins():
    assert parsed_config("--attention", "gated") == parsed_config("--attention", "gated", *GATED_HC)
    model = build_model(parsed_config("--attention", "gated", "--hidden", "4", "--embedding-dim", "4"), 9, 9)
    assert (model.auxiliary_encoder, model.gate_input, model.target_density) == ("fnn", "states", 0.6)
    assert (model.inference_mode, model.inference_density, model.initial_gate_logit) == ("top_k", 0.6, 2.0)
    assert model.gate_sampler.distribution == "hard_concrete"
    # GA-Net's fixed penalty: no target, threshold test gates
    fixed = parsed_config("--attention", "gated", "--target-density", "0", "--auxiliary", "bilstm")
    assert (fixed.inference_mode, fixed.inference_density, fixed.auxiliary) == ("threshold", None, "bilstm")
    assert build_model(fixed, 9, 9).target_density is None
    given = parsed_config("--attention", "gated", "--inference-density", "0.3", "--gate-input", "embeddings")
    assert (given.inference_mode, given.inference_density, given.gate_input) == ("top_k", 0.3, "embeddings")
