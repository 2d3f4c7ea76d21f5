"""Initializer helpers shared by the layers."""

import keras


def clone_initializer(initializer):
    """A new initializer of `initializer`'s config: each sublayer draws its
    own weights (one seeded initializer shared would draw the same ones)."""
    initializer = keras.initializers.get(initializer)
    return initializer.__class__.from_config(initializer.get_config())
