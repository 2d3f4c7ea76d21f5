"""The config keys of runs written before the gate options took the builders'
names, read as the keys of now: the one place that maps them.

`train` recorded the gate options under its own flags' names (`tau`, `lam`,
...) and `seq2seq` under its own (`gate_penalty`, `aux`, ...) in a run
folder's `metrics.json`, in a `--backup-dir`'s `run_config.json`, in the
summaries they print and (`seq2seq`) in the `EncoderDecoder` config of
`model.keras`. Every reader of those (`read_metrics`, `prepare_backup_dir`,
`EncoderDecoder.from_config`, `seq2seq --init-from`, the experiments)
passes them through `with_current_keys`, so a run written before still
loads, resumes and is recognised as done.
"""

# Old key -> the key of now (the builders' argument and `TrainConfig` field).
RENAMED_KEYS = {
    "aux": "auxiliary",
    "aux_hidden": "auxiliary_hidden_dim",
    "tau": "temperature",
    "final_tau": "final_temperature",
    "lam": "penalty",
    "gate_penalty": "penalty",
    "gate_bias": "initial_gate_logit",
}


def with_current_keys(config, current=()):
    """`config` with each old key of `RENAMED_KEYS` renamed to its key of now.

    Args:
        config: a dict a run recorded, e.g. the `config` of its
            `metrics.json`.
        current: names that are keys of now in the reader's config and
            stay as they are (a config that still has a field `aux`).

    Returns:
        A new dict in the same order; where both spellings are there, the
        key of now keeps its value.

    Example:

    >>> with_current_keys({"tau": 0.5, "lr": 0.001})
    {'temperature': 0.5, 'lr': 0.001}
    """
    renamed = {}
    for key, value in config.items():
        new = RENAMED_KEYS.get(key) if key not in current else None
        if new is None:
            renamed[key] = value
        elif new not in config:
            renamed[new] = value
    return renamed
