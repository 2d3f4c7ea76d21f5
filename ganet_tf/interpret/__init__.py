"""Per-token gates and attention of trained runs, as HTML and PNG (`python -m ganet_tf explain`).

The names below are imported from their modules on first use
(`ganet_tf.lazy_names`): `explain`'s parser imports
`ganet_tf.interpret.commands` before TensorFlow.
"""

from ganet_tf import backends
from ganet_tf.lazy_names import lazy_names

# Imported by its own path (`from ganet_tf.interpret.x import y`) on another backend, it
# says so at once in one line, not in a misleading error at first use.
backends.require_tensorflow("ganet_tf.interpret", "TextVectorization on strings")

__all__ = ["explain_texts", "load_trained", "write_report"]

__getattr__, __dir__ = lazy_names(
    __name__,
    {"ganet_tf.interpret.token_explanations": ("explain_texts", "load_trained", "write_report")},
)
