import keras
from keras import ops

from ganet_tf.keras_compat import attention_dropout
from ganet_tf.keras_compat import get_mask
from ganet_tf.layers.argument_checks import is_real
from ganet_tf.layers.gated_multi_head_attention import GATE_FLOOR
from ganet_tf.layers.gated_multi_head_attention import GatedMultiHeadAttention
from ganet_tf.layers.initializers import clone_initializer
from ganet_tf.layers.sparse_gather import ATTENTION_SLOTS
from ganet_tf.layers.sparse_gather import DEFAULT_SPARSE_BUCKETS
from ganet_tf.layers.sparse_gather import branch_dropout_seed
from ganet_tf.layers.sparse_gather import gather_mask
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


@keras.saving.register_keras_serializable(package="ganet_tf")
class GatedTransformerEncoder(keras.layers.Layer):
    """A Transformer encoder block whose self-attention is gated by GA-Net.

    The block of keras-hub's `TransformerEncoder` (self-attention, residual,
    layer norm, a two-layer feedforward network, residual, layer norm; or
    pre-norm with `normalize_first=True`) with `GatedMultiHeadAttention`:
    the `gates` `(batch, steps)` decide which tokens are attended as keys
    and values (a log-gate bias while training, a binary key mask at
    inference).

    Token dropping: with `token_dropping=True` and binary gates at inference
    the block runs only on the open tokens: they are gathered with
    `keras.ops.top_k`/`take_along_axis` into a compacted sequence of `k`
    slots (`k`, the largest number of open tokens in the batch, rounded up
    to the next of `sparse_buckets`, one `keras.ops.switch` branch per
    size), the whole block (attention among the open tokens, feedforward
    network) runs on it, and the results are gathered back to their
    positions. The output keeps the shape of `inputs` (so blocks stack and
    a gated pooling can follow); a closed token leaves the block unchanged.
    The open tokens' outputs equal those of the dense gated block. When the
    same gates drive every later block and a gated pooling, the closed
    tokens' values are never read again, so dropping them changes nothing
    downstream: the work per block scales with the open tokens.

    Sparse training: with `sparse_training=True` the block drops tokens
    while training too, forward and backward. Each row keeps the
    `max(1, round(training_density * T))` of its `T` real tokens with the
    highest gates (the `top_k` rule of `GateSampler`, here on the relaxed
    gates), gathered as above; the kept tokens' gates enter the attention
    as straight-through ones, whose forward value is 1 (the binary gates of
    inference) and whose gradient is that of the dense path's log-gate
    bias, so the gate network still gets gradients. The other tokens pass
    through unchanged. See `GatedMultiHeadAttention`.

    Args:
        intermediate_dim: int > 0, width of the feedforward network.
        num_heads: int > 0, attention heads; must divide the input width.
        dropout: float in [0, 1), dropout of attention weights and of both
            residual branches. Defaults to 0.
        activation: activation of the feedforward network. Defaults to
            `"relu"`.
        layer_norm_epsilon: float, epsilon of the layer norms. Defaults to
            1e-5.
        kernel_initializer, bias_initializer: initializers of the dense and
            attention kernels and biases. Default `"glorot_uniform"` and
            `"zeros"`.
        normalize_first: bool, pre-norm (layer norm before attention and
            feedforward). Defaults to `False`.
        sparse_inference: bool, the attention gathers closed keys and values
            away at inference (see `GatedMultiHeadAttention`). Defaults to
            `False`.
        token_dropping: bool, run the block only on the open tokens at
            inference. Defaults to `False`.
        sparse_buckets: the bucket fractions of the sparse paths, or `None`
            for exact (dynamic) sizes; see `GatedMultiHeadAttention`.
        sparse_bucket_multiple: int, round the bucket sizes up to a
            multiple of it; 64 for the fused GPU attention kernels (see
            `GatedMultiHeadAttention`). Defaults to `1`.
        sparse_training: bool, run the block only on the `top_k` tokens
            while training. Defaults to `False`.
        training_density: None or float in (0, 1], the share rho of real
            tokens that sparse training keeps; required by
            `sparse_training=True`. Defaults to `None`.
        sliding_window: None or int > 0, local attention: each query
            attends the keys less than `sliding_window` positions away
            (Keras' `MultiHeadAttention(sliding_window=...)`, a mask on the
            dense score matrix, so it saves no work). Not with
            `token_dropping` or `sparse_training`. Defaults to `None`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: float tensor `(batch, steps, hidden_dim)`.
        padding_mask: optional boolean tensor `(batch, steps)`, True at real
            tokens; defaults to the Keras mask of `inputs`.
        attention_mask: optional boolean tensor `(batch, steps, steps)`.
        gates: optional float tensor `(batch, steps)` of gates in [0, 1].
        training: Python bool.

    Returns:
        Float tensor `(batch, steps, hidden_dim)`.

    Example:

    >>> x = np.random.rand(2, 6, 16).astype("float32")
    >>> gates = np.array([[1, 0, 1, 0, 0, 1]] * 2, "float32")
    >>> block = GatedTransformerEncoder(intermediate_dim=32, num_heads=2,
    ...                                 token_dropping=True)
    >>> tuple(block(x, gates=gates).shape)
    (2, 6, 16)

    References:
        - [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762),
          Attention Is All You Need.
        - [Xue et al., 2020](https://arxiv.org/abs/1912.00349), Not All
          Attention Is Needed: Gated Attention Network for Sequence Data.
        - [Goyal et al., 2020](https://arxiv.org/abs/2001.08950),
          PoWER-BERT: Accelerating BERT Inference via Progressive
          Word-vector Elimination.
    """

    def __init__(
        self,
        intermediate_dim,
        num_heads,
        dropout=0.0,
        activation="relu",
        layer_norm_epsilon=1e-5,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        normalize_first=False,
        sparse_inference=False,
        token_dropping=False,
        sparse_buckets=DEFAULT_SPARSE_BUCKETS,
        sparse_training=False,
        training_density=None,
        sparse_bucket_multiple=1,
        sliding_window=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, value in (("intermediate_dim", intermediate_dim), ("num_heads", num_heads)):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"`{name}` must be a positive integer. Received: {name}={value}")
        if sliding_window is not None and (not isinstance(sliding_window, int) or sliding_window <= 0):
            raise ValueError(
                f"`sliding_window` must be None or a positive integer. Received: sliding_window={sliding_window}"
            )
        if sliding_window is not None and (token_dropping or sparse_training):
            raise ValueError(
                "`sliding_window` masks a dense score matrix by position; the blocks that drop tokens "
                "(`token_dropping`, `sparse_training`) attend within compacted sequences. Received: "
                f"sliding_window={sliding_window}, token_dropping={token_dropping}, sparse_training={sparse_training}"
            )
        self.sliding_window = sliding_window
        if not is_real(dropout) or not 0 <= dropout < 1:
            raise ValueError(f"`dropout` must be a number in [0, 1). Received: dropout={dropout}")
        self.intermediate_dim = intermediate_dim
        self.num_heads = num_heads
        self.dropout = float(dropout)
        self.activation = keras.activations.get(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.normalize_first = bool(normalize_first)
        self.token_dropping = bool(token_dropping)
        set_sparse_options(
            self,
            sparse_inference,
            sparse_buckets,
            sparse_training,
            training_density,
            sparse_bucket_multiple,
            token_dropping=self.token_dropping,
        )
        self.supports_masking = True

    def build(self, inputs_shape):
        hidden_dim = inputs_shape[-1]
        if hidden_dim is None or hidden_dim % self.num_heads:
            raise ValueError(
                "The input width must be a multiple of `num_heads`. "
                f"Received: inputs_shape={inputs_shape}, num_heads={self.num_heads}"
            )
        common = {"dtype": self.dtype_policy}
        self._self_attention_layer = GatedMultiHeadAttention(
            num_heads=self.num_heads,
            key_dim=hidden_dim // self.num_heads,
            dropout=self.dropout,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            sparse_inference=self.sparse_inference,
            sparse_buckets=self.sparse_buckets,
            sparse_bucket_multiple=self.sparse_bucket_multiple,
            sliding_window=self.sliding_window,
            name="self_attention_layer",
            **common,
        )
        self._self_attention_layer.build(inputs_shape, inputs_shape)
        self._self_attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, name="self_attention_layer_norm", **common
        )
        self._self_attention_layer_norm.build(inputs_shape)
        self._self_attention_dropout = keras.layers.Dropout(self.dropout, **common)
        self._feedforward_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, name="feedforward_layer_norm", **common
        )
        self._feedforward_layer_norm.build(inputs_shape)
        self._feedforward_intermediate_dense = keras.layers.Dense(
            self.intermediate_dim,
            activation=self.activation,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            name="feedforward_intermediate_dense",
            **common,
        )
        self._feedforward_intermediate_dense.build(inputs_shape)
        self._feedforward_output_dense = keras.layers.Dense(
            hidden_dim,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            name="feedforward_output_dense",
            **common,
        )
        self._feedforward_output_dense.build(tuple(inputs_shape[:-1]) + (self.intermediate_dim,))
        self._feedforward_dropout = keras.layers.Dropout(self.dropout, **common)
        self.built = True

    def _dropout_seeds(self, training):
        """The seeds of the block's three dropouts (attention weights,
        attention output, feedforward output) where `branch_dropout_seed`
        draws them (JAX, training), else None."""
        layers = (
            attention_dropout(self._self_attention_layer),
            self._self_attention_dropout,
            self._feedforward_dropout,
        )
        seeds = tuple(branch_dropout_seed(layer, self.dropout, training) for layer in layers)
        return None if seeds[0] is None else seeds

    def _dropout(self, layer, x, training, seed):
        if seed is None:
            return layer(x, training=training)
        return keras.random.dropout(x, self.dropout, seed=seed)

    def _block(self, x, key_mask, attention_mask, gates, training, seeds=None):
        seeds = seeds or (None, None, None)
        residual = x
        if self.normalize_first:
            x = self._self_attention_layer_norm(x)
        x = self._self_attention_layer(
            x,
            x,
            value_mask=key_mask,
            attention_mask=attention_mask,
            gates=gates,
            training=training,
            dropout_seed=seeds[0],
        )
        x = self._dropout(self._self_attention_dropout, x, training, seeds[1]) + residual
        if not self.normalize_first:
            x = self._self_attention_layer_norm(x)
        residual = x
        if self.normalize_first:
            x = self._feedforward_layer_norm(x)
        x = self._feedforward_output_dense(self._feedforward_intermediate_dense(x))
        x = self._dropout(self._feedforward_dropout, x, training, seeds[2]) + residual
        if not self.normalize_first:
            x = self._feedforward_layer_norm(x)
        return x

    def call(self, inputs, padding_mask=None, attention_mask=None, gates=None, training=None):
        if padding_mask is None:
            padding_mask = get_mask(inputs)
        if padding_mask is not None:
            padding_mask = ops.cast(padding_mask, "bool")
        if attention_mask is not None:
            attention_mask = ops.cast(attention_mask, "bool")
        if gates is None or not (self.sparse_training if training else self.token_dropping):
            return self._block(inputs, padding_mask, attention_mask, gates, training)
        if training:
            # The top_k rule of inference keeps round(rho T) tokens; their
            # gates enter as straight-through ones (forward: the binary gates
            # of inference; backward: the dense path's log-gate gradient).
            open_ = keep_top_k(gates, padding_mask, self.training_density)
            kept = straight_through_ones(gates, GATE_FLOOR)
            buckets = training_buckets(self.sparse_buckets, static_steps(inputs), self.training_density)
            return self._dropped_tokens_block(inputs, open_, attention_mask, buckets, kept, True)
        open_ = ops.greater(ops.cast(gates, "float32"), 0.5)
        if padding_mask is not None:
            open_ = ops.logical_and(open_, padding_mask)
        return self._dropped_tokens_block(inputs, open_, attention_mask, self.sparse_buckets)

    def _dropped_tokens_block(self, inputs, open_, attention_mask, buckets, kept=None, training=False):
        """The block on the `open_` tokens only, gathered into `k` slots
        (`kept`: gates of the gathered tokens, or None); the others pass."""
        open_float, needed, slot = open_slots(open_)
        seeds = self._dropout_seeds(training)

        def branch(k):
            # The open tokens first, in order, then closed ones (masked
            # slots).
            slot_open, positions = gather_open(open_float, k)
            compact = gather_rows(inputs, positions)
            compact_mask = None if attention_mask is None else gather_mask(attention_mask, positions, positions)
            compact_gates = None if kept is None else gather_rows(kept, positions)
            outputs = self._block(compact, slot_open, compact_mask, compact_gates, training, seeds)
            # Back to the full length; closed tokens pass through.
            return scatter_back(outputs, slot, open_, k, inputs)

        return run_bucketed(branch, needed, static_steps(inputs), buckets, self.sparse_bucket_multiple, ATTENTION_SLOTS)

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "intermediate_dim": self.intermediate_dim,
                "num_heads": self.num_heads,
                "dropout": self.dropout,
                "activation": keras.activations.serialize(self.activation),
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "normalize_first": self.normalize_first,
                "sparse_inference": self.sparse_inference,
                "token_dropping": self.token_dropping,
                "sparse_buckets": self.sparse_buckets,
                "sparse_bucket_multiple": self.sparse_bucket_multiple,
                "sparse_training": self.sparse_training,
                "training_density": self.training_density,
                "sliding_window": self.sliding_window,
            }
        )
        return config
