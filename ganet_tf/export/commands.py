"""`python -m ganet_tf export`: its flags and handler.

A trained run (a classifier of `train --out`, or a translator of `seq2seq
--out`) -> `--base/NAME/VERSION/` for TF Serving. `ganet_tf.cli` adds the
flags with `add_export_arguments` and runs `export_command` under the
reliability policy.
"""

import os

from ganet_tf.errors import GANetInputError
from ganet_tf.policy.inference_gate_flags import add_test_gate_arguments
from ganet_tf.policy.inference_gate_flags import inference_rule_of


def add_export_arguments(parser):
    """The flags of `export`."""
    parser.add_argument(
        "--model",
        required=True,
        help="folder written by `train --out` or `seq2seq --out` (a translator), or its model.keras",
    )
    parser.add_argument("--name", required=True, help="model name in TF Serving (URLs, models.config)")
    parser.add_argument("--version", type=int, help="version number (default: the next integer)")
    parser.add_argument("--base", default="saved_models", help="folder of all exported models")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing version")
    parser.add_argument("--warmup-texts", help="UTF-8 file, one text a line, for the warmup requests")
    add_test_gate_arguments(parser)


def export_command(args):
    """`python -m ganet_tf export`: writes `--base/NAME/VERSION/`; returns its JSON summary."""
    from ganet_tf.export import export_saved_model
    from ganet_tf.export import export_translator
    from ganet_tf.export import load_warmup_texts
    from ganet_tf.export import served_test_gates
    from ganet_tf.policy import check_number
    from ganet_tf.policy.run_folder import check_outside_runs
    from ganet_tf.policy.run_folder import is_inside
    from ganet_tf.seq2seq.run_translator import is_seq2seq_run

    check_number("--version", args.version, at_least=1, integer=True, optional=True)
    test_gates = inference_rule_of(args)
    # --base only gains NAME/VERSION and models.config (it is no folder export
    # owns), but it must not lie inside the run folder it reads.
    run_dir = (os.path.dirname(args.model) or ".") if args.model.endswith(".keras") else args.model
    if os.path.isdir(run_dir) and is_inside(args.base, run_dir):
        raise GANetInputError(
            f"--base {args.base} lies inside --model {run_dir}, which it reads: give a folder outside it, "
            "e.g. saved_models."
        )
    check_outside_runs(args.base, "--base")
    texts = load_warmup_texts(args.warmup_texts) if args.warmup_texts else None
    if is_seq2seq_run(run_dir):
        path = export_translator(run_dir, args.name, args.version, args.base, args.overwrite, texts, test_gates)
    else:
        path = export_saved_model(args.model, args.name, args.version, args.base, args.overwrite, texts, test_gates)
    result = {
        "name": args.name,
        "version": int(os.path.basename(path)),
        "path": path,
        "models_config": os.path.join(args.base, "models.config"),
    }
    if test_gates is None:
        return result
    # The rule in full: a top_k or nucleus without its parameter took the
    # run's target density.
    return {**result, "test_gates": served_test_gates(path) or test_gates}
