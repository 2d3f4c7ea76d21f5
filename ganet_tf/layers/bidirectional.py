"""`keras.layers.Bidirectional`, safe to make while Keras loads a model."""

import contextlib

import keras
from keras.src.backend.common import global_state

# The two maps of Keras' object-sharing scope (`ObjectSharingScope`), which
# `keras.saving.load_model` holds open while it rebuilds a model.
_SHARING_MAPS = ("shared_objects/id_to_obj_map", "shared_objects/id_to_config_map")


@contextlib.contextmanager
def _outside_object_sharing():
    saved = [global_state.get_global_attribute(key) for key in _SHARING_MAPS]
    for key in _SHARING_MAPS:
        global_state.set_global_attribute(key, None)
    try:
        yield
    finally:
        for key, value in zip(_SHARING_MAPS, saved, strict=True):
            global_state.set_global_attribute(key, value)


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
    with _outside_object_sharing():
        return keras.layers.Bidirectional(layer, **kwargs)
