"""GA-Net, the Gated Attention Network (Xue, Li & Zhang, AAAI 2020), for Keras 3.

`ganet_tf.layers` holds every layer and `ganet_tf.models` every model
builder; the top level gives all of them too (`ganet_tf.build_ganet` is
`ganet_tf.models.build_ganet`). They and the metrics (`ganet_tf.metrics`)
run on every Keras backend. The rest needs TensorFlow and its Keras
backend (`ganet_tf.backends`), as do `TextClassifier`, `TextTranslator`,
`load_classifier` and `load_translator` of `ganet_tf.inference`, which the
top level gives on that backend.

`import ganet_tf` imports neither Keras nor TensorFlow and leaves the
process as it found it (environment, file descriptors, `sys.meta_path`,
signal handlers, logging): each name imports its package when first read.
The layers register with Keras' serialization as `ganet_tf.layers`
imports: at `import ganet_tf` where the program has imported Keras
already (Keras and its backend then made their changes to the process
before), else when a layer or builder is first read; so, with Keras not
yet imported, load a saved model after `import ganet_tf.layers`. Where a name cannot import here, reading it
raises one line naming the fix: `TensorFlowRequiredError` (an
`ImportError`) without TensorFlow or on another backend, `KerasBackendError`
where Keras cannot run at all (an unknown backend, or one not installed).
"""

import importlib
import sys

from ganet_tf import backends
from ganet_tf.errors import GANetInputError
from ganet_tf.errors import KerasBackendError
from ganet_tf.errors import TensorFlowRequiredError
from ganet_tf.namespace import BUILDER_NAMES
from ganet_tf.namespace import LAYER_NAMES

__version__ = "0.1.0"

# The names of `ganet_tf.inference` that `ganet_tf` gives on the TensorFlow backend.
_INFERENCE_NAMES = ("TextClassifier", "TextTranslator", "load_classifier", "load_translator")
_INFERENCE_USES = "SavedModel, TextVectorization on strings"
_LAYER_NAMES = LAYER_NAMES
_MODEL_NAMES = BUILDER_NAMES


def _importable_names():
    """The public names that can import here, read without importing Keras."""
    names = ["GANetInputError", "KerasBackendError", "TensorFlowRequiredError"]
    keras_runs = backends.backend_problem() is None
    if keras_runs and (backends.tensorflow_installed() or backends.keras_backend() != "tensorflow"):
        names += [*_LAYER_NAMES, *_MODEL_NAMES]
    if backends.tensorflow_backend():
        names += _INFERENCE_NAMES
    return names


__all__ = _importable_names()


def _keras_package(name):
    """`ganet_tf.layers` or `ganet_tf.models`, or the one-line error of why not."""
    try:
        return importlib.import_module(f"ganet_tf.{name}")
    except KerasBackendError:
        raise
    except ImportError as error:
        if not backends.is_missing_tensorflow(error):
            raise
        raise TensorFlowRequiredError(
            f"ganet_tf.{name} cannot be imported here: {error} (Keras backend: {backends.keras_backend()}); "
            "install TensorFlow with python -m pip install -r requirements.txt."
        ) from error


def __getattr__(name):
    """Imports the package of `name` when first read (a layer, a builder, an
    inference name, or `layers`, `models`, `inference`), then keeps it."""
    if name == "inference" or name in _INFERENCE_NAMES:
        backends.require_tensorflow(f"ganet_tf.{name}", _INFERENCE_USES)
        package = importlib.import_module("ganet_tf.inference")
    elif name == "layers" or name in _LAYER_NAMES:
        package = _keras_package("layers")
    elif name == "models" or name in _MODEL_NAMES:
        package = _keras_package("models")
    else:
        raise AttributeError(f"module 'ganet_tf' has no attribute {name!r}")
    value = package if name == package.__name__.rpartition(".")[2] else getattr(package, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_LAYER_NAMES, *_MODEL_NAMES, *_INFERENCE_NAMES, "layers", "models", "inference"})


# A program that imported Keras first loads saved models after `import
# ganet_tf`, as with other Keras packages: register the layers now, which
# changes nothing Keras' own import has not.
if "keras" in sys.modules and "ganet_tf.layers" not in sys.modules and backends.backend_problem() is None:
    _keras_package("layers")
