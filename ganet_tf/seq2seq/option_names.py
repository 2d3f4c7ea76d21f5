"""The options of `seq2seq` renamed to the model builders' spellings, and what older files call them."""

# An older name -> today's, in a `Seq2SeqConfig`, an `EncoderDecoder` config
# (`model.keras`), a run's `metrics.json` and a backup's `run_config.json`.
RENAMED_OPTIONS = {
    "aux": "auxiliary",
    "aux_hidden": "auxiliary_hidden_dim",
    "gate_penalty": "penalty",
    "gate_bias": "initial_gate_logit",
}


def current_option_names(options):
    """`options` (a dict of saved options) with every older name of
    `RENAMED_OPTIONS` replaced by today's, in the same order; the one
    reader of the older names.

    Example:

    >>> current_option_names({"aux": "fnn", "hidden": 256})
    {'auxiliary': 'fnn', 'hidden': 256}
    """
    return {RENAMED_OPTIONS.get(name, name): value for name, value in options.items()}
