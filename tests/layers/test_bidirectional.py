import keras
import pytest
from keras.src.backend.common import global_state
from keras.src.saving import serialization_lib

from ganet_tf.layers.bidirectional import bidirectional


class _EveryIdIsTaken(dict):
    """An object-sharing map in which every id names the same old layer:
    what `load_model` sees when a new layer sits at the address that an
    object of the saved file had."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def get(self, key, default=None):
        return self.layer


def _colliding_scope():
    scope = serialization_lib.ObjectSharingScope()
    scope.__enter__()
    old = keras.layers.LSTM(3, return_sequences=True, name="old_forward")
    global_state.set_global_attribute("shared_objects/id_to_obj_map", _EveryIdIsTaken(old))
    return scope


def test_keras_bidirectional_fails_when_an_id_collides():
    # The failure this module works around: without it the layer cannot be
    # made (so the test below can fail).
    scope = _colliding_scope()
    try:
        with pytest.raises(ValueError, match="go_backwards"):
            keras.layers.Bidirectional(keras.layers.LSTM(3, return_sequences=True))
    finally:
        scope.__exit__()


def test_bidirectional_is_made_outside_the_sharing_scope_and_restores_it():
    scope = _colliding_scope()
    try:
        taken = global_state.get_global_attribute("shared_objects/id_to_obj_map")
        layer = bidirectional(keras.layers.LSTM(3, return_sequences=True), name="encoder")
        assert layer.name == "encoder"
        assert not layer.forward_layer.go_backwards
        assert layer.backward_layer.go_backwards
        assert layer.forward_layer.name != "old_forward"
        assert global_state.get_global_attribute("shared_objects/id_to_obj_map") is taken
    finally:
        scope.__exit__()
    assert global_state.get_global_attribute("shared_objects/id_to_obj_map") is None
