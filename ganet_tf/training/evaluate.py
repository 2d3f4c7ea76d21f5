"""Test-set evaluation of a trained model: accuracy, density, FLOPs, report."""

import numpy as np

from ganet_tf.layers import GatedAttentionPooling
from ganet_tf.layers import SparseAttentionPooling
from ganet_tf.metrics import attention_flops
from ganet_tf.metrics import classification_report
from ganet_tf.models import build_explainer


def evaluate_model(model, ids, labels, class_names, batch_size=128):
    """Evaluates a model of `ganet_tf.models` on token ids.

    Returns a JSON-ready dict: `accuracy`; `density` (open gates / real
    tokens, averaged over examples with a real token; `None` without gates);
    `attention_flops_soft` and `attention_flops_gated` (mean attention FLOPs
    per example when every real token is attended, and when only the open
    ones are; `None` where the model has no additive attention / no gates);
    `all_closed_rate` (share of examples whose gates are all closed, pooled
    by the attention's fallback, whose tokens the gated FLOPs then count);
    `attended_density` (tokens with attention weight alpha > 0 / real
    tokens, counting the fallback's tokens in an all-closed row: all of
    them under `fallback="all"`, one under `"most_probable"`; `None`
    without gates); and `report` (per-class precision/recall/F1 and
    confusion matrix). For sparsemax and 1.5-entmax attention, which
    score every real token, `attention_flops_soft` is given and
    `attended_density` counts the real tokens with alpha > 0.
    """
    result = {
        "accuracy": None,
        "density": None,
        "attention_flops_soft": None,
        "attention_flops_gated": None,
        "all_closed_rate": None,
        "attended_density": None,
        "report": None,
    }
    if len(ids) == 0:
        return result
    outputs = build_explainer(model).predict(ids, batch_size=batch_size, verbose=0)
    predictions = np.argmax(outputs["probabilities"], axis=-1)
    report = classification_report(labels, predictions, class_names)
    result["accuracy"] = report["accuracy"]
    result["report"] = report

    lengths = np.sum(ids != 0, axis=-1)
    has_tokens = lengths > 0
    attention = model.get_layer("attention") if "attention" in outputs else None
    if isinstance(attention, (GatedAttentionPooling, SparseAttentionPooling)):
        flops = attention_flops(attention, lengths)
        result["attention_flops_soft"] = float(flops[has_tokens].mean())
    if isinstance(attention, SparseAttentionPooling) and np.any(has_tokens):
        attended = np.sum((outputs["attention"] > 0) & (ids != 0), axis=-1)
        result["attended_density"] = float(np.mean(attended[has_tokens] / lengths[has_tokens]))
    if "gates" in outputs:
        open_gates = np.sum((outputs["gates"] > 0.5) & (ids != 0), axis=-1)
        density = open_gates[has_tokens] / lengths[has_tokens]
        result["density"] = float(density.mean())
        result["all_closed_rate"] = float(np.mean(open_gates[has_tokens] == 0))
        # A row with every gate closed is pooled by the layer's fallback.
        fallback = lengths if attention.fallback == "all" else np.ones_like(lengths)
        attended = np.where(open_gates > 0, open_gates, fallback)
        result["attended_density"] = float(np.mean(attended[has_tokens] / lengths[has_tokens]))
        flops = attention_flops(attention, attended)
        result["attention_flops_gated"] = float(flops[has_tokens].mean())
    return result
