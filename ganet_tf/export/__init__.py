from ganet_tf import backends

# Imported by its own path (`from ganet_tf.export.x import y`) on another backend, it
# says so at once in one line, not in a misleading error at first use.
backends.require_tensorflow("ganet_tf.export", "SavedModel")

from ganet_tf.export.export_saved_model import check_saved_model
from ganet_tf.export.export_saved_model import export_saved_model
from ganet_tf.export.export_saved_model import served_test_gates
from ganet_tf.export.export_translator import export_translator
from ganet_tf.export.model_config import write_model_config
from ganet_tf.export.serving_archive import build_serving_archive
from ganet_tf.export.serving_archive import serving_outputs
from ganet_tf.export.warmup import load_warmup_texts
from ganet_tf.export.warmup import write_warmup_requests
