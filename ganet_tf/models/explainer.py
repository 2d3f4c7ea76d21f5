"""Per-token explanations of a trained model, without retraining."""

import keras
from keras import ops


def build_explainer(model):
    """A model with the same inputs that also returns what each token got.

    Works on models from `ganet_tf.models` (also after `.keras` reload). The
    explainer returns a dict with `probabilities` `(batch, num_classes)` and,
    where the model has them, `attention` (the weights alpha, `(batch,
    steps)`), `gate_probabilities` (p_t) and `gates` (g_t, binary outside
    training: the gate sampler's inference mode decides).
    """
    outputs = {"probabilities": model.output}
    names = {layer.name for layer in model.layers}
    if "attention" in names:
        outputs["attention"] = model.get_layer("attention").output[1]
    if "auxiliary" in names:
        logits = model.get_layer("auxiliary").output
        outputs["gate_probabilities"] = ops.sigmoid(logits)
        outputs["gates"] = model.get_layer("gates").output
    return keras.Model(model.inputs, outputs, name=f"{model.name}_explainer")
