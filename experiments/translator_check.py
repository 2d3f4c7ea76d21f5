"""Does a finished subword run translate the same through its SavedModel?
(issue 54)

    python experiments/translator_check.py --data-dir ../shared/data \
        --name multi30k-subwords_bahdanau_seed0

Loads the run `runs/seq2seq/NAME` (as `seq2seq_tables.py` leaves it) with
`load_translator`, translates the Multi30k test 2016 sources in this
process, writes the run's translator SavedModel (`save_translator`, what
`seq2seq --export` writes) to a temporary folder, loads it in a fresh
Python with TensorFlow and tensorflow-text only, translates the same
sources there in the same batches, and counts identical strings and translations holding an
unknown token (and lists the sentences whose two translations differ).
Writes `results/seq2seq_subwords/translator_check_NAME.json`.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import REPO
from runner import machine
from runner import write_json

# Runs in the fresh Python: SavedModel in, one JSON list of translations out.
SERVE = """
import json, sys
import tensorflow as tf
import tensorflow_text  # registers the SentencePiece ops
translate = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
with open(sys.argv[2], encoding="utf-8") as handle:
    sources = json.load(handle)
batch = int(sys.argv[3])
translations = []
for start in range(0, len(sources), batch):
    (texts,) = translate(tf.constant(sources[start : start + batch])).values()
    translations += [text.decode("utf-8") for text in texts.numpy().tolist()]
print(json.dumps(translations))
"""
# `TextTranslator.predict`'s batch, the same on both sides (a translation's
# length limit is its own sentence's, so the batches only set the speed).
BATCH = 64


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True, help="a finished run under --runs-root")
    parser.add_argument("--data-dir", default=os.environ.get("GANET_DATA_DIR"))
    parser.add_argument("--runs-root", default=os.path.join(REPO, "runs", "seq2seq"))
    parser.add_argument("--results", default=os.path.join(REPO, "results", "seq2seq_subwords"))
    args = parser.parse_args()
    from ganet_tf.errors import GANetInputError
    from ganet_tf.inference.text_translator import load_translator
    from ganet_tf.seq2seq.datasets import load_multi30k
    from ganet_tf.seq2seq.translator import save_translator
    from ganet_tf.seq2seq.vocabulary import holds_unknown

    try:
        translator = load_translator(os.path.join(args.runs_root, args.name))
        sources = list(load_multi30k(args.data_dir)["test"][0])
    except GANetInputError as error:
        raise SystemExit(f"error: {error}") from None
    in_process = translator.predict(sources, batch_size=BATCH)
    with tempfile.TemporaryDirectory() as folder:
        export = os.path.join(folder, "translator")
        save_translator(translator.model, translator.source_vocabulary, translator.target_vocabulary, export)
        sources_path = os.path.join(folder, "sources.json")
        with open(sources_path, "w", encoding="utf-8") as handle:
            json.dump(sources, handle)
        served = subprocess.run(
            [sys.executable, "-c", SERVE, export, sources_path, str(BATCH)], capture_output=True, text=True, check=True
        )
    saved_model = json.loads(served.stdout.strip().splitlines()[-1])
    result = {
        "name": args.name,
        "sentences": len(sources),
        "identical": sum(a == b for a, b in zip(in_process, saved_model, strict=True)),
        "unknown_in_saved_model": sum(holds_unknown(text) for text in saved_model),
        "first": {"source": sources[0], "in_process": in_process[0], "saved_model": saved_model[0]},
        "different": [
            {"index": i, "source": sources[i], "in_process": a, "saved_model": b}
            for i, (a, b) in enumerate(zip(in_process, saved_model, strict=True))
            if a != b
        ],
        "command": f"python experiments/translator_check.py --data-dir ../shared/data --name {args.name}",
        "machine": machine(),
    }
    write_json(os.path.join(args.results, f"translator_check_{args.name}.json"), result)
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
