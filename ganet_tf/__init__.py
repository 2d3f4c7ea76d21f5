"""GA-Net, the Gated Attention Network (Xue, Li & Zhang, AAAI 2020), for Keras 3.

The layers, the model builders and the metrics (`ganet_tf.layers`,
`ganet_tf.models`, `ganet_tf.metrics`) run on every Keras backend. The
rest needs TensorFlow and its Keras backend (`ganet_tf.backends`): on the
TensorFlow backend `import ganet_tf` imports TensorFlow first, without its
C++ start-up log (`ganet_tf.quiet_import`), and `ganet_tf.inference` with
`TextClassifier`, `TextTranslator`, `load_classifier` and
`load_translator`. On another backend `ganet_tf` does not import
TensorFlow itself, and those names raise `TensorFlowRequiredError` (an
`ImportError`) in one line naming the fix.
"""

from ganet_tf import backends
from ganet_tf.errors import GANetInputError
from ganet_tf.errors import TensorFlowRequiredError

__version__ = "0.1.0"

# The names of `ganet_tf.inference` that `ganet_tf` gives on the TensorFlow backend.
_INFERENCE_NAMES = ("TextClassifier", "TextTranslator", "load_classifier", "load_translator")
_INFERENCE_USES = "SavedModel, TextVectorization on strings"
# The layers and builders `ganet_tf` gives on every backend.
_LAYER_NAMES = (
    "AuxiliaryNetwork",
    "GatedAttentionPooling",
    "GateSampler",
    "GateSparsity",
    "LocalAttentionPooling",
)
_MODEL_NAMES = (
    "build_bilstm",
    "build_explainer",
    "build_ganet",
    "build_local_attention",
    "build_model",
    "build_soft_attention",
)

_TENSORFLOW_BACKEND = backends.tensorflow_backend()
if _TENSORFLOW_BACKEND:
    from ganet_tf.quiet_import import import_tensorflow

    # Before Keras imports TensorFlow: without its C++ start-up log (CUDA
    # factory registrations, cudart) unless TF_CPP_MIN_LOG_LEVEL asks for it.
    import_tensorflow()

# The layers register with Keras' serialization on import, so that
# `keras.models.load_model` finds them after `import ganet_tf`. Where they
# cannot import for want of TensorFlow (no TensorFlow on its own backend),
# `import ganet_tf` still succeeds, for `python -m ganet_tf` to say so in
# one line; their names then raise that error.
_missing_layers = None
try:
    from ganet_tf import layers
    from ganet_tf import models
    from ganet_tf.layers import AuxiliaryNetwork
    from ganet_tf.layers import GatedAttentionPooling
    from ganet_tf.layers import GateSampler
    from ganet_tf.layers import GateSparsity
    from ganet_tf.layers import LocalAttentionPooling
    from ganet_tf.models import build_bilstm
    from ganet_tf.models import build_explainer
    from ganet_tf.models import build_ganet
    from ganet_tf.models import build_local_attention
    from ganet_tf.models import build_model
    from ganet_tf.models import build_soft_attention
except ImportError as error:
    if _TENSORFLOW_BACKEND or not backends.is_missing_tensorflow(error):
        raise
    _missing_layers = error

if _TENSORFLOW_BACKEND:
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
    if _missing_layers is not None and name in ("layers", "models", *_LAYER_NAMES, *_MODEL_NAMES):
        raise TensorFlowRequiredError(
            f"ganet_tf.{name} cannot be imported here: {_missing_layers} (Keras backend: {backends.keras_backend()}); "
            "install TensorFlow with python -m pip install -r requirements.txt."
        ) from _missing_layers
    raise AttributeError(f"module 'ganet_tf' has no attribute {name!r}")
