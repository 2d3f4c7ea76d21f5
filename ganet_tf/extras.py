"""The optional parts of `ganet_tf` and the extras that install them.

`pip install ganet_tf` installs the core: the layers, the builders,
`train`, `prepare`, `predict`, `tune` and `load_classifier`. The other
parts import their packages where they are used, through `import_extra`
or `require_extra`, which raise `MissingExtraError` in one line naming the
extra to install (`pip install 'ganet_tf[seq2seq]'`); the `all` extra
installs every one.
"""

import importlib

from ganet_tf.backends import installed
from ganet_tf.errors import MissingExtraError

# Each extra of pyproject.toml: its modules and the distribution that installs
# each (tests/test_packaging.py keeps the two equal).
EXTRAS = {
    # BLEU, and subword vocabularies (SentencePiece through keras-hub and tensorflow-text).
    "seq2seq": {
        "sacrebleu": "sacrebleu",
        "keras_hub": "keras-hub",
        "tensorflow_text": "tensorflow-text",
        "sentencepiece": "sentencepiece",
    },
    # TF Serving's protos: warmup requests and models.config.
    "serving": {"tensorflow_serving": "tensorflow-serving-api"},
    # The PNG figures of `explain`.
    "plots": {"matplotlib": "matplotlib"},
}


def _error(extra, what, cause=None):
    """The one-line `MissingExtraError` of `what` without `extra`."""
    packages = EXTRAS[extra]
    missing = [package for module, package in packages.items() if not installed(module)]
    needed = ", ".join(missing or packages.values())
    detail = "" if missing or cause is None else f" ({cause})"
    return MissingExtraError(f"{what} needs {needed}{detail}: pip install 'ganet_tf[{extra}]'.")


def require_extra(extra, what):
    """Raises `MissingExtraError` unless every package of `extra` is installed.

    Args:
        extra: a key of `EXTRAS`.
        what: what needs it, the start of the message (`"seq2seq"`).
    """
    if not all(installed(module) for module in EXTRAS[extra]):
        raise _error(extra, what)


def import_extra(extra, what, *modules):
    """The `modules` (dotted names from `extra`'s packages), imported.

    Raises:
        MissingExtraError: one of them does not import; its line names the
            extra (and the import error where the packages are installed).
    """
    try:
        return tuple(importlib.import_module(module) for module in modules)
    except ImportError as error:
        raise _error(extra, what, error) from error
