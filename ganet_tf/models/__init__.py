from ganet_tf.models.baselines import build_bilstm
from ganet_tf.models.baselines import build_local_attention
from ganet_tf.models.baselines import build_soft_attention
from ganet_tf.models.explainer import build_explainer
from ganet_tf.models.ganet import build_ganet

MODEL_BUILDERS = {
    "ganet": build_ganet,
    "bilstm": build_bilstm,
    "local": build_local_attention,
    "soft": build_soft_attention,
}


def build_model(model, num_classes, **kwargs):
    """Builds `model` (one of `MODEL_BUILDERS`) with the builder's arguments."""
    if model not in MODEL_BUILDERS:
        raise ValueError(
            f"Unknown model. Expected one of {sorted(MODEL_BUILDERS)}. "
            f"Received: model={model}"
        )
    return MODEL_BUILDERS[model](num_classes, **kwargs)
