"""Files written before the gate options took the builders' names (`aux`,
`aux_hidden`, `gate_penalty`, `gate_bias`) still load: a `model.keras`, a
run folder's `metrics.json` and a backup's `run_config.json`."""

import json
import os
import shutil
import zipfile

import keras
import numpy as np
import pytest

from ganet_tf import load_translator
from ganet_tf.errors import GANetInputError
from ganet_tf.policy.backup import prepare_backup_dir
from ganet_tf.policy.renamed_keys import with_current_keys
from ganet_tf.seq2seq.config import Seq2SeqConfig
from ganet_tf.seq2seq.encoder_decoder import EncoderDecoder
from ganet_tf.seq2seq.evaluation import load_run
from ganet_tf.seq2seq.initial_run import check_initial_run

# seq2seq's own older names (`train`'s were `tau`, `lam`, ...: tests/policy/test_renamed_keys.py).
OLDER_NAMES = {
    "auxiliary": "aux",
    "auxiliary_hidden_dim": "aux_hidden",
    "penalty": "gate_penalty",
    "initial_gate_logit": "gate_bias",
}


def _older(options):
    """`options` as a file written before the renaming holds them."""
    return {OLDER_NAMES.get(name, name): value for name, value in options.items()}


def _with_older_names(run, folder):
    """A copy of the run folder `run` in `folder`, its model's config and
    its `metrics.json` config in the older option names."""
    shutil.copytree(run, folder)
    model_path = os.path.join(folder, "model.keras")
    with zipfile.ZipFile(model_path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    saved = json.loads(members["config.json"])
    assert "auxiliary" in saved["config"]
    members["config.json"] = json.dumps({**saved, "config": _older(saved["config"])}).encode()
    with zipfile.ZipFile(model_path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    metrics_path = os.path.join(folder, "metrics.json")
    with open(metrics_path, encoding="utf-8") as handle:
        metrics = json.load(handle)
    with open(metrics_path, "w", encoding="utf-8") as handle:
        json.dump({**metrics, "config": _older(metrics["config"])}, handle)
    return str(folder)


def test_each_older_name_maps_to_todays_in_the_same_order():
    older = {"hidden": 4, "aux": "fnn", "aux_hidden": 3, "gate_penalty": 0.1, "gate_bias": -1.0, "seed": 0}
    assert list(with_current_keys(older).items()) == [
        ("hidden", 4),
        ("auxiliary", "fnn"),
        ("auxiliary_hidden_dim", 3),
        ("penalty", 0.1),
        ("initial_gate_logit", -1.0),
        ("seed", 0),
    ]
    assert set(OLDER_NAMES) <= set(Seq2SeqConfig.__dataclass_fields__)


def test_a_config_of_the_older_names_makes_the_same_model():
    model = EncoderDecoder(
        12,
        10,
        embedding_dim=4,
        hidden=4,
        attention="gated",
        auxiliary="fnn",
        auxiliary_hidden_dim=3,
        penalty=0.1,
        initial_gate_logit=-1.0,
        seed=1,
    )
    config = model.get_config()
    assert not set(OLDER_NAMES.values()) & set(config)
    revived = EncoderDecoder.from_config(_older(config))
    assert revived.get_config() == config
    assert (revived.auxiliary_encoder, revived.auxiliary_hidden_dim) == ("fnn", 3)
    assert (revived.penalty, revived.initial_gate_logit) == (0.1, -1.0)


def test_a_run_folder_of_the_older_names_translates_scores_and_starts_a_run(gated_translator_run, tmp_path):
    older = _with_older_names(gated_translator_run, tmp_path / "older")
    with open(os.path.join(gated_translator_run, "examples.json"), encoding="utf-8") as handle:
        sources = [example["source"] for example in json.load(handle)]
    assert load_translator(older).predict(sources) == load_translator(gated_translator_run).predict(sources)
    config, model, _, _ = load_run(older)
    today, model_today, _, _ = load_run(gated_translator_run)
    assert config == today and config.auxiliary == "fnn"
    for mine, theirs in zip(model.get_weights(), model_today.get_weights(), strict=True):
        np.testing.assert_array_equal(mine, theirs)
    # `--init-from` reads the older run's data flags as today's.
    sizes = {"hidden": 4, "embedding_dim": 4, "limit": 8, "min_length": 2, "max_length": 6}
    check_initial_run(Seq2SeqConfig(task="copy", attention="gated", init_from=older, **sizes))
    with pytest.raises(GANetInputError, match="--hidden 4 there, 8 here"):
        check_initial_run(Seq2SeqConfig(task="copy", attention="gated", init_from=older, **{**sizes, "hidden": 8}))
    assert isinstance(keras.models.load_model(os.path.join(older, "model.keras")), EncoderDecoder)


def test_a_backup_of_the_older_names_resumes_under_the_same_flags_only(tmp_path):
    backup = str(tmp_path / "backup")
    flags = {"attention": "gated", "hidden": 4, "auxiliary": "bilstm", "penalty": 0.1, "backup_dir": backup}
    prepare_backup_dir(Seq2SeqConfig(**flags))
    path = tmp_path / "backup" / "run_config.json"
    path.write_text(json.dumps(_older(json.loads(path.read_text()))))
    assert "aux" in json.loads(path.read_text())
    prepare_backup_dir(Seq2SeqConfig(**flags))
    with pytest.raises(GANetInputError, match=r"other flags: --auxiliary bilstm \(now fnn\)"):
        prepare_backup_dir(Seq2SeqConfig(**{**flags, "auxiliary": "fnn"}))
