import keras
from keras import ops

from ganet_tf.layers.gated_multi_head_attention import GATE_FLOOR
from ganet_tf.layers.layer_mean import LayerMean
from ganet_tf.layers.layer_mean import load_variables
from ganet_tf.layers.layer_mean import save_variables
from ganet_tf.layers.masking import large_negative_number
from ganet_tf.layers.masking import masked_softmax
from ganet_tf.layers.sparse_gather import DEFAULT_SPARSE_BUCKETS
from ganet_tf.layers.sparse_gather import gather_open
from ganet_tf.layers.sparse_gather import gather_rows
from ganet_tf.layers.sparse_gather import keep_top_k
from ganet_tf.layers.sparse_gather import open_slots
from ganet_tf.layers.sparse_gather import run_bucketed
from ganet_tf.layers.sparse_gather import scatter_back
from ganet_tf.layers.sparse_gather import set_sparse_options
from ganet_tf.layers.sparse_gather import static_steps
from ganet_tf.layers.sparse_gather import straight_through_ones
from ganet_tf.layers.sparse_gather import training_buckets

FALLBACKS = ("all", "most_probable")


def additive_pooling_flops(features, units):
    """Floating point operations of additive attention pooling per weighed token.

    A multiply-add counts as two: the score network (`2 * features * units
    + 2 * units` for `W h + b` and the tanh, `2 * units` for `v^T`), the
    normalisation (3) and the weighted sum (`2 * features`).
    """
    return 2 * features * units + 4 * units + 3 + 2 * features


@keras.saving.register_keras_serializable(package="ganet_tf")
class GatedAttentionPooling(keras.layers.Layer):
    """Additive attention pooling over the open gates of GA-Net.

    Every state `h_t` gets an additive score
    `e_t = v^T tanh(W h_t + b)` (Zhou et al., 2016), and the pooled context
    is `c = sum_t alpha_t h_t` with

    `alpha_t = g_t exp(e_t) / sum_s g_s exp(e_s)`,

    computed stably as a softmax of `e_t + log g_t` over the positions whose
    gate is open (`g_t > 0`). Without `gates` every real token is open and
    the layer is the soft-attention baseline.

    The layer tracks the metric `attended_density`
    (`val_attended_density` in validation): the share of real tokens that
    get a weight `alpha_t > 0`, the fallback's tokens included, averaged over
    the examples that have a real token. Unlike the share of open gates, it
    counts a row whose gates are all closed as the tokens it attends to
    (all of them under `fallback="all"`). While training with relaxed
    gates nearly every gate is above 0, so it is near 1 there; it is the
    validation value that measures the selection. Without `gates` every
    real token is weighed, and it is 1. The metric is a
    `ganet_tf.layers.LayerMean`: it counts every batch of `fit`,
    `evaluate` and `predict` on every backend, compiled or not.

    Masking: the layer consumes the mask of `inputs` (True at real tokens)
    and returns no mask. Padded positions get `alpha = 0`. A row whose gates
    are all closed is pooled with the `fallback` weights: `"all"` attends
    (softly) to every real token, `"most_probable"` puts all weight on the
    real token with the highest gate score. A row without any real token
    gets all-zero weights and a zero context. Scores are combined in float32,
    so the weights are finite under mixed precision too.

    Sparse inference: with `sparse_inference=True` and `gates`, at inference
    (`training` falsy) the states the row attends (its open gates, or the
    fallback's tokens when they are all closed) are gathered to the front
    (`keras.ops.top_k` finds them, one row gather moves them), and the score
    network and the weighted sum run on those `k` states only. `k`, the
    largest number in the batch, is rounded up to the next of
    `sparse_buckets` (fractions of `steps`): one branch of a
    `keras.ops.switch` per size, so a graph is traced once. The context,
    the weights (scattered back to `(batch, steps)`, zeros elsewhere) and
    `attended_density` equal the dense path. Training runs dense, unless
    `sparse_training` is set.

    Sparse training: with `sparse_training=True` and `gates`, training
    pools only the `max(1, round(training_density * T))` real tokens of
    highest gate per row (the `top_k` rule of `GateSampler`, here on the
    relaxed gates), gathered as above; their gates enter as
    straight-through ones (forward 1, the binary gates of inference;
    backward the gradient of the log-gate bias `log g`), so the gate
    network still gets gradients. See `GatedMultiHeadAttention`.

    Complement: with `return_complement=True` and `gates`, the layer also
    returns the context of the tokens whose gates are closed,
    `c' = sum_t alpha'_t h_t` with `alpha'_t = (1 - g_t) exp(e_t) / sum_s
    (1 - g_s) exp(e_s)` over the real tokens, the same scores `e_t`; a row
    whose gates are all open (or without a real token) gets a zero `c'`.
    It is computed only while training, densely (the gates before any
    sparse training), and is zeros outside training: it feeds the
    complement loss of `ComplementClassifier`. Its gradient reaches the
    gates only: the states and scores enter it behind `stop_gradient`.

    Args:
        units: int > 0, width of the hidden layer of the score network.
        fallback: `"all"` or `"most_probable"`, the weights of a row whose
            gates are all closed. Defaults to `"all"`.
        return_attention_scores: bool, also return the weights `alpha`.
            Defaults to `True`.
        sparse_inference: bool, score only the attended states at
            inference. Defaults to `False`.
        sparse_buckets: sequence of fractions in (0, 1], the sizes `k` of
            the sparse path as shares of `steps` (1 is always added), or
            `None` for `k` exactly the number of attended states (dynamic
            shapes: no padding, but not XLA-compilable). Defaults to a
            ladder of ratio 2^(1/4) from 1/32 to 1.
        sparse_training: bool, pool only the `top_k` tokens while
            training. Defaults to `False`.
        training_density: None or float in (0, 1], the share rho of real
            tokens that sparse training keeps; required by
            `sparse_training=True`. Defaults to `None`.
        return_complement: bool, also return the complement context `c'`
            (last in the outputs). Defaults to `False`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: float tensor `(batch, steps, features)`, the states `h_t`.
        gates: optional float tensor `(batch, steps)` of gates in [0, 1].
        gate_scores: optional float tensor `(batch, steps)`, the gate logits
            or probabilities; needed by `fallback="most_probable"`.
        mask: optional boolean tensor `(batch, steps)`, True at real tokens.
        training: bool, whether the layer runs in training mode (the sparse
            path runs only outside training).

    Returns:
        The context `(batch, features)`, and with `return_attention_scores`
        also the weights `(batch, steps)` as a tuple `(context, weights)`;
        with `return_complement` the complement context `(batch, features)`
        follows, e.g. `(context, weights, complement)`.

    Example:

    >>> states = np.random.rand(2, 5, 8).astype("float32")
    >>> gates = np.array([[1, 0, 1, 0, 0], [0, 0, 0, 0, 0]], "float32")
    >>> context, weights = GatedAttentionPooling(units=4)(states, gates=gates)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 8), (2, 5))

    References:
        - [Xue et al., 2020](https://arxiv.org/abs/1912.00349), Not All
          Attention Is Needed: Gated Attention Network for Sequence Data.
        - [Zhou et al., 2016](https://aclanthology.org/P16-2034/),
          Attention-Based Bidirectional LSTM Networks for Relation
          Classification.
    """

    def __init__(
        self,
        units=100,
        fallback="all",
        return_attention_scores=True,
        sparse_inference=False,
        sparse_buckets=DEFAULT_SPARSE_BUCKETS,
        sparse_training=False,
        training_density=None,
        return_complement=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not isinstance(units, int) or units <= 0:
            raise ValueError(f"`units` must be a positive integer. Received: units={units}")
        if fallback not in FALLBACKS:
            raise ValueError(f"`fallback` must be one of {FALLBACKS}. Received: fallback={fallback}")
        self.units = units
        self.fallback = fallback
        self.return_attention_scores = bool(return_attention_scores)
        set_sparse_options(self, sparse_inference, sparse_buckets, sparse_training, training_density)
        self.return_complement = bool(return_complement)
        self.supports_masking = True
        self.hidden = keras.layers.Dense(
            units,
            activation="tanh",
            dtype=self.dtype_policy,
            name="score_hidden",
        )
        self.score = keras.layers.Dense(1, use_bias=False, dtype=self.dtype_policy, name="score")

    def build(self, inputs_shape, gates_shape=None, gate_scores_shape=None):
        if len(inputs_shape) != 3:
            raise ValueError(
                f"`inputs` must have shape (batch, steps, features). Received: inputs.shape={inputs_shape}"
            )
        self.hidden.build(inputs_shape)
        self.score.build(tuple(inputs_shape[:-1]) + (self.units,))
        # Made whether or not `gates_shape` is given: a layer built from the
        # shape of `inputs` alone (by an enclosing layer's `build`, or
        # `build_from_config`) may be called with gates, and Keras takes no
        # new state from a built layer.
        self.attended_density = LayerMean(self, name="attended_density")
        self.built = True

    def call(self, inputs, gates=None, gate_scores=None, mask=None, training=None):
        if mask is None:
            real = ops.ones(ops.shape(inputs)[:2], dtype="bool")
        else:
            real = ops.cast(mask, "bool")
        has_tokens = ops.any(real, axis=1, keepdims=True)
        negative = large_negative_number(self.compute_dtype)
        complement = None
        if self.return_complement:
            complement = self._complement(inputs, gates, real, training)
        if gates is not None and self.sparse_training and training:
            # The top_k tokens, their gates as straight-through ones.
            kept = keep_top_k(gates, real, self.training_density)
            gates = ops.where(kept, straight_through_ones(gates, GATE_FLOOR), 0.0)
            buckets = training_buckets(self.sparse_buckets, static_steps(inputs), self.training_density)
            context, weights = self._sparse_pool(inputs, gates, gate_scores, real, negative, buckets)
        elif gates is not None and self.sparse_inference and not training:
            context, weights = self._sparse_pool(inputs, gates, gate_scores, real, negative, self.sparse_buckets)
        else:
            context, weights = self._dense_pool(inputs, gates, gate_scores, real, has_tokens, negative)
        self._update_attended_density(weights, real, has_tokens)
        weights = ops.cast(weights, self.compute_dtype)
        outputs = (context, weights) if self.return_attention_scores else (context,)
        if complement is not None:
            outputs += (complement,)
        return outputs if len(outputs) > 1 else context

    def _complement(self, inputs, gates, real, training):
        """The context `(batch, features)` of the closed gates `1 - g`
        while training, else zeros."""
        if gates is None or not training:
            return ops.zeros_like(inputs[:, 0, :])
        # Only the gates get the complement's gradient: the states and the
        # scores are held fixed, so the encoder cannot hide the label from it.
        inputs = ops.stop_gradient(inputs)
        closed = 1.0 - ops.cast(gates, "float32")
        open_ = ops.logical_and(real, closed > 0.0)
        safe = ops.where(open_, closed, ops.ones_like(closed))
        weights = masked_softmax(ops.stop_gradient(self._scores(inputs)) + ops.log(safe), open_)
        return ops.einsum("bt,btf->bf", ops.cast(weights, self.compute_dtype), inputs)

    def _scores(self, states):
        """The float32 scores `e_t` `(batch, steps)` of `states`."""
        return ops.cast(ops.squeeze(self.score(self.hidden(states)), axis=-1), "float32")

    def _dense_pool(self, inputs, gates, gate_scores, real, has_tokens, negative):
        """`(context, float32 weights)`, every state scored."""
        steps = ops.shape(inputs)[1]
        scores = self._scores(inputs)
        if gates is None:
            open_ = real
            gated_scores = scores
        else:
            gates = ops.cast(gates, "float32")
            open_ = ops.logical_and(real, gates > 0.0)
            # log g_t is only taken where the gate is open.
            safe_gates = ops.where(open_, gates, ops.ones_like(gates))
            gated_scores = scores + ops.log(safe_gates)

        any_open = ops.any(open_, axis=1, keepdims=True)
        gated = masked_softmax(gated_scores, open_)
        if gates is None:
            weights = gated
        else:
            weights = ops.where(any_open, gated, self._fallback(scores, gate_scores, real, steps, negative))
        # Rows without any real token pool nothing.
        weights = ops.where(has_tokens, weights, 0.0)
        context = ops.einsum("bt,btf->bf", ops.cast(weights, self.compute_dtype), inputs)
        return context, weights

    def _sparse_pool(self, inputs, gates, gate_scores, real, negative, buckets):
        """`(context, float32 weights)` of `_dense_pool`, only the attended
        states scored: the open ones, or the fallback's in a row whose
        gates are all closed."""
        gates = ops.cast(gates, "float32")
        open_ = ops.logical_and(real, gates > 0.0)
        any_open = ops.any(open_, axis=1, keepdims=True)
        if self.fallback == "all":
            fallback = real
        else:
            fallback = ops.logical_and(real, self._most_probable(gate_scores, real, ops.shape(inputs)[1], negative) > 0)
        attended = ops.where(any_open, open_, fallback)
        # The log-gate bias of the open gates; the fallback's scores are raw.
        bias = ops.log(ops.where(ops.logical_and(attended, any_open), gates, ops.ones_like(gates)))
        attended_float, needed, slot = open_slots(attended)

        def branch(k):
            slot_open, positions = gather_open(attended_float, k)
            states = gather_rows(inputs, positions)
            scores = self._scores(states) + gather_rows(bias, positions)
            weights = masked_softmax(scores, slot_open)
            context = ops.einsum("bk,bkf->bf", ops.cast(weights, self.compute_dtype), states)
            return context, scatter_back(weights, slot, attended, k, 0.0)

        return run_bucketed(branch, needed, static_steps(inputs), buckets)

    def _update_attended_density(self, weights, real, has_tokens):
        real = ops.cast(real, "float32")
        attended = ops.sum(ops.cast(weights > 0.0, "float32") * real, axis=1)
        density = attended / ops.maximum(ops.sum(real, axis=1), 1.0)
        self.attended_density.update_state(density, sample_weight=ops.cast(has_tokens[:, 0], "float32"))

    def _fallback(self, scores, gate_scores, real, steps, negative):
        if self.fallback == "all":
            return masked_softmax(scores, real)
        return self._most_probable(gate_scores, real, steps, negative)

    def _most_probable(self, gate_scores, real, steps, negative):
        """One-hot float32 weights on the real token with the highest gate
        score."""
        if gate_scores is None:
            raise ValueError(
                "`fallback='most_probable'` needs the gate logits or "
                "probabilities: pass them as `gate_scores`. "
                "Received: gate_scores=None"
            )
        gate_scores = ops.where(real, ops.cast(gate_scores, "float32"), negative)
        best = ops.argmax(gate_scores, axis=-1)
        return ops.one_hot(best, steps, dtype="float32")

    def save_own_variables(self, store):
        save_variables(self, store)

    def load_own_variables(self, store):
        load_variables(self, store)

    def compute_mask(self, inputs, gates=None, gate_scores=None, mask=None):
        return None

    def compute_output_shape(self, inputs_shape, gates_shape=None, gate_scores_shape=None):
        context_shape = (inputs_shape[0], inputs_shape[2])
        shapes = (context_shape,)
        if self.return_attention_scores:
            shapes += ((inputs_shape[0], inputs_shape[1]),)
        if self.return_complement:
            shapes += (context_shape,)
        return shapes if len(shapes) > 1 else context_shape

    def flops_per_token(self):
        """Floating point operations of attention for one attended token.

        Counts a multiply-add as two operations: the score network
        (`2 * features * units + 2 * units` for `W h + b` and the tanh,
        `2 * units` for `v^T`), the exponential and normalisation (3) and
        the weighted sum (`2 * features`). Needs a built layer.
        """
        return additive_pooling_flops(*self.hidden.kernel.shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "fallback": self.fallback,
                "return_attention_scores": self.return_attention_scores,
                "sparse_inference": self.sparse_inference,
                "sparse_buckets": self.sparse_buckets,
                "sparse_training": self.sparse_training,
                "training_density": self.training_density,
                "return_complement": self.return_complement,
            }
        )
        return config
