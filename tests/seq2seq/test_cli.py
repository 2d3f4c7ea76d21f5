import json
import os

import keras
import pytest

from ganet_tf.seq2seq.evaluation import rescore_run
from ganet_tf.seq2seq.scores import corpus_bleu
from ganet_tf.seq2seq.scores import exact_match
from ganet_tf.seq2seq.scores import symbol_error_rate

# per attended node (keys projected once per sentence): 4*4 + 3 + 2*8; per
# step: the query projection 2*8*4
NODE_FLOPS, QUERY_FLOPS = 35, 64


def test_copy_task_end_to_end(tmp_path, capsys):
    # Through main in this process, traced (the tests' other seq2seq runs
    # train eagerly on short sentences); tests/reliability runs `python -m
    # ganet_tf seq2seq` in processes of their own.
    from ganet_tf.cli import main

    out = tmp_path / "run"
    flags = ["--task", "copy", "--attention", "bahdanau", "--limit", "8", "--epochs", "2", "--hidden", "4"]
    flags += ["--embedding-dim", "4", "--batch-size", "4", "--verbose", "2"]
    code = main(["seq2seq", *flags, "--out", str(out), "--backup-dir", str(tmp_path / "backup")])
    captured = capsys.readouterr()
    assert code == 0, captured.err[-2000:]
    assert "Epoch 2/2" in captured.out
    result = json.loads(captured.out.strip().splitlines()[-1])
    assert (result["task"], result["attention"], result["test_bleu"]) == ("copy", "bahdanau", None)
    assert result["train_examples"] == result["test_examples"] == 8
    # 20 symbols and the end token: an untrained model is near uniform
    assert 12 < result["test_perplexity"] < 30
    assert result["test_exact_match"] == 0.0  # lengths 10-100 from 16 steps
    assert result["test_symbol_error_rate"] > 0.5
    assert result["test_attended_density"] == 1.0
    nodes = result["attended_nodes_per_token"]
    assert 10 <= nodes <= 100
    assert abs(result["attention_flops_per_token"] - (QUERY_FLOPS + NODE_FLOPS * nodes)) < 1e-6 * nodes * NODE_FLOPS
    assert 0 < result["decode_seconds_per_sentence"] < 5
    assert sorted(os.listdir(out)) == [
        ".ganet_tf_run",
        "examples.json",
        "metrics.json",
        "model.keras",
        "vocabularies.json",
    ]
    assert json.loads((out / "metrics.json").read_text())["test_perplexity"] == result["test_perplexity"]
    model = keras.models.load_model(out / "model.keras")
    assert model.get_config()["attention"] == "bahdanau"
    rescored = rescore_run(str(out))  # the saved run gives back its test scores
    assert rescored["test_all_closed_rate"] is None
    assert {key: pytest.approx(value) for key, value in rescored.items()} == {key: result[key] for key in rescored}


def test_out_holding_the_users_files_is_refused_before_training(tmp_path, capsys):
    # The refusal comes before any TensorFlow work.
    from ganet_tf.cli import main

    out = tmp_path / "mine"
    out.mkdir()
    (out / "model.keras").write_text("the user's own file")
    capsys.readouterr()
    code = main(["seq2seq", "--task", "copy", "--limit", "8", "--epochs", "1", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.strip().splitlines() == [
        f"ganet_tf: error: --out {out} holds files ganet_tf did not write: give a new or "
        "empty folder (ganet_tf only replaces folders it wrote)."
    ]
    assert "Epoch" not in captured.out
    assert sorted(os.listdir(out)) == ["model.keras"]
    assert (out / "model.keras").read_text() == "the user's own file"


def test_scores():
    assert exact_match([["s1", "s2"], ["s3"]], [["s1", "s2"], ["s4"]]) == 0.5
    # edits 0 + 1 (substitute) + 2 (delete two) + 1 (insert) over 2 + 1 + 1 + 3 reference symbols
    hypotheses = [["s1", "s2"], ["s3"], ["s5", "s6", "s7"], ["s1", "s3"]]
    references = [["s1", "s2"], ["s4"], ["s5"], ["s1", "s2", "s3"]]
    assert symbol_error_rate(hypotheses, references) == pytest.approx(4 / 7)
    assert symbol_error_rate([["s2", "s3", "s4"]], [["s1", "s2", "s3", "s4"]]) == pytest.approx(1 / 4)
    assert symbol_error_rate([[]], [["s1", "s2"]]) == 1.0
    assert symbol_error_rate([["s1", "s2"]], [[]]) == 2.0  # no reference symbol: over 1
    assert symbol_error_rate([], []) == 0.0
    with pytest.raises(ValueError):
        symbol_error_rate([["s1"]], [])
    assert corpus_bleu(["A dog runs."], ["a dog runs."]) == pytest.approx(100.0)
    assert corpus_bleu(["a cat"], ["a dog runs on the grass ."]) < 10


def test_backup_of_other_flags_is_refused_and_restart_clears_it(tmp_path):
    from ganet_tf.errors import GANetInputError
    from ganet_tf.policy.backup import prepare_backup_dir
    from ganet_tf.seq2seq.config import Seq2SeqConfig

    backup = str(tmp_path / "backup")
    prepare_backup_dir(Seq2SeqConfig(backup_dir=backup, hidden=4))
    (tmp_path / "backup" / "vocabularies.json").write_text("{}")
    # The same flags, or only where it writes and how long it trains: resumed.
    prepare_backup_dir(Seq2SeqConfig(backup_dir=backup, hidden=4, epochs=20, export=str(tmp_path / "sm")))
    with pytest.raises(GANetInputError, match=r"other flags: --hidden 4 \(now 8\).*--restart"):
        prepare_backup_dir(Seq2SeqConfig(backup_dir=backup, hidden=8))
    prepare_backup_dir(Seq2SeqConfig(backup_dir=backup, hidden=8, restart=True))
    assert sorted(os.listdir(backup)) == ["run_config.json"]
    assert json.loads((tmp_path / "backup" / "run_config.json").read_text())["hidden"] == 8


@pytest.mark.parametrize("mode", ["relative", "nucleus"])
def test_a_test_gate_seq2seq_has_no_flags_for_is_one_error_line(mode, capsys):
    from ganet_tf.cli import main

    argv = ["seq2seq", "--task", "copy", "--attention", "gated", "--inference-mode", mode, "--limit", "8"]
    assert main(argv) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("ganet_tf: error:") and "top_k" in error[0], error


@pytest.mark.parametrize(
    "old, new, value",
    [
        ("--aux", "auxiliary", "lstm"),
        ("--aux-hidden", "auxiliary_hidden_dim", 7),
        ("--gate-penalty", "penalty", 0.25),
        ("--gate-bias", "initial_gate_logit", -1.5),
    ],
)
def test_the_older_gate_flags_set_the_new_options_with_one_warning(old, new, value, capsys):
    from ganet_tf.cli import build_parser
    from ganet_tf.cli import main

    assert getattr(build_parser().parse_args(["seq2seq", old, str(value)]), new) == value
    capsys.readouterr()
    # Given for an attention without gates, it is refused under its new name; said once.
    assert main(["seq2seq", "--attention", "bahdanau", old, str(value)]) == 2
    flag = "--" + new.replace("_", "-")
    assert capsys.readouterr().err.splitlines() == [
        f"ganet_tf: warning: {old} is deprecated: use {flag}.",
        f"ganet_tf: error: {flag} applies to --attention gated only, not bahdanau: leave it out, or choose "
        "--attention gated.",
    ]


def test_synthetic_lengths_are_flags_and_refused_for_multi30k(capsys):
    from ganet_tf.cli import build_parser
    from ganet_tf.cli import main

    args = build_parser().parse_args(["seq2seq", "--task", "copy", "--min-length", "100", "--max-length", "400"])
    assert (args.min_length, args.max_length) == (100, 400)
    assert main(["seq2seq", "--task", "multi30k", "--max-length", "400"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "--max-length applies to --task copy or reverse only" in error[0], error
    assert main(["seq2seq", "--task", "copy", "--min-length", "50", "--max-length", "40"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "max_length" in error[0].replace("-", "_"), error


def test_a_hier_rnn_backup_from_before_summary_inputs_resumes_only_with_states(tmp_path):
    from ganet_tf.errors import GANetInputError
    from ganet_tf.policy.backup import prepare_backup_dir
    from ganet_tf.seq2seq.config import SUMMARY_INPUTS_BEFORE_THE_FLAG
    from ganet_tf.seq2seq.config import Seq2SeqConfig
    from ganet_tf.seq2seq.config import resolve_defaults

    def prepare(**flags):
        config = resolve_defaults(Seq2SeqConfig(attention="hier-rnn", backup_dir=str(tmp_path / "b"), **flags))
        prepare_backup_dir(config, predates={"summary_inputs": SUMMARY_INPUTS_BEFORE_THE_FLAG})

    prepare(summary_inputs="states")
    saved = json.loads((tmp_path / "b" / "run_config.json").read_text())
    del saved["summary_inputs"]  # a backup written before the flag existed
    (tmp_path / "b" / "run_config.json").write_text(json.dumps(saved))
    with pytest.raises(GANetInputError, match=r"--summary-inputs states \(now keys\)"):
        prepare()  # today's hier-rnn default reads the keys: another model
    prepare(summary_inputs="states")
