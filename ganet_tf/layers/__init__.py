"""Every public layer of `ganet_tf`, on every Keras backend.

`ganet_tf` gives each of them at its top level too (`ganet_tf.GateSampler`
is `ganet_tf.layers.GateSampler`).
"""

from ganet_tf import backends
from ganet_tf.namespace import LAYER_NAMES

# Keras itself would fail on an unknown or uninstalled backend with a
# traceback from its import; this says which, and the fix, in one line.
backends.require_backend()

from ganet_tf.layers.auxiliary_network import AuxiliaryNetwork
from ganet_tf.layers.bahdanau_attention import BahdanauAttention
from ganet_tf.layers.complement_classifier import ComplementClassifier
from ganet_tf.layers.gate_sampler import GateSampler
from ganet_tf.layers.gate_sparsity import GateSparsity
from ganet_tf.layers.gated_attention_pooling import GatedAttentionPooling
from ganet_tf.layers.gated_multi_head_attention import GatedMultiHeadAttention
from ganet_tf.layers.gated_source_attention import GatedSourceAttention
from ganet_tf.layers.gated_transformer_encoder import GatedTransformerEncoder
from ganet_tf.layers.hierarchical_attention import HierarchicalAttention
from ganet_tf.layers.layer_mean import LayerMean
from ganet_tf.layers.linear_attention import LinearAttention
from ganet_tf.layers.local_attention_pooling import LocalAttentionPooling
from ganet_tf.layers.position_embedding import PositionEmbedding
from ganet_tf.layers.sparse_attention_pooling import SparseAttentionPooling
from ganet_tf.layers.uninformed_gates import UninformedGates

__all__ = list(LAYER_NAMES)
