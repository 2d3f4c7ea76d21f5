"""The reliability policy of every command, and its run folders, in one place.

Every command (`train`, `seq2seq`, `export`, `explain`, `predict`, `tune`)
keeps the promises of the README's "What the tools write" through these
helpers, so a new command inherits them by calling them. The package lies
below every command's package and imports none of them
(`docs/architecture.md`):

- Numbers: `check_number` refuses a NaN, an infinity or an out-of-range
  value with one error line; `check_finite_fields` checks every float of a
  config; `check_choice` a value with choices.
- Flags: `explicit_flags` tells the flags the user gave from those left to
  their defaults; `check_flags_apply` refuses (or warns about) one that the
  chosen model does not read.
- Output folders: `OutputFolder` names one and its rules;
  `check_output_folders` refuses, before any work, a file, a folder of the
  user's, the working folder, a folder that holds an input or lies inside
  an input folder, one inside a folder a ganet_tf command owns
  (`check_outside_runs`, also for a folder a command only adds to), and
  two outputs that are the same or nested;
  `locked_output_folders` also locks them, cleans a killed writer's
  left-overs and removes what a failed run made. `write_run_folder`
  replaces a folder all or nothing (staged beside it, swapped in by
  renames), `write_file_atomically` a file, `write_json` a JSON file.
- Backups: `prepare_backup_dir` records a run's flags (its fingerprint,
  `run_config.json`) and refuses to resume it with others.
- Divergence: `NonFiniteGuard` (first in the callbacks) stops a training
  whose loss or weights stop being finite with `TrainingDivergedError`
  before anything saves it; `check_finite_weights` checks after training.
- Trained runs: `ganet_tf.policy.trained_run` reads back what `train --out`
  wrote (`load_run`, `read_metrics`), for `export`, `explain`, `predict`;
  a config that recorded the gate options under their old names (`tau`,
  `lam`, ...) reads under the names of now (`ganet_tf.policy.renamed_keys`,
  also for a backup's `run_config.json`).
- Inputs: `read_input_text` and `read_input_lines` read a plain or gzip text
  file as written (a UTF-8 BOM dropped); `read_run_json` and
  `load_model_file` read a run's files. A damaged file is one error line
  naming it (and the line) and the fix.
- Interruption: `install_signal_handlers` makes SIGTERM stop a command as
  Ctrl-C does; its handler only records the signal, and
  `check_stop_signal` raises it in the command's own code: by
  `StopSignalCheck` after every batch, before every swap, and as a
  `critical_section` (a swap) ends. `interruption_message` is its one
  line and exit code.
- A full disk: `os_error_message` is the one line (naming the fix) and
  exit code of an `OSError`; `tensorflow_disk_errors` raises TensorFlow's
  error of a full disk (a SavedModel's SaveV2) as that `OSError`.

Every refusal is a `GANetInputError`, which the command line prints as one
`ganet_tf: error:` line with exit code 2.

The names are imported from their modules on first use
(`ganet_tf.lazy_names`): the command line imports `ganet_tf.policy`'s
signal handling and flag checks before TensorFlow.
"""

from ganet_tf.lazy_names import lazy_names

__all__ = [
    "FolderLock",
    "NonFiniteGuard",
    "OutputFolder",
    "StopSignalCheck",
    "Terminated",
    "TrainingDivergedError",
    "check_choice",
    "check_finite_fields",
    "check_finite_weights",
    "check_flags_apply",
    "check_number",
    "check_output_folders",
    "check_outside_runs",
    "check_stop_signal",
    "critical_section",
    "explicit_flags",
    "flag_name",
    "install_signal_handlers",
    "interruption_message",
    "is_run_folder",
    "load_model_file",
    "locked_output_folders",
    "os_error_message",
    "prepare_backup_dir",
    "read_input_bytes",
    "read_input_lines",
    "read_input_text",
    "read_run_json",
    "restore_signal_handlers",
    "tensorflow_disk_errors",
    "write_file_atomically",
    "write_json",
    "write_run_folder",
]

__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "ganet_tf.policy.backup": ("prepare_backup_dir",),
        "ganet_tf.policy.disk_space": ("os_error_message", "tensorflow_disk_errors"),
        "ganet_tf.policy.flag_values": (
            "check_choice",
            "check_finite_fields",
            "check_flags_apply",
            "check_number",
            "explicit_flags",
            "flag_name",
        ),
        "ganet_tf.policy.input_files": (
            "load_model_file",
            "read_input_bytes",
            "read_input_lines",
            "read_input_text",
            "read_run_json",
        ),
        "ganet_tf.policy.interruption": (
            "Terminated",
            "check_stop_signal",
            "critical_section",
            "install_signal_handlers",
            "interruption_message",
            "restore_signal_handlers",
        ),
        "ganet_tf.policy.non_finite_guard": ("NonFiniteGuard", "TrainingDivergedError", "check_finite_weights"),
        "ganet_tf.policy.output_folder": (
            "OutputFolder",
            "check_output_folders",
            "locked_output_folders",
            "write_file_atomically",
            "write_json",
        ),
        "ganet_tf.policy.run_folder": ("FolderLock", "check_outside_runs", "is_run_folder", "write_run_folder"),
        "ganet_tf.policy.stop_signal_check": ("StopSignalCheck",),
    },
)
