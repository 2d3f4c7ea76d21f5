"""`keras.layers.Bidirectional`, safe to make while Keras loads a model."""

import keras

from ganet_tf.keras_compat import outside_object_sharing


def bidirectional(layer, **kwargs):
    """`keras.layers.Bidirectional(layer, **kwargs)`, made outside Keras'
    object-sharing scope.

    `Bidirectional` serializes `layer` twice to make its two halves. Inside
    the scope that `keras.saving.load_model` holds, the second serialization
    is marked as shared under `id(layer)`, and the backward half is then
    looked up by that id among the objects of the saved file, whose ids are
    the addresses they had when the model was saved. When the new `layer`
    happens to sit at such an address, the backward half comes back as that
    other object (an LSTM that runs forwards), and the model fails to load
    now and then. Layers that make a `Bidirectional` in `__init__` (which
    `from_config` calls while loading) make it here.
    """
    with outside_object_sharing():
        return keras.layers.Bidirectional(layer, **kwargs)
