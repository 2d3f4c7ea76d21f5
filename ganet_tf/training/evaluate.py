"""Test-set evaluation of a trained model: accuracy, density, FLOPs, report."""

import numpy as np

from ganet_tf.layers import GatedAttentionPooling
from ganet_tf.layers import SparseAttentionPooling
from ganet_tf.metrics import attention_flops
from ganet_tf.metrics import classification_report
from ganet_tf.models import build_explainer

# Batch widths are rounded up to a multiple of this many tokens: few shapes to trace.
_WIDTH_STEP = 128


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

    The texts are predicted in batches of `batch_size` texts of similar
    length, each cut to its longest text (rounded up to a multiple of 128
    tokens): the models mask the padding, so the scores are those of the
    padded texts, without computing the padding (most of a batch of long
    documents padded to the longest one).
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
    outputs = _predict_by_length(build_explainer(model), np.asarray(ids), batch_size)
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


def _predict_by_length(explainer, ids, batch_size):
    """The explainer's outputs on `ids` (in their order), predicted in batches of texts of similar length, each cut
    to its longest text: one past the last real token, rounded up to a multiple of `_WIDTH_STEP`."""
    steps = ids.shape[1]
    ends = np.max(np.where(ids != 0, np.arange(1, steps + 1), 0), axis=-1)
    order = np.argsort(ends, kind="stable")
    outputs = {}
    for start in range(0, len(ids), batch_size):
        rows = order[start : start + batch_size]
        width = min(steps, max(1, -(-int(ends[rows].max()) // _WIDTH_STEP)) * _WIDTH_STEP)
        for key, values in explainer.predict_on_batch(ids[rows, :width]).items():
            values = np.asarray(values)
            if key != "probabilities":  # one value per token: the cut-off padding is 0
                values = np.pad(values, [(0, 0), (0, steps - width)] + [(0, 0)] * (values.ndim - 2))
            outputs.setdefault(key, np.zeros((len(ids), *values.shape[1:]), values.dtype))[rows] = values
    return outputs
