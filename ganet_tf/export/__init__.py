"""A trained run (classifier or translator) as a TF Serving SavedModel (`python -m ganet_tf export`).

The names below are imported from their modules on first use
(`ganet_tf.lazy_names`): `export`'s parser imports
`ganet_tf.export.commands` before TensorFlow.
"""

from ganet_tf import backends
from ganet_tf.lazy_names import lazy_names

# Imported by its own path (`from ganet_tf.export.x import y`) on another backend, it
# says so at once in one line, not in a misleading error at first use.
backends.require_tensorflow("ganet_tf.export", "SavedModel")

__all__ = [
    "build_serving_archive",
    "check_saved_model",
    "export_saved_model",
    "export_translator",
    "load_warmup_texts",
    "served_test_gates",
    "serving_outputs",
    "write_model_config",
    "write_warmup_requests",
]

__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "ganet_tf.export.export_saved_model": ("check_saved_model", "export_saved_model", "served_test_gates"),
        "ganet_tf.export.export_translator": ("export_translator",),
        "ganet_tf.export.model_config": ("write_model_config",),
        "ganet_tf.export.serving_archive": ("build_serving_archive", "serving_outputs"),
        "ganet_tf.export.warmup": ("load_warmup_texts", "write_warmup_requests"),
    },
)
