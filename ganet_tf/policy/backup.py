"""`--backup-dir`: epoch-end backups written atomically, checked on resume.

A backup folder holds `backup/` (Keras' `BackupAndRestore`: weights,
optimizer and epoch of the last finished epoch), `history.csv` (one row per
finished epoch), `best.weights.h5` and `run_config.json`, the flags of the
run, and `epoch_seconds.json`, the seconds of every finished epoch; a
`seq2seq` backup also holds `vocabularies.json`, and keeps `backup/` after
training. Every file is
written to a temporary file beside it and renamed over the old one, so a
kill at any moment leaves the previous epoch's backup readable. A run
started on a backup of other flags is refused with one line naming them;
`--restart` deletes the backup and starts over.
"""

import dataclasses
import json
import os
import shutil

from ganet_tf.errors import GANetInputError
from ganet_tf.errors import first_line
from ganet_tf.keras_compat import BackupAndRestore
from ganet_tf.keras_compat import set_initial_epoch
from ganet_tf.policy.flag_values import flag_name
from ganet_tf.policy.interruption import critical_section
from ganet_tf.policy.output_folder import write_json
from ganet_tf.policy.renamed_keys import with_current_keys
from ganet_tf.policy.run_folder import check_output_folder

CONFIG_FILE = "run_config.json"
EPOCH_SECONDS_FILE = "epoch_seconds.json"
VALIDATION_SECONDS_FILE = "validation_seconds.json"
# `vocabularies.json`: a resumed `seq2seq` run's ids; `epoch_seconds.json`
# and `validation_seconds.json`: the seconds of the finished epochs and of
# their validation (`ganet_tf.fitting.EpochTimer`).
BACKUP_FILES = frozenset(
    {
        "backup",
        "history.csv",
        "best.weights.h5",
        "vocabularies.json",
        EPOCH_SECONDS_FILE,
        VALIDATION_SECONDS_FILE,
        CONFIG_FILE,
    }
)
# Flags that may change between attempts of one run: where it writes, how
# much it prints, and how long it may train.
RESUMABLE_CHANGES = frozenset(
    {
        "epochs",
        "patience",
        "time_budget",
        "validation_batch_size",
        "out",
        "backup_dir",
        "verbose",
        "restart",
        "tensorboard",
        "strategy",
        "cpu_devices",
        "jit_compile",
        "export",
    }
)


def _temporary(path):
    folder, name = os.path.split(path)
    return os.path.join(folder, f".tmp-{os.getpid()}-{name}")


def unreadable_backup(path, error):
    """The one-line error for a backup file that cannot be read."""
    return GANetInputError(
        f"The backup file {path} is unreadable ({type(error).__name__}: "
        f"{first_line(error, 200)}); pass --restart to delete the backup and start over."
    )


def save_weights(model, path):
    """`model.save_weights(path)` through a temporary file and a rename.

    Ctrl-C and SIGTERM are held back until the file is in place: a stop
    signal raised inside the weights' conversion to NumPy would surface as
    that conversion's error instead of the one-line interruption.
    """
    temporary = _temporary(path)
    with critical_section():
        try:
            model.save_weights(temporary, overwrite=True)
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.remove(temporary)


class AtomicBackupAndRestore(BackupAndRestore):
    """`BackupAndRestore` whose files are replaced atomically.

    The weights and the epoch are written to temporary files and renamed
    over the previous ones (weights first), so a kill while saving leaves the
    previous epoch's backup intact. A backup that cannot be read is one
    error line naming the file and `--restart`.
    """

    def save_backup(self):
        os.makedirs(self.backup_dir, exist_ok=True)
        with critical_section(raise_after=False):  # a stop signal waits for the next batch
            save_weights(self.model, self.backup_weights_path)
            write_json(self.backup_metadata_path, self.backup_position)

    def restore_backup(self):
        weights_path, metadata_path = self.backup_weights_path, self.backup_metadata_path
        if os.path.exists(weights_path):
            if self.model.optimizer is not None and not self.model.optimizer.built:
                self.model.optimizer.build(self.model.trainable_variables)
            try:
                self.model.load_weights(weights_path)
            except Exception as error:
                raise unreadable_backup(weights_path, error) from error
        if os.path.exists(metadata_path):
            try:
                with open(metadata_path, encoding="utf-8") as handle:
                    epoch = int(json.load(handle)["epoch"])
            except (OSError, ValueError, KeyError, TypeError) as error:
                raise unreadable_backup(metadata_path, error) from error
            set_initial_epoch(self.model, epoch)


def load_backup_weights(model, path):
    """`model.load_weights(path)`, one error line if the file is unreadable."""
    try:
        model.load_weights(path)
    except Exception as error:
        raise unreadable_backup(path, error) from error


def is_backup_folder(path):
    """Whether `path` is empty or holds only what `--backup-dir` writes."""
    entries = {entry for entry in os.listdir(path) if not entry.startswith(".tmp-") and ".ganet-tmp-" not in entry}
    return entries <= BACKUP_FILES


def has_finished_epochs(path):
    """Whether the backup folder `path` holds a finished epoch to resume from."""
    return any(os.path.exists(os.path.join(path, name)) for name in ("backup", "best.weights.h5"))


def _comparable(config):
    values = {key: value for key, value in dataclasses.asdict(config).items() if key not in RESUMABLE_CHANGES}
    return json.loads(json.dumps(values))


def prepare_backup_dir(config, inputs=(), predates=None):
    """Checks `config.backup_dir` before training and records the run's flags.

    The folder must be new, empty or a backup of this project. With
    `config.restart` an existing backup is deleted. Otherwise a backup of a
    run with other flags (`run_config.json`) is refused with one line naming
    the differing flags. A flag a backup does not record counts as its
    value in `predates` (what runs did before the flag existed), else as
    the config's default; one recorded under an old name
    (`ganet_tf.policy.renamed_keys`) as the flag of now.
    """
    path = check_output_folder(config.backup_dir, "--backup-dir", inputs, is_backup_folder)
    config_path = os.path.join(path, CONFIG_FILE)
    if config.restart and os.path.isdir(path):
        shutil.rmtree(path)
    current = _comparable(config)
    if os.path.isfile(config_path):
        try:
            with open(config_path, encoding="utf-8") as handle:
                saved = json.load(handle)
            if not isinstance(saved, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as error:
            raise unreadable_backup(config_path, error) from error
        saved = with_current_keys(saved, current)
        defaults = {**_comparable(type(config)()), **(predates or {})}
        differing = [
            name
            for name in sorted(set(saved) | set(current))
            if name not in RESUMABLE_CHANGES
            and saved.get(name, defaults.get(name)) != current.get(name, defaults.get(name))
        ]
        if differing:
            changes = ", ".join(
                f"{flag_name(name)} {saved.get(name, defaults.get(name))} (now {current.get(name, defaults.get(name))})"
                for name in differing
            )
            raise GANetInputError(
                f"--backup-dir {config.backup_dir} holds a run with other flags: "
                f"{changes}; pass the same flags to resume it, or --restart to "
                "delete it and start over."
            )
        return path
    os.makedirs(path, exist_ok=True)
    write_json(config_path, current)
    return path
