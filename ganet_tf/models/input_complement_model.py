import keras
from keras import ops

from ganet_tf.layers.argument_checks import is_real
from ganet_tf.layers.bidirectional import bidirectional
from ganet_tf.layers.gate_sparsity import add_multiplier

# The layers of a GA-Net graph that the complement reads, by name.
EMBEDDING_LAYERS = ("embedding_dropout", "embedding")
GATES_LAYER = "gate_sparsity"
ENCODER_PREFIX = "bilstm_"
ATTENTION_LAYER = "attention"
CLASSIFIER_LAYER = "probabilities"
# What a label-free complement should predict.
REFERENCES = ("uniform", "empty")
# Who reads the complement: the model's own layers held fixed, or a
# predictor of its own that learns to find the label there.
READERS = ("model", "predictor")
# The dual ascent on the complement weight under `complement_target`: step
# per batch on the gap in nats, the quadratic term's weight and the bound.
COMPLEMENT_RATE = 0.05
COMPLEMENT_DAMPING = 1.0
MAX_COMPLEMENT_WEIGHT = 10.0


def _held_fixed_call(layer, *args, **kwargs):
    """`layer(*args, **kwargs)` with its trainable weights behind
    `stop_gradient`: the result's gradient reaches the inputs, never the
    weights."""
    trainable = [ops.stop_gradient(variable.value) for variable in layer.trainable_variables]
    non_trainable = [variable.value for variable in layer.non_trainable_variables]
    outputs, _ = layer.stateless_call(trainable, non_trainable, *args, **kwargs)
    return outputs


def _check_arguments(complement_weight, reference, reader, complement_target):
    """`InputComplementModel`'s arguments: a `ValueError` naming the first bad one."""
    if not is_real(complement_weight) or complement_weight <= 0:
        raise ValueError(
            f"`complement_weight` must be a finite number > 0. Received: complement_weight={complement_weight}"
        )
    if complement_target is not None and (not is_real(complement_target) or complement_target <= 0):
        raise ValueError(
            "`complement_target` must be None or a finite number > 0 (nats). "
            f"Received: complement_target={complement_target}"
        )
    if reference not in REFERENCES:
        raise ValueError(f"`reference` must be one of {REFERENCES}. Received: reference={reference}")
    if reader not in READERS:
        raise ValueError(f"`reader` must be one of {READERS}. Received: reader={reader}")
    if reader == "predictor" and reference != "uniform":
        raise ValueError(
            "`reader='predictor'` takes `reference='uniform'` only (the predictor learns what no label "
            f"looks like). Received: reference={reference}"
        )


@keras.saving.register_keras_serializable(package="ganet_tf")
class InputComplementModel(keras.Model):
    """A GA-Net functional model that re-encodes the closed tokens while training.

    The model is the functional graph it is built from (inputs, outputs,
    layers and weights); only training adds a loss. With the embeddings
    `x_t` that the encoder reads and the training gates `g_t` of the same
    forward pass, the complement text `x'_t = x_t * (1 - g_t)` (the open
    tokens emptied, the mask of real tokens unchanged) runs through the
    SAME encoder (the layers `bilstm_1`, `bilstm_2`, ...), attention
    (`attention`, without gates: every real token) and classifier
    (`probabilities`), each called with its trainable weights behind
    `stop_gradient` (`Layer.stateless_call`), and the model adds

    `complement_weight * mean_over_texts(KL(u || p(y | x')))`

    where `u` is the `reference` for "no label": the uniform distribution
    over the classes, or with `reference="empty"` the prediction of the
    same layers on the emptied text `0 * x` (same mask), a third pass held
    fixed. The embeddings
    enter behind `stop_gradient` too, so the loss's gradient reaches only the
    gates `g_t`, and through them the auxiliary network: a keyword left
    closed keeps the label in the complement and raises the loss, so the
    loss opens every token that carries the label, while the sparsity term
    of the gates closes the rest. Neither the encoder nor the classifier can
    lower the loss by learning to hide the label from the complement.

    With `reader="predictor"` the complement is read instead by a
    complement predictor of its own (a BiLSTM of the first encoder layer's
    size, a masked mean over the real tokens and a softmax layer), trained
    alongside: its loss, the cross-entropy of its prediction on `x'`
    (behind `stop_gradient`) against the model's own prediction on `x`
    (also behind `stop_gradient`), reaches only its weights, while the
    complement loss above reads it held fixed, so that it reaches only the
    gates (the complement control of Yu et al., 2019, against the model's
    decision rather than the label). The model's own classifier has never
    seen a text with its keywords removed and may read filler alone as a
    confident class; the predictor learns what the complement actually
    tells. Its loss is added to the training losses (unweighted), so the
    reported training loss includes it.

    With `complement_target=epsilon` the weight is no longer fixed: it is
    the Lagrange multiplier `mu` of the constraint "the complement tells at
    most epsilon nats", `mean KL <= epsilon`, started at
    `complement_weight`, stepped after each batch by the damped, bounded
    dual ascent of `GateSparsity` (`mu <- clip(mu + rate * gap, 0, bound)`,
    one-sided: `mu >= 0`) and saved with the model (the non-trainable
    weight `complement_multiplier`). With the gates' fixed L1 penalty
    (`target_density=None`) it aims at the fewest open gates that leave
    the complement label-free, each text's own complement saying how many
    of its tokens must open, where a density target fixes one mean for
    all. The bound must lie above what a filler-only complement reads, or
    the multiplier grows and opens every gate (`docs/gates.md`).

    Outside training (`training` falsy) the model is its functional graph:
    inference, export and the outputs of the layers are those of the same
    graph in a plain `keras.Model`. Training costs a second pass of the
    encoder.

    `ganet_tf.models.build_ganet(..., complement="inputs",
    complement_weight=mu)` builds it; the graph must have the layers named
    above, the gates as the output of `gate_sparsity` and the embeddings as
    the output of `embedding_dropout` (or `embedding` without dropout).

    Args:
        inputs: the functional inputs (the token ids).
        outputs: the functional outputs (the class probabilities).
        complement_weight: float > 0, the weight mu of the loss. Defaults
            to `1.0`.
        reference: `"uniform"` or `"empty"`, the distribution `u` that a
            label-free complement should give. Defaults to `"uniform"`.
        reader: `"model"` (the model's layers held fixed) or `"predictor"`
            (a complement predictor trained alongside), what reads the
            complement. `"predictor"` takes the `"uniform"` reference only.
            Defaults to `"model"`.
        complement_target: None or float > 0, the bound epsilon in nats
            on the mean complement divergence; `complement_weight` is then
            the multiplier's start. Defaults to `None` (fixed weight).
        **kwargs: the other arguments of a functional `keras.Model`, such
            as `name`.

    Call arguments:
        inputs: int tensor `(batch, steps)` of token ids, 0 = padding.
        training: bool, whether the model runs in training mode (the loss
            is added only then).
        mask: unused, as in a functional model.

    Returns:
        The class probabilities `(batch, num_classes)`.

    Example:

    >>> from ganet_tf.models import build_ganet
    >>> model = build_ganet(3, vocabulary_size=50, complement="inputs", complement_weight=1.0)
    >>> probabilities = model(np.array([[5, 7, 9, 0]]), training=True)
    >>> len(model.losses)  # the gate sparsity and the complement
    2

    References:
        - [Yu et al., 2019](https://aclanthology.org/D19-1420/), Rethinking
          Cooperative Rationalization: Introspective Extraction and
          Complement Control.
        - [Xue et al., 2020](https://arxiv.org/abs/1912.00349), Not All
          Attention Is Needed: Gated Attention Network for Sequence Data.
    """

    def __init__(
        self, *args, complement_weight=1.0, reference="uniform", reader="model", complement_target=None, **kwargs
    ):
        _check_arguments(complement_weight, reference, reader, complement_target)
        super().__init__(*args, **kwargs)
        self.complement_weight = float(complement_weight)
        self.reference = reference
        self.reader = reader
        self.complement_target = None if complement_target is None else float(complement_target)
        if self.complement_target is not None:
            self.complement_multiplier = add_multiplier(
                self, self.complement_weight, MAX_COMPLEMENT_WEIGHT, "complement_multiplier"
            )
        names = {layer.name: layer for layer in self.layers}
        embedding = next((names[name] for name in EMBEDDING_LAYERS if name in names), None)
        encoder = sorted(
            (layer for name, layer in names.items() if name.startswith(ENCODER_PREFIX)),
            key=lambda layer: int(layer.name[len(ENCODER_PREFIX) :]),
        )
        if (
            embedding is None
            or not encoder
            or any(n not in names for n in (GATES_LAYER, ATTENTION_LAYER, CLASSIFIER_LAYER))
        ):
            raise ValueError(
                "`InputComplementModel` needs a GA-Net graph with layers named embedding, gate_sparsity, "
                f"bilstm_1, attention and probabilities. Received: layers={sorted(names)}"
            )
        self.encoder_layers = encoder
        # The graph with its embeddings and gates as outputs too: one forward
        # pass gives the prediction and what the complement needs. Kept in a
        # closure, so that it is neither tracked nor saved (its layers are
        # the model's own).
        graph = keras.Model(self.input, [self.outputs[0], embedding.output, names[GATES_LAYER].output])
        self._graph_with_gates = lambda inputs, training: graph(inputs, training=training)
        if reader == "predictor":
            self._build_predictor(encoder[0].forward_layer.units, embedding.output.shape[-1], self.outputs[0].shape[-1])

    def _build_predictor(self, units, features, classes):
        self.predictor_encoder = bidirectional(
            keras.layers.LSTM(units, return_sequences=True), name="complement_predictor_bilstm"
        )
        self.predictor_encoder.build((None, None, features))
        self.predictor_head = keras.layers.Dense(
            classes, activation="softmax", dtype="float32", name="complement_predictor_probabilities"
        )
        self.predictor_head.build((None, 2 * units))

    def call(self, inputs, training=None, mask=None):
        if not training:
            return super().call(inputs, training=training, mask=mask)
        probabilities, embedded, gates = self._graph_with_gates(inputs, training=True)
        real = ops.not_equal(inputs, 0)
        has_tokens = ops.cast(ops.any(real, axis=1), "float32")
        tokens = ops.maximum(ops.sum(has_tokens), 1.0)
        divergence = self.complement_divergence(embedded, gates, real)
        mean_divergence = ops.sum(divergence * has_tokens) / tokens
        loss = self._weight(mean_divergence) * mean_divergence
        if self.reader == "predictor":
            fit = self.predictor_loss(embedded, gates, real, probabilities)
            loss = loss + ops.sum(fit * has_tokens) / tokens
        # `Functional.add_loss` only takes symbolic losses; the base layer's
        # adds this one to `model.losses` as a layer's `add_loss` does.
        keras.layers.Layer.add_loss(self, loss)
        return probabilities

    def _weight(self, mean_divergence):
        """The fixed weight, or under `complement_target` the multiplier
        (plus the damping term) and its dual ascent step."""
        if self.complement_target is None:
            return self.complement_weight
        gap = ops.stop_gradient(mean_divergence - self.complement_target)
        multiplier = self.complement_multiplier
        weight = ops.stop_gradient(multiplier) + COMPLEMENT_DAMPING * ops.maximum(gap, 0.0)
        multiplier.assign(ops.clip(multiplier + COMPLEMENT_RATE * gap, 0.0, MAX_COMPLEMENT_WEIGHT))
        return weight

    def _complement(self, embedded, gates):
        """The complement text `x * (1 - g)`, its gradient to `gates` only."""
        closed = 1.0 - ops.cast(gates, embedded.dtype)
        return ops.stop_gradient(embedded) * ops.expand_dims(closed, -1)

    def predictor_loss(self, embedded, gates, real, probabilities):
        """The complement predictor's cross-entropy per text `(batch,)`
        against the model's prediction; its gradient reaches the
        predictor's weights only."""
        complement = ops.stop_gradient(self._complement(embedded, gates))
        log_probabilities = self._predictor_log_probabilities(complement, real, held_fixed=False)
        target = ops.stop_gradient(ops.cast(probabilities, "float32"))
        return -ops.sum(target * log_probabilities, axis=-1)

    def _predictor_log_probabilities(self, inputs, real, held_fixed):
        call = _held_fixed_call if held_fixed else (lambda layer, *a, **k: layer(*a, **k))
        states = call(self.predictor_encoder, inputs, mask=real, training=True)
        weights = ops.expand_dims(ops.cast(real, states.dtype), -1)
        pooled = ops.sum(states * weights, axis=1) / ops.maximum(ops.sum(weights, axis=1), 1.0)
        probabilities = call(self.predictor_head, pooled, training=True)
        return ops.log(ops.clip(ops.cast(probabilities, "float32"), 1e-7, 1.0))

    def complement_divergence(self, embedded, gates, real):
        """`KL(u || p(y | x'))` per text `(batch,)` of the complement text
        `x' = x * (1 - g)`, through the encoder, attention and classifier
        (or with `reader="predictor"` the complement predictor) held fixed,
        `u` the `reference`; the gradient reaches `gates` only."""
        complement = self._complement(embedded, gates)
        if self.reader == "predictor":
            log_probabilities = self._predictor_log_probabilities(complement, real, held_fixed=True)
        else:
            log_probabilities = self._held_fixed_log_probabilities(complement, real)
        if self.reference == "empty":
            reference = ops.stop_gradient(self._held_fixed_log_probabilities(ops.stop_gradient(embedded) * 0.0, real))
            return ops.sum(ops.exp(reference) * (reference - log_probabilities), axis=-1)
        classes = ops.shape(log_probabilities)[-1]
        # KL(u || q) = sum_k u_k (log u_k - log q_k) with u_k = 1 / K.
        return -ops.log(ops.cast(classes, "float32")) - ops.mean(log_probabilities, axis=-1)

    def _held_fixed_log_probabilities(self, inputs, real):
        """float32 log class probabilities `(batch, classes)` of embeddings
        `inputs` through the encoder, attention and classifier held fixed."""
        states = inputs
        for layer in self.encoder_layers:
            states = _held_fixed_call(layer, states, mask=real, training=True)
        context = _held_fixed_call(self.get_layer(ATTENTION_LAYER), states, mask=real, training=True)
        if isinstance(context, (tuple, list)):
            context = context[0]
        probabilities = _held_fixed_call(self.get_layer(CLASSIFIER_LAYER), context, training=True)
        return ops.log(ops.clip(ops.cast(probabilities, "float32"), 1e-7, 1.0))

    def get_config(self):
        config = super().get_config()
        config["complement_weight"] = self.complement_weight
        config["reference"] = self.reference
        config["reader"] = self.reader
        config["complement_target"] = self.complement_target
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        complement_weight = config.pop("complement_weight", 1.0)
        reference = config.pop("reference", "uniform")
        reader = config.pop("reader", "model")
        complement_target = config.pop("complement_target", None)
        graph = keras.Model.from_config(config, custom_objects=custom_objects)
        return cls(
            graph.input,
            graph.output,
            complement_weight=complement_weight,
            reference=reference,
            reader=reader,
            complement_target=complement_target,
            name=graph.name,
        )
