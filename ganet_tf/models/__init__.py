"""Every model builder of `ganet_tf` (`build_*`), and what the builders
share, on every Keras backend.

`ganet_tf` gives each builder at its top level too (`ganet_tf.build_ganet`
is `ganet_tf.models.build_ganet`).
"""

from ganet_tf import backends
from ganet_tf.namespace import BUILDER_NAMES
from ganet_tf.namespace import MODEL_HELPER_NAMES

backends.require_backend()

from ganet_tf.models.baselines import build_bilstm
from ganet_tf.models.baselines import build_entmax_attention
from ganet_tf.models.baselines import build_local_attention
from ganet_tf.models.baselines import build_soft_attention
from ganet_tf.models.baselines import build_sparsemax_attention
from ganet_tf.models.convolution import build_convolution
from ganet_tf.models.explainer import build_explainer
from ganet_tf.models.ganet import build_ganet
from ganet_tf.models.ganet_transformer import build_ganet_transformer
from ganet_tf.models.gate_layers import gate_rule
from ganet_tf.models.gate_layers import with_gate_inference
from ganet_tf.models.input_complement_model import InputComplementModel
from ganet_tf.models.linear_transformer import build_linear_transformer
from ganet_tf.models.transformer import build_transformer

MODEL_BUILDERS = {
    "ganet": build_ganet,
    "bilstm": build_bilstm,
    "local": build_local_attention,
    "soft": build_soft_attention,
    "sparsemax": build_sparsemax_attention,
    "entmax": build_entmax_attention,
    "transformer": build_transformer,
    "ganet_transformer": build_ganet_transformer,
    "conv": build_convolution,
    "linear_transformer": build_linear_transformer,
}


def build_model(model, num_classes, **kwargs):
    """Builds `model` (one of `MODEL_BUILDERS`) with the builder's arguments."""
    if model not in MODEL_BUILDERS:
        raise ValueError(f"Unknown model. Expected one of {sorted(MODEL_BUILDERS)}. Received: model={model}")
    return MODEL_BUILDERS[model](num_classes, **kwargs)


__all__ = [*BUILDER_NAMES, *MODEL_HELPER_NAMES]
