"""Attention FLOPs per example, counted as the paper's Table 3 counts them."""

import numpy as np


def attention_flops(attention_layer, attended_tokens):
    """FLOPs of attention for each example.

    Soft attention scores and weighs every real token (so do sparsemax and
    1.5-entmax attention); GA-Net only the tokens whose gate is open. So pass
    the real lengths for the soft count and the numbers of open gates for
    the gated one. The cost of one token is the layer's `flops_per_token()`.
    The counts are of the operations the method needs: the dense
    implementation here still scores every position.

    Args:
        attention_layer: the model's (built) `GatedAttentionPooling` or
            `SparseAttentionPooling` layer.
        attended_tokens: array `(batch,)` of attended tokens per example.

    Returns:
        A float64 array `(batch,)` of FLOPs.
    """
    per_token = attention_layer.flops_per_token()
    return np.asarray(attended_tokens, dtype="float64") * per_token
