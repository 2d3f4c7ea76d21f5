import keras
from keras import ops

from ganet_tf.layers.gated_attention_pooling import additive_pooling_flops
from ganet_tf.layers.layer_mean import LayerMean
from ganet_tf.layers.layer_mean import load_variables
from ganet_tf.layers.layer_mean import save_variables
from ganet_tf.layers.sparse_normalizers import NORMALIZERS
from ganet_tf.layers.sparse_normalizers import sparse_normalizer


@keras.saving.register_keras_serializable(package="ganet_tf")
class SparseAttentionPooling(keras.layers.Layer):
    """Additive attention pooling with sparsemax or 1.5-entmax weights.

    Every state `h_t` gets the additive score `e_t = v^T tanh(W h_t + b)`
    of `GatedAttentionPooling`, and the pooled context is
    `c = sum_t alpha_t h_t` with `alpha = sparsemax(e)` (Martins &
    Astudillo, 2016) or `alpha = entmax15(e)` (Peters et al., 2019) over the
    real tokens instead of a softmax. Both give exact zeros: each text
    attends to a share of its tokens that the scores decide, with no
    auxiliary network and no gates. The weights are computed in float32 by
    the exact sort-based algorithms of `ganet_tf.layers.sparse_normalizers`.

    The layer tracks the metric `attended_density` (`val_attended_density`
    in validation): the share of real tokens that get a weight
    `alpha_t > 0`, averaged over the examples that have a real token, as
    `GatedAttentionPooling` does for GA-Net (a `LayerMean`, true on every
    backend).

    Masking: the layer consumes the mask of `inputs` (True at real tokens)
    and returns no mask. Padded positions get `alpha = 0` and do not enter
    the threshold; a text with one real token gives it weight 1; a row
    without any real token gets all-zero weights and a zero context.

    Args:
        units: int > 0, width of the hidden layer of the score network.
        normalizer: `"sparsemax"` or `"entmax15"`, the mapping from scores
            to weights. Defaults to `"sparsemax"`.
        return_attention_scores: bool, also return the weights `alpha`.
            Defaults to `True`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: float tensor `(batch, steps, features)`, the states `h_t`.
        mask: optional boolean tensor `(batch, steps)`, True at real tokens.

    Returns:
        The context `(batch, features)`, and with `return_attention_scores`
        also the weights `(batch, steps)` as a tuple `(context, weights)`.

    Example:

    >>> states = np.random.rand(2, 5, 8).astype("float32")
    >>> layer = SparseAttentionPooling(units=4, normalizer="entmax15")
    >>> context, weights = layer(states)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 8), (2, 5))

    References:
        - [Martins & Astudillo, 2016](https://arxiv.org/abs/1602.02068),
          From Softmax to Sparsemax: A Sparse Model of Attention and
          Multi-Label Classification.
        - [Peters, Niculae & Martins, 2019](https://arxiv.org/abs/1905.05702),
          Sparse Sequence-to-Sequence Models.
        - [Zhou et al., 2016](https://aclanthology.org/P16-2034/),
          Attention-Based Bidirectional LSTM Networks for Relation
          Classification.
    """

    def __init__(self, units=100, normalizer="sparsemax", return_attention_scores=True, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(units, int) or isinstance(units, bool) or units <= 0:
            raise ValueError(f"`units` must be a positive integer. Received: units={units}")
        if normalizer not in NORMALIZERS:
            raise ValueError(f"`normalizer` must be one of {NORMALIZERS}. Received: normalizer={normalizer}")
        self.units = units
        self.normalizer = normalizer
        self.return_attention_scores = bool(return_attention_scores)
        self.supports_masking = True
        self._normalize = sparse_normalizer(normalizer)
        self.hidden = keras.layers.Dense(units, activation="tanh", dtype=self.dtype_policy, name="score_hidden")
        self.score = keras.layers.Dense(1, use_bias=False, dtype=self.dtype_policy, name="score")

    def build(self, inputs_shape):
        if len(inputs_shape) != 3:
            raise ValueError(
                f"`inputs` must have shape (batch, steps, features). Received: inputs.shape={inputs_shape}"
            )
        self.hidden.build(inputs_shape)
        self.score.build(tuple(inputs_shape[:-1]) + (self.units,))
        self.attended_density = LayerMean(self, name="attended_density")
        self.built = True

    def call(self, inputs, mask=None):
        if mask is None:
            real = ops.ones(ops.shape(inputs)[:2], dtype="bool")
        else:
            real = ops.cast(mask, "bool")
        scores = ops.cast(ops.squeeze(self.score(self.hidden(inputs)), axis=-1), "float32")
        weights = self._normalize(scores, real, axis=-1)
        self._update_attended_density(weights, real)
        weights = ops.cast(weights, self.compute_dtype)
        context = ops.einsum("bt,btf->bf", weights, inputs)
        if self.return_attention_scores:
            return context, weights
        return context

    def _update_attended_density(self, weights, real):
        real = ops.cast(real, "float32")
        lengths = ops.sum(real, axis=1)
        attended = ops.sum(ops.cast(weights > 0.0, "float32") * real, axis=1)
        density = attended / ops.maximum(lengths, 1.0)
        self.attended_density.update_state(density, sample_weight=ops.cast(lengths > 0.0, "float32"))

    def save_own_variables(self, store):
        save_variables(self, store)

    def load_own_variables(self, store):
        load_variables(self, store)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, inputs_shape):
        context_shape = (inputs_shape[0], inputs_shape[2])
        if self.return_attention_scores:
            return context_shape, (inputs_shape[0], inputs_shape[1])
        return context_shape

    def flops_per_token(self):
        """Floating point operations of attention for one real token.

        Counted as `GatedAttentionPooling.flops_per_token()` counts soft
        attention, since every real token is scored: the score network
        (`2 * features * units + 4 * units`), the normalisation (3, as the
        softmax's: the threshold's running sum, the subtraction and the
        clipping) and the weighted sum (`2 * features`). The comparisons of
        the sort (`O(log T)` per token) are not counted. Needs a built
        layer.
        """
        return additive_pooling_flops(*self.hidden.kernel.shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "normalizer": self.normalizer,
                "return_attention_scores": self.return_attention_scores,
            }
        )
        return config
