import math

import keras
from keras import ops

from ganet_tf.layers.argument_checks import is_real


@keras.saving.register_keras_serializable(package="ganet_tf")
class ComplementClassifier(keras.layers.Dense):
    """A softmax classifier that also asks the complement to predict nothing.

    A `keras.layers.Dense` layer with a softmax activation, `p = softmax(W c
    + b)` of the pooled context `c`, plus a training loss on a second
    context: the complement `c'` that attention pools over the tokens whose
    gates are CLOSED (`GatedAttentionPooling(return_complement=True)`). The
    same classifier, with its kernel and bias held fixed
    (`stop_gradient`), should find no label there; while training the layer
    adds

    `complement_weight * mean_over_batch(KL(u || softmax(W' c' + b')))`

    where `u` is the uniform distribution over the classes and `W'`, `b'`
    are `W`, `b` behind `stop_gradient`. The loss reaches the complement
    context, and through it the gates (`GatedAttentionPooling` holds the
    states and scores it pools behind `stop_gradient`), but never the
    classifier: it cannot learn to hide the label from itself. A token that carries the label raises the loss
    while its gate is closed, so the loss opens every such token; a
    sparsity penalty on the gates closes the rest. This is the complement
    control of rationale extraction, with the task's own classifier as the
    complement predictor.

    With `complement_weight=0` the layer is a softmax `Dense` layer.

    Args:
        units: int >= 2, the number of classes.
        complement_weight: float >= 0, the weight mu of the complement
            loss. Defaults to `0.0`.
        **kwargs: the other arguments of `keras.layers.Dense` (such as
            `name` and `dtype`); the activation is always `"softmax"`.

    Call arguments:
        inputs: float tensor `(batch, features)`, the context `c`.
        complement: optional float tensor `(batch, features)`, the context
            `c'` of the closed gates; the loss is added only while
            training and with a positive `complement_weight`.
        training: bool, whether the layer runs in training mode.

    Returns:
        The class probabilities `(batch, units)` of `inputs`.

    Example:

    >>> layer = ComplementClassifier(3, complement_weight=0.5)
    >>> context = np.random.rand(2, 8).astype("float32")
    >>> complement = np.random.rand(2, 8).astype("float32")
    >>> tuple(layer(context, complement=complement, training=True).shape)
    (2, 3)
    >>> len(layer.losses)
    1

    References:
        - [Yu et al., 2019](https://aclanthology.org/D19-1420/), Rethinking
          Cooperative Rationalization: Introspective Extraction and
          Complement Control.
    """

    def __init__(self, units, complement_weight=0.0, **kwargs):
        kwargs.pop("activation", None)
        if not isinstance(units, int) or isinstance(units, bool) or units < 2:
            raise ValueError(f"`units` must be an integer >= 2. Received: units={units}")
        if not is_real(complement_weight) or complement_weight < 0:
            raise ValueError(
                f"`complement_weight` must be a finite number >= 0. Received: complement_weight={complement_weight}"
            )
        super().__init__(units, activation="softmax", **kwargs)
        self.complement_weight = float(complement_weight)

    def build(self, inputs_shape, complement_shape=None):
        super().build(inputs_shape)

    def call(self, inputs, complement=None, training=None):
        if complement is not None and training and self.complement_weight > 0:
            divergence = self.complement_divergence(complement)
            self.add_loss(self.complement_weight * ops.mean(divergence))
        return super().call(inputs)

    def complement_divergence(self, complement):
        """`KL(u || softmax(W' c' + b'))` per example `(batch,)`, with the
        kernel and bias behind `stop_gradient`."""
        kernel = ops.stop_gradient(ops.cast(self.kernel, "float32"))
        logits = ops.matmul(ops.cast(complement, "float32"), kernel)
        if self.use_bias:
            logits = logits + ops.stop_gradient(ops.cast(self.bias, "float32"))
        log_probabilities = ops.log_softmax(logits, axis=-1)
        # KL(u || q) = sum_k u_k (log u_k - log q_k) with u_k = 1 / K.
        return -math.log(self.units) - ops.mean(log_probabilities, axis=-1)

    def compute_output_shape(self, inputs_shape, complement_shape=None):
        return super().compute_output_shape(inputs_shape)

    def get_config(self):
        config = super().get_config()
        config.pop("activation", None)
        config["complement_weight"] = self.complement_weight
        return config
