"""Does a finished subword run translate the same through its SavedModel? (issue 54)

    python experiments/translator_check.py --data-dir ../shared/data --name multi30k-subwords_bahdanau_seed0

Translates the Multi30k test sources with the run's `load_translator` in this
process and with its translator SavedModel (`save_translator`, as `seq2seq
--export` writes it) in a fresh Python with TensorFlow and tensorflow-text
only, in the same batches; counts identical strings and translations holding
an unknown token. Writes `results/seq2seq_subwords/translator_check_NAME.json`.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from experiments.runner import REPO
from experiments.runner import machine
from experiments.runner import write_json

# The fresh Python: SavedModel, sources and batch in, one JSON list of translations out.
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
BATCH = 64  # both sides (a translation's length limit is its own sentence's)


def served(translator, sources):
    """`sources` translated by `translator`'s SavedModel in a fresh Python."""
    from ganet_tf.seq2seq.translator import save_translator

    with tempfile.TemporaryDirectory() as folder:
        export, path = os.path.join(folder, "translator"), os.path.join(folder, "sources.json")
        save_translator(translator.model, translator.source_vocabulary, translator.target_vocabulary, export)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(sources, handle)
        command = [sys.executable, "-c", SERVE, export, path, str(BATCH)]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(output.strip().splitlines()[-1])


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
    from ganet_tf.seq2seq.vocabulary import holds_unknown

    try:
        translator = load_translator(os.path.join(args.runs_root, args.name))
        sources = list(load_multi30k(args.data_dir)["test"][0])
    except GANetInputError as error:
        raise SystemExit(f"error: {error}") from None
    pairs = list(zip(translator.predict(sources, batch_size=BATCH), served(translator, sources), strict=True))
    result = {
        "name": args.name,
        "sentences": len(sources),
        "identical": sum(a == b for a, b in pairs),
        "unknown_in_saved_model": sum(holds_unknown(b) for _, b in pairs),
        "first": {"source": sources[0], "in_process": pairs[0][0], "saved_model": pairs[0][1]},
        "different": [
            {"index": i, "source": sources[i], "in_process": a, "saved_model": b}
            for i, (a, b) in enumerate(pairs)
            if a != b
        ],
        "command": f"python experiments/translator_check.py --data-dir ../shared/data --name {args.name}",
        "machine": machine(),
    }
    write_json(os.path.join(args.results, f"translator_check_{args.name}.json"), result)
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
