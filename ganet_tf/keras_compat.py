"""Every use of Keras internals in `ganet_tf`, in one place.

Keras 3 keeps a few things the package needs out of its public API: the
mask it attaches to a tensor, the stateless scope of a compiled JAX step,
the sublayers of `keras.layers.MultiHeadAttention` that have no property,
the hooks of `keras.callbacks.BackupAndRestore`, the trainer's symbolic
build. The package reaches them only through this module: one short
function (or class) for each use, whose comment says why it is needed and
which public API would replace it. `tests/test_keras_compat.py` fails on a
`keras.src` import or a private attribute of a Keras object anywhere else,
so a Keras release that moves one of them breaks this module alone.

Where Keras has a public way, the package takes it instead:
`MultiHeadAttention`'s `query_dense`, `key_dense`, `value_dense`,
`output_dense`, `num_heads`, `key_dim`, `value_dim`, `dropout` and
`attention_axes` properties, its `get_config()` for `use_gate` and
`sliding_window`, a layer's `metrics` and the base class's
`save_own_variables` for its own variables.
"""

import contextlib

import keras
from keras.src import backend as _backend
from keras.src.backend.common import global_state as _global_state

# The two maps of Keras' object-sharing scope (`ObjectSharingScope`), which
# `keras.saving.load_model` holds open while it rebuilds a model.
_SHARING_MAPS = ("shared_objects/id_to_obj_map", "shared_objects/id_to_config_map")


def get_mask(x):
    """The mask Keras attached to the tensor `x`, or None."""
    # A layer reads the mask of an input it takes under another name than
    # `mask`/`{arg}_mask`; public: none (`Layer.__call__` fills only those).
    return _backend.get_keras_mask(x)


def set_mask(x, mask):
    """Attaches `mask` to the tensor `x` (None: removes its mask)."""
    # Masks handled inside a layer are taken off its inputs (no warning from
    # sublayers that drop them) and put on its output, as
    # `MultiHeadAttention.call` does; public: none.
    _backend.set_keras_mask(x, mask)


def scoped_value(variable):
    """`variable`'s value here: the one the enclosing `keras.StatelessScope`
    holds (None where it holds none), or outside a scope its own."""
    # A compiled JAX step runs in a stateless scope that may not hold a
    # variable; public: none (`variable.value` falls back to its own value).
    if _backend.in_stateless_scope():
        return _backend.get_stateless_scope().get_current_value(variable)
    return variable.value


@contextlib.contextmanager
def outside_object_sharing():
    """Runs its block outside the object-sharing scope of a model that
    `keras.saving.load_model` is rebuilding (if any)."""
    # A layer serialized twice inside the scope is taken for an object of
    # the saved file (`ganet_tf.layers.bidirectional`); public: none.
    saved = [_global_state.get_global_attribute(key) for key in _SHARING_MAPS]
    for key in _SHARING_MAPS:
        _global_state.set_global_attribute(key, None)
    try:
        yield
    finally:
        for key, value in zip(_SHARING_MAPS, saved, strict=True):
            _global_state.set_global_attribute(key, value)


def build_at_init(layer):
    """Marks `layer` (whose class defines no `build`) built in `__init__`."""
    # As Keras' own layers without weights do: built, state locked, the
    # backend's post-build run (PyTorch tracks the variables then); public:
    # none (`layer.built = True` leaves out the last two).
    layer._build_at_init()


def attention_gate_dense(layer):
    """The output gate projection of a `keras.layers.MultiHeadAttention`
    made with `use_gate=True` (Keras 3.14+), once built."""
    # Public: none (the other projections have properties, this one none).
    return layer._gate_dense


def attention_softmax(layer):
    """The `keras.layers.Softmax` a built `keras.layers.MultiHeadAttention`
    normalizes its scores with."""
    # Its axes and dtype policy are the layer's; public: none.
    return layer._softmax


def attention_dropout(layer):
    """The `keras.layers.Dropout` a built `keras.layers.MultiHeadAttention`
    drops its attention weights with."""
    # Its seed generator is the layer's state; public: none.
    return layer._dropout_layer


def flash_attention(layer):
    """The `flash_attention` setting of a `keras.layers.MultiHeadAttention`:
    its argument, or `keras.config.is_flash_attention_enabled()`."""
    # Public: none (not in `get_config()`, no property).
    return layer._flash_attention


class BackupAndRestore(keras.callbacks.BackupAndRestore):
    """`keras.callbacks.BackupAndRestore` whose saving and restoring are
    public methods to override, `save_backup` and `restore_backup`, with the
    files and the position they need."""

    # Keras calls these two at every backup and in `on_train_begin`;
    # public: none (the callback has no documented hook).
    def _save_model(self):
        self.save_backup()

    def _load_model(self):
        self.restore_backup()

    def save_backup(self):
        """Writes the backup: Keras' weights and `backup_position`."""
        super()._save_model()

    def restore_backup(self):
        """Restores the backup's weights and sets the model's first epoch."""
        super()._load_model()

    @property
    def backup_weights_path(self):
        """The backup's weights file (`latest.weights.h5`)."""
        # Public: none (Keras names its files under `backup_dir` itself).
        return self._weights_path

    @property
    def backup_metadata_path(self):
        """The backup's JSON file of the epoch and batch reached."""
        # Public: none.
        return self._training_metadata_path

    @property
    def backup_position(self):
        """`{"epoch", "batch"}`: where training is, as Keras writes it."""
        # Public: none (counted by the callback from its own hooks).
        return {"epoch": self._current_epoch, "batch": self._last_batch_seen}


def set_initial_epoch(model, epoch):
    """Makes the next `model.fit` start at `epoch` (a backup restored)."""
    # What `BackupAndRestore` does in `on_train_begin`; public: `fit`'s
    # `initial_epoch`, which a callback cannot set.
    model._initial_epoch = epoch


def symbolic_build(model, data_batch):
    """Builds a compiled `model`'s metrics and losses from `data_batch`."""
    # `fit` does this from its first (distributed) batch; public: none.
    model._symbolic_build(data_batch=data_batch)


def skip_symbolic_build(model):
    """Makes `fit` and `evaluate` skip their build from the first batch."""
    # After `symbolic_build`; public: none.
    model._maybe_symbolic_build = lambda iterator=None, data_batch=None: None
