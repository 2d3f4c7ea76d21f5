"""What the fixed classifier reads in a complement (issue 39).

    python experiments/complement_probe.py RUN [RUN ...]

For each `adaptive_gates.py` run of `build_ganet(complement="inputs")` (`runs/adaptive_gates/TASK_...`),
prints the complement loss `KL(u || p(y | x * (1 - g)))` on the task's validation texts with the gates
`g` set by hand: `none_open`, `keywords_open` (the filler only: the objective's target), `all_open`
(an empty text) and the model's own test gates; and `KL(p(y | empty) || p(y | x'))` for the filler
only and the filler with one keyword kept: could the empty text's prediction stand for "no label"?
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run as a script
from experiments import adaptive_gates


def probe(run_dir):
    import keras

    from ganet_tf.data.vectorizer import vectorize
    from ganet_tf.training.trained_run import load_run

    model, vectorizer, _ = load_run(run_dir)
    task = os.path.basename(run_dir).split("_")[0]
    texts, _, keyword_masks = adaptive_gates.task_data(task, "validation")
    ids = vectorize(vectorizer, texts)
    real = ids != 0
    keywords = keyword_masks[:, : ids.shape[1]] & real
    embedded = model.get_layer("embedding")(ids)
    test_gates = keras.Model(model.inputs, model.get_layer("gates").output).predict(ids, verbose=0)
    gates = {
        "none_open": np.zeros(ids.shape, "float32"),
        "keywords_open": keywords.astype("float32"),
        "all_open": real.astype("float32"),
        "test_gates": (test_gates > 0.5).astype("float32"),
    }
    result = {"run": os.path.basename(run_dir), "task": task}
    for name, value in gates.items():
        divergence = np.asarray(model.complement_divergence(embedded, value, real))
        result[name] = float(np.mean(divergence))
    one_kept = keywords.copy()
    one_kept[np.arange(len(ids)), np.argmax(keywords, axis=1)] = False
    empty = _probabilities(model, embedded, gates["all_open"], real)
    for name, value in (("filler_only", gates["keywords_open"]), ("one_keyword_kept", one_kept.astype("float32"))):
        other = _probabilities(model, embedded, value, real)
        kl = np.sum(empty * (np.log(empty + 1e-7) - np.log(other + 1e-7)), axis=1)
        result[f"kl_empty_vs_{name}"] = float(np.mean(kl))
    return result


def _probabilities(model, embedded, gates, real):
    """The class probabilities of the complement `x * (1 - gates)`."""
    states = embedded * (1.0 - gates[..., None])
    for layer in model.encoder_layers:
        states = layer(states, mask=real)
    context = model.get_layer("attention")(states, mask=real)[0]
    return np.asarray(model.get_layer("probabilities")(context))


def main():
    for run in sys.argv[1:]:
        print(json.dumps(probe(run)), flush=True)


if __name__ == "__main__":
    main()
