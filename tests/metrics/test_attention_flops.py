import numpy as np

from ganet_tf.layers import GatedAttentionPooling
from ganet_tf.metrics import attention_flops


def test_flops_scale_with_attended_tokens():
    layer = GatedAttentionPooling(units=10)
    layer(np.zeros([1, 3, 200], "float32"))
    per_token = 2 * 200 * 10 + 4 * 10 + 3 + 2 * 200
    np.testing.assert_array_equal(attention_flops(layer, [0, 1, 12]), [0, per_token, 12 * per_token])
