"""`python -m ganet_tf explain`: its flags and handler.

The per-token gates and attention of trained runs, as an HTML page, one PNG
per text and `explanations.json` in `--out`. `ganet_tf.cli` adds the flags
with `add_explain_arguments` and runs `explain_command` under the
reliability policy.
"""

import json
import os
import re

from ganet_tf.errors import GANetInputError
from ganet_tf.policy.inference_gate_flags import add_test_gate_arguments
from ganet_tf.policy.inference_gate_flags import inference_rule_of


def add_explain_arguments(parser):
    """The flags of `explain`."""
    parser.add_argument(
        "--model",
        action="append",
        required=True,
        help="folder written by `train --out`; repeat to compare models side by side",
    )
    parser.add_argument("--text", action="append", default=[], help="a text to explain; repeatable")
    parser.add_argument("--file", help="file with one text a line (UTF-8 unless --encoding)")
    parser.add_argument("--encoding", default="utf-8", help="text encoding of --file (e.g. latin-1)")
    parser.add_argument("--out", required=True, help="folder for index.html, the PNGs and explanations.json")
    add_test_gate_arguments(parser)


# What `explain --out` writes: the page, one PNG per text, the JSON, the marker.
_EXPLAIN_FILE = re.compile(r"^(index\.html|explanations\.json|text_[0-9]+\.png|\.ganet_tf_run)$")


def is_explain_folder(path):
    """Whether `path` is empty or a report `explain --out` wrote (replaced whole)."""
    entries = os.listdir(path)
    return all(_EXPLAIN_FILE.match(entry) for entry in entries) and (not entries or "explanations.json" in entries)


def explain_command(args):
    """`python -m ganet_tf explain`: writes the report to `--out`; returns its JSON summary."""
    from ganet_tf.interpret import explain_texts
    from ganet_tf.interpret import write_report
    from ganet_tf.policy import OutputFolder
    from ganet_tf.policy import locked_output_folders
    from ganet_tf.policy import read_input_lines
    from ganet_tf.policy import write_run_folder
    from ganet_tf.policy.run_folder import check_writable_folder
    from ganet_tf.policy.trained_run import model_file

    test_gates = inference_rule_of(args)
    texts = list(args.text)
    if args.file:
        texts += [line.strip() for line in read_input_lines(args.file, args.encoding, "--file") if line.strip()]
    if not texts:
        raise GANetInputError("Nothing to explain: pass --text or --file.")
    check_writable_folder(args.out, "--out")
    for model_dir in args.model:
        if not os.path.isfile(model_file(model_dir)):
            raise GANetInputError(
                f"No model.keras in {model_dir}: pass a folder written by `python -m ganet_tf train --out`."
            )
    inputs = [("--model", model_dir) for model_dir in args.model] + ([("--file", args.file)] if args.file else [])
    with locked_output_folders([OutputFolder(args.out, "--out", is_explain_folder)], inputs):
        explanations = [explain_texts(model_dir, texts, test_gates) for model_dir in args.model]

        def write_files(staging):
            write_report(explanations, staging)
            with open(os.path.join(staging, "explanations.json"), "w", encoding="utf-8") as handle:
                json.dump(explanations, handle, ensure_ascii=False, indent=1)

        # Staged beside --out and swapped in whole: no half-written report.
        write_run_folder(args.out, write_files, owned=is_explain_folder)
    names = ["index.html", *(f"text_{index + 1}.png" for index in range(len(texts))), "explanations.json"]
    return {"texts": len(texts), "models": len(args.model), "files": [os.path.join(args.out, n) for n in names]}
