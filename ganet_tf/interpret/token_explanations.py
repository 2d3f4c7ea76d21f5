"""What each token got from a trained model: p_t, g_t and alpha_t.

The library behind `python -m ganet_tf explain`: the paper's Figure 4 and
Table 4 views (heatmap rows of the attention of several models, the text with
the open-gate tokens in bold, and p_t against alpha_t).
"""

import html
import os

import numpy as np
import tensorflow as tf

from ganet_tf.data.vectorizer import readable_token
from ganet_tf.data.vectorizer import text_tokens
from ganet_tf.data.vectorizer import tokenizer_of
from ganet_tf.data.vectorizer import vectorize
from ganet_tf.extras import import_extra
from ganet_tf.models import build_explainer
from ganet_tf.models import gate_rule
from ganet_tf.policy.trained_run import load_run


def load_trained(model_dir, test_gates=None):
    """`(model, vectorizer, class_names)` of a `train --out` folder (`load_run`)."""
    return load_run(model_dir, test_gates)


def explain_texts(model_dir, texts, test_gates=None):
    """Per-token explanations of `texts` by the model in `model_dir`.

    `test_gates` (a rule from `ganet_tf.policy.trained_run.inference_rule`)
    explains a GA-Net run under another test-gate rule than its own; each
    explanation then names it under `test_gates`.

    Returns one dict per text: `tokens` (the standardised words the model
    read, truncated to its sequence length; out-of-vocabulary words keep
    their spelling; bytes as `readable_token` shows them),
    `in_vocabulary`, `label` and `probabilities`, and per
    token `attention` (alpha_t), and for GA-Net `gate_probabilities` (p_t)
    and `gates` (g_t), as lists.
    """
    model, vectorizer, class_names = load_trained(model_dir, test_gates)
    rule = gate_rule(model)
    ids = vectorize(vectorizer, list(texts))
    outputs = build_explainer(model).predict(ids, verbose=0)
    words = text_tokens(vectorizer, tf.constant(list(texts))).to_list()
    tokenizer = tokenizer_of(vectorizer)
    explanations = []
    for row, text in enumerate(texts):
        length = int(np.sum(ids[row] != 0))
        probabilities = outputs["probabilities"][row]
        item = {
            "model": model.name,
            "model_dir": model_dir,
            "text": text,
            "tokens": [readable_token(w, tokenizer) for w in words[row][:length]],
            "in_vocabulary": (ids[row, :length] != 1).tolist(),
            "label": class_names[int(np.argmax(probabilities))],
            "probabilities": dict(zip(class_names, map(float, probabilities), strict=True)),
        }
        for key in ("attention", "gate_probabilities", "gates"):
            if key in outputs:
                item[key] = [float(v) for v in outputs[key][row, :length]]
        if test_gates is not None:
            item["test_gates"] = rule
        explanations.append(item)
    return explanations


def _heat(weight):
    """Background colour of a weight in [0, 1]: white to red."""
    level = int(255 - 200 * max(0.0, min(1.0, weight)))
    return f"rgb(255,{level},{level})"


def _token_row(item):
    weights = np.asarray(item.get("attention") or [0.0] * len(item["tokens"]))
    scale = weights.max() if weights.size and weights.max() > 0 else 1.0
    gates = item.get("gates")
    cells = []
    for index, token in enumerate(item["tokens"]):
        text = html.escape(token)
        if gates is not None and gates[index] > 0.5:
            text = f"<b>{text}</b>"
        title = f"alpha={weights[index]:.3f}" if weights.size else ""
        if gates is not None:
            title += f" p={item['gate_probabilities'][index]:.3f} g={gates[index]:.0f}"
        cells.append(
            f'<span class="tok" style="background:{_heat(weights[index] / scale)}" title="{title}">{text}</span>'
        )
    return " ".join(cells)


def write_report(explanations_by_model, out_dir, title="GA-Net explanations"):
    """Writes `index.html` and one PNG per text to `out_dir`.

    Args:
        explanations_by_model: list (one entry per model) of the lists that
            `explain_texts` returns for the same texts.
        out_dir: the folder to write.

    Returns:
        The list of written paths.
    """
    (matplotlib,) = import_extra("plots", "explain's figures", "matplotlib")
    matplotlib.use("Agg")
    from matplotlib import pyplot

    os.makedirs(out_dir, exist_ok=True)
    count = len(explanations_by_model[0])
    parts = [
        "<!doctype html><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;max-width:70em;margin:2em auto}"
        ".tok{padding:1px 2px;margin:1px;display:inline-block;border-radius:3px}"
        "td,th{padding:2px 6px;font-size:90%;text-align:right}</style>",
        f"<h1>{html.escape(title)}</h1>",
        "<p>Background: attention weight alpha_t (darker = more, scaled per row). "
        "<b>Bold</b>: GA-Net's gate is open. Hover a token for its numbers.</p>",
    ]
    written = []
    for index in range(count):
        items = [explanations[index] for explanations in explanations_by_model]
        parts.append(f"<h2>Text {index + 1}</h2><p>{html.escape(items[0]['text'])}</p><table>")
        for item in items:
            parts.append(
                f"<tr><th>{html.escape(item['model'])} &rarr; {html.escape(item['label'])}</th>"
                f"<td style='text-align:left'>{_token_row(item)}</td></tr>"
            )
        parts.append("</table>")
        png = f"text_{index + 1}.png"
        _plot(pyplot, items, os.path.join(out_dir, png))
        written.append(os.path.join(out_dir, png))
        parts.append(f"<p><img src='{png}' style='max-width:100%'></p>")
    path = os.path.join(out_dir, "index.html")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(parts))
    return [path, *written]


def _plot(pyplot, items, path):
    tokens = items[0]["tokens"]
    rows, names = [], []
    for item in items:
        if "attention" in item:
            rows.append(item["attention"])
            names.append(f"{item['model']} α")
        if "gate_probabilities" in item:
            rows.append(item["gate_probabilities"])
            names.append(f"{item['model']} p")
    gated = [item for item in items if "gates" in item]
    width = max(6.0, 0.35 * len(tokens))
    figure, axes = pyplot.subplots(
        2 if gated else 1,
        1,
        figsize=(width, 1.0 + 0.45 * len(rows) + (2.5 if gated else 0)),
        squeeze=False,
    )
    heat = axes[0, 0]
    if rows:
        heat.imshow(np.asarray(rows), cmap="Reds", aspect="auto", vmin=0, vmax=1)
    heat.set_yticks(range(len(names)), names)
    heat.set_xticks(range(len(tokens)), tokens, rotation=60, ha="right", fontsize=8)
    if gated:
        item = gated[0]
        positions = np.arange(len(tokens))
        line = axes[1, 0]
        line.bar(positions - 0.2, item["gate_probabilities"], 0.4, label="gate probability p_t")
        line.bar(positions + 0.2, item["attention"], 0.4, label="attention weight α_t")
        line.set_xticks(positions, tokens, rotation=60, ha="right", fontsize=8)
        line.set_ylim(0, 1)
        line.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
