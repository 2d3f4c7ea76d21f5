"""GA-Net, the Gated Attention Network (Xue, Li & Zhang, AAAI 2020), for Keras 3.

`ganet_tf.layers` holds every layer and `ganet_tf.models` every model
builder; the top level gives all of them too (`ganet_tf.build_ganet` is
`ganet_tf.models.build_ganet`). They and the metrics (`ganet_tf.metrics`)
run on every Keras backend. The rest needs TensorFlow and its Keras
backend (`ganet_tf.backends`): on the TensorFlow backend `import ganet_tf`
imports TensorFlow first, without its C++ start-up log
(`ganet_tf.quiet_import`), and `ganet_tf.inference` with `TextClassifier`,
`TextTranslator`, `load_classifier` and `load_translator`. On another
backend `ganet_tf` does not import TensorFlow itself (an import by Keras
later is quiet too), and those names raise `TensorFlowRequiredError` (an
`ImportError`) in one line naming the fix. Where Keras cannot run at all
(an unknown backend, or one not installed), `import ganet_tf` still
succeeds and the layers and builders raise `KerasBackendError` in one line.
"""

from ganet_tf import early_signals

# Before the imports of TensorFlow and Keras, which take seconds: a stop
# signal meanwhile is kept for the command (`python -m ganet_tf` only).
early_signals.install_if_command()

from ganet_tf import backends  # noqa: E402
from ganet_tf import namespace  # noqa: E402
from ganet_tf.errors import GANetInputError  # noqa: E402
from ganet_tf.errors import KerasBackendError  # noqa: E402
from ganet_tf.errors import TensorFlowRequiredError  # noqa: E402

__version__ = "0.1.0"

# The names of `ganet_tf.inference` that `ganet_tf` gives on the TensorFlow backend.
_INFERENCE_NAMES = ("TextClassifier", "TextTranslator", "load_classifier", "load_translator")
_INFERENCE_USES = "SavedModel, TextVectorization on strings"
_LAYER_NAMES = namespace.LAYER_NAMES
_MODEL_NAMES = namespace.BUILDER_NAMES
_KERAS_NAMES = ("layers", "models", *_LAYER_NAMES, *_MODEL_NAMES)

_TENSORFLOW_BACKEND = backends.tensorflow_backend()
if _TENSORFLOW_BACKEND:
    from ganet_tf.quiet_import import import_tensorflow

    # Before Keras imports TensorFlow: without its C++ start-up log (CUDA
    # factory registrations, cudart) unless TF_CPP_MIN_LOG_LEVEL asks for it.
    import_tensorflow()
else:
    from ganet_tf.quiet_import import quiet_later_import

    # Keras may import TensorFlow later for a part that needs it (tf.data):
    # that import is quiet too.
    quiet_later_import()

# The layers register with Keras' serialization on import, so that
# `keras.models.load_model` finds them after `import ganet_tf`. Where they
# cannot import (no TensorFlow on its own backend, a backend Keras does not
# know or that is not installed), `import ganet_tf` still succeeds, for
# `python -m ganet_tf` to say so in one line; their names then raise that
# error.
_missing_layers = None
try:
    # `ganet_tf.layers` checks the backend before it imports Keras.
    from ganet_tf import layers
    from ganet_tf import models

    globals().update({name: getattr(layers, name) for name in _LAYER_NAMES})
    globals().update({name: getattr(models, name) for name in _MODEL_NAMES})
except ImportError as error:
    if not isinstance(error, KerasBackendError) and (_TENSORFLOW_BACKEND or not backends.is_missing_tensorflow(error)):
        raise
    _missing_layers = error

__all__ = ["GANetInputError", "KerasBackendError", "TensorFlowRequiredError"]
if _missing_layers is None:
    __all__ += [*_LAYER_NAMES, *_MODEL_NAMES]
if _TENSORFLOW_BACKEND:
    __all__ += list(_INFERENCE_NAMES)
    from ganet_tf import inference
    from ganet_tf.inference import TextClassifier
    from ganet_tf.inference import TextTranslator
    from ganet_tf.inference import load_classifier
    from ganet_tf.inference import load_translator


def __getattr__(name):
    """The names of `ganet_tf` that cannot import here: one error line each."""
    if name == "inference" or name in _INFERENCE_NAMES:
        error = backends.missing_tensorflow(f"ganet_tf.{name}", _INFERENCE_USES)
        if error is not None:
            raise error
        import ganet_tf.inference

        return ganet_tf.inference if name == "inference" else getattr(ganet_tf.inference, name)
    if isinstance(_missing_layers, KerasBackendError) and name in _KERAS_NAMES:
        raise KerasBackendError(str(_missing_layers))
    if _missing_layers is not None and name in _KERAS_NAMES:
        raise TensorFlowRequiredError(
            f"ganet_tf.{name} cannot be imported here: {_missing_layers} (Keras backend: {backends.keras_backend()}); "
            "install TensorFlow with python -m pip install -r requirements.txt."
        ) from _missing_layers
    raise AttributeError(f"module 'ganet_tf' has no attribute {name!r}")
