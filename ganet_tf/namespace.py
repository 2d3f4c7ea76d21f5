"""The public names of `ganet_tf.layers` and `ganet_tf.models`, which the
top level gives too, written out where importing them needs no Keras: so
`ganet_tf` knows them, and can say why in one line, where Keras cannot
import (`tests/test_namespace.py` keeps them equal to what the two packages
define)."""

# Every public layer (and the layers' metric `LayerMean`) of `ganet_tf.layers`.
LAYER_NAMES = (
    "AuxiliaryNetwork",
    "BahdanauAttention",
    "ComplementClassifier",
    "GateSampler",
    "GateSparsity",
    "GatedAttentionPooling",
    "GatedMultiHeadAttention",
    "GatedSourceAttention",
    "GatedTransformerEncoder",
    "HierarchicalAttention",
    "LayerMean",
    "LinearAttention",
    "LocalAttentionPooling",
    "PositionEmbedding",
    "SparseAttentionPooling",
    "UninformedGates",
)
# Every model builder of `ganet_tf.models`.
BUILDER_NAMES = (
    "build_bilstm",
    "build_convolution",
    "build_entmax_attention",
    "build_explainer",
    "build_ganet",
    "build_ganet_transformer",
    "build_linear_transformer",
    "build_local_attention",
    "build_model",
    "build_soft_attention",
    "build_sparsemax_attention",
    "build_transformer",
)
# What else `ganet_tf.models` gives: what the builders share.
MODEL_HELPER_NAMES = ("InputComplementModel", "MODEL_BUILDERS", "gate_rule", "with_gate_inference")
