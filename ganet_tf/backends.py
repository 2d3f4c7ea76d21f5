"""Which Keras backend `ganet_tf` runs on, and what needs TensorFlow.

The layers (`ganet_tf.layers`), the model builders (`ganet_tf.models`) and
the metrics (`ganet_tf.metrics`) are Keras 3 code for every backend. The
rest reads, vectorizes, trains, exports or serves through TensorFlow
(`tf.data`, `TextVectorization` on strings, SavedModel, `tf.distribute`)
and needs TensorFlow installed and Keras on its TensorFlow backend: the
commands of `python -m ganet_tf`, `ganet_tf.inference` (`TextClassifier`,
`TextTranslator`, `load_classifier`, `load_translator`), `ganet_tf.export`,
`ganet_tf.seq2seq`, `ganet_tf.training`, `ganet_tf.interpret` and the tuning.
`require_tensorflow` says so in one line where they cannot run.

Nothing here imports TensorFlow or Keras: `keras_backend` reads the backend
as Keras will (`KERAS_BACKEND`, else `keras.json`), so that `ganet_tf` can
import TensorFlow quietly before Keras does (`ganet_tf.quiet_import`), and
not at all on another backend.
"""

import importlib.util
import json
import os
import sys

from ganet_tf.errors import KerasBackendError
from ganet_tf.errors import TensorFlowRequiredError

# The top-level modules of TensorFlow and of the packages built on it.
TENSORFLOW_MODULES = (
    "tensorflow",
    "tf_keras",
    "tensorflow_probability",
    "tensorflow_text",
    "tensorflow_datasets",
    "keras_hub",
)
INSTALL_HINT = "install it with python -m pip install -r requirements.txt"
# The backends of Keras 3 and the package each imports.
KERAS_BACKENDS = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch", "numpy": "numpy", "openvino": "openvino"}


def _keras_home():
    """Keras' folder of `keras.json`, found as `keras.src.backend.config` finds it."""
    if "KERAS_HOME" in os.environ:
        return os.environ["KERAS_HOME"]
    base = os.path.expanduser("~")
    if not os.access(base, os.W_OK):
        base = "/tmp"
    return os.path.join(base, ".keras")


def _backend_source():
    """Where the backend is set: `KERAS_BACKEND`, or the `keras.json` read."""
    if os.environ.get("KERAS_BACKEND"):
        return "KERAS_BACKEND"
    return os.path.join(os.path.expanduser(_keras_home()), "keras.json")


def installed(module):
    """Whether `module` (a top-level name) can import, found without importing it."""
    try:
        return sys.modules.get(module) is not None or importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def backend_problem():
    """Why Keras cannot import on its backend here, or None.

    Returns a `KerasBackendError` where the backend (read as Keras reads it,
    `keras_backend`) is not one Keras knows, or its package (PyTorch, JAX)
    is not installed; None where Keras is already imported, where it can
    import, and on the TensorFlow backend, whose missing TensorFlow
    `missing_tensorflow` reports. Imports neither Keras nor the backend.
    """
    if "keras" in sys.modules:
        return None
    backend = keras_backend()
    if backend not in KERAS_BACKENDS:
        return KerasBackendError(
            f"the Keras backend {backend!r} (set by {_backend_source()}) is not one Keras knows: "
            f"set KERAS_BACKEND to one of {', '.join(KERAS_BACKENDS)} (tensorflow runs everything)."
        )
    module = KERAS_BACKENDS[backend]
    if backend != "tensorflow" and not installed(module):
        return KerasBackendError(
            f"the Keras backend {backend} (set by {_backend_source()}) is not installed: "
            f"install it with python -m pip install {module}, or run with KERAS_BACKEND=tensorflow."
        )
    return None


def require_backend():
    """Raises `backend_problem()` where Keras cannot import on its backend."""
    error = backend_problem()
    if error is not None:
        raise error


def keras_backend():
    """The name of the Keras backend: `"tensorflow"`, `"jax"`, `"torch"`, ...

    Once Keras is imported, `keras.backend.backend()`. Before, the backend
    Keras will choose, read as Keras reads it: `KERAS_BACKEND` if set and
    not empty, else the `"backend"` of `keras.json` in `KERAS_HOME` (default
    `~/.keras`), else `"tensorflow"`. Imports neither Keras nor TensorFlow.

    Example:

    >>> # Not run by the tests: the name depends on KERAS_BACKEND and keras.json.
    >>> keras_backend()  # doctest: +SKIP
    'jax'
    """
    keras = sys.modules.get("keras")
    backend = getattr(getattr(keras, "backend", None), "backend", None)
    if callable(backend):
        return backend()
    if os.environ.get("KERAS_BACKEND"):
        return os.environ["KERAS_BACKEND"]
    try:
        with open(os.path.join(os.path.expanduser(_keras_home()), "keras.json"), encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError):
        config = {}
    name = config.get("backend") if isinstance(config, dict) else None
    return name if isinstance(name, str) and name else "tensorflow"


def tensorflow_installed():
    """Whether `import tensorflow` can succeed, found without importing it."""
    return installed("tensorflow")


def tensorflow_backend():
    """Whether the TensorFlow-only parts can run: TensorFlow is installed and
    Keras runs (or will run) on it. Imports neither."""
    return keras_backend() == "tensorflow" and tensorflow_installed()


def is_missing_tensorflow(error):
    """Whether the `ImportError` `error` is TensorFlow (or a package of
    `TENSORFLOW_MODULES`) not being installed."""
    name = getattr(error, "name", None) or ""
    return isinstance(error, ImportError) and name.split(".")[0] in TENSORFLOW_MODULES


def missing_tensorflow(what, uses):
    """Why `what` cannot run here, as a `TensorFlowRequiredError`, or None.

    Args:
        what: what needs TensorFlow, as the user named it: a command
            (`"train"`) or a name (`"ganet_tf.load_classifier"`).
        uses: what of TensorFlow it uses, in words
            (`"tf.data, TextVectorization"`), for the message.

    Returns:
        None with TensorFlow installed and Keras on its TensorFlow backend;
        else the error whose one-line message names the backend and the
        fix: install TensorFlow, or run with `KERAS_BACKEND=tensorflow`.
    """
    backend = keras_backend()
    if not tensorflow_installed():
        fix = f"{INSTALL_HINT} and run with KERAS_BACKEND=tensorflow"
        if backend == "tensorflow":
            fix = f"{INSTALL_HINT}, or set KERAS_BACKEND=jax (or torch) for the layers and model builders alone"
        return TensorFlowRequiredError(
            f"{what} needs TensorFlow ({uses}), which is not installed (Keras backend: {backend}): {fix}."
        )
    if backend != "tensorflow":
        return TensorFlowRequiredError(
            f"{what} needs the TensorFlow backend ({uses}) but Keras runs on {backend}: "
            "run it with KERAS_BACKEND=tensorflow (the layers and model builders run on every backend)."
        )
    return None


def require_tensorflow(what, uses):
    """Raises `missing_tensorflow(what, uses)` where `what` cannot run here."""
    error = missing_tensorflow(what, uses)
    if error is not None:
        raise error
