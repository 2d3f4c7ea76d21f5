from ganet_tf import backends

# Imported by its own path (`from ganet_tf.interpret.x import y`) on another backend, it
# says so at once in one line, not in a misleading error at first use.
backends.require_tensorflow("ganet_tf.interpret", "TextVectorization on strings")

from ganet_tf.interpret.token_explanations import explain_texts
from ganet_tf.interpret.token_explanations import load_trained
from ganet_tf.interpret.token_explanations import write_report
