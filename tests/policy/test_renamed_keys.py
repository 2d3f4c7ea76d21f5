import dataclasses
import json

import pytest

from ganet_tf.errors import GANetInputError
from ganet_tf.policy.backup import CONFIG_FILE
from ganet_tf.policy.backup import prepare_backup_dir
from ganet_tf.policy.renamed_keys import RENAMED_KEYS
from ganet_tf.policy.renamed_keys import with_current_keys


def test_old_keys_take_the_names_of_now_in_place():
    old = {"lr": 1e-3, "aux": "fnn", "aux_hidden": 3, "tau": 0.5, "final_tau": None, "lam": 0.0, "gate_bias": 1.0}
    assert with_current_keys(old) == {
        "lr": 1e-3,
        "auxiliary": "fnn",
        "auxiliary_hidden_dim": 3,
        "temperature": 0.5,
        "final_temperature": None,
        "penalty": 0.0,
        "initial_gate_logit": 1.0,
    }
    assert list(with_current_keys(old)) == ["lr", *dict.fromkeys(RENAMED_KEYS.values())]
    assert with_current_keys({"gate_penalty": 0.1}) == {"penalty": 0.1}  # seq2seq's spelling
    # A key of now wins over its old spelling; a name the reader still has stays.
    assert with_current_keys({"tau": 0.1, "temperature": 0.5}) == {"temperature": 0.5}
    assert with_current_keys({"aux": "fnn"}, current={"aux"}) == {"aux": "fnn"}


@dataclasses.dataclass
class _Config:
    backup_dir: str = None
    restart: bool = False
    temperature: float = 0.5
    penalty: float = 1e-2
    auxiliary: str = "bilstm"


def test_a_backup_that_recorded_the_old_keys_resumes(tmp_path):
    backup = tmp_path / "backup"
    backup.mkdir()
    (backup / CONFIG_FILE).write_text(json.dumps({"restart": False, "tau": 0.5, "lam": 1e-2, "aux": "bilstm"}))
    assert prepare_backup_dir(_Config(backup_dir=str(backup))) == str(backup)
    with pytest.raises(GANetInputError, match=r"--penalty 0.01 \(now 0.0\)"):
        prepare_backup_dir(_Config(backup_dir=str(backup), penalty=0.0))
