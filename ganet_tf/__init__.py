"""GA-Net, the Gated Attention Network (Xue, Li & Zhang, AAAI 2020), for Keras 3."""

from ganet_tf.quiet_import import import_tensorflow

# Before Keras imports TensorFlow: without its C++ start-up log (CUDA
# factory registrations, cudart) unless TF_CPP_MIN_LOG_LEVEL asks for it.
import_tensorflow()

from ganet_tf import inference  # noqa: E402
from ganet_tf import layers  # noqa: E402
from ganet_tf import models  # noqa: E402
from ganet_tf.inference import TextClassifier  # noqa: E402
from ganet_tf.inference import TextTranslator  # noqa: E402
from ganet_tf.inference import load_classifier  # noqa: E402
from ganet_tf.inference import load_translator  # noqa: E402
from ganet_tf.layers import AuxiliaryNetwork  # noqa: E402
from ganet_tf.layers import GatedAttentionPooling  # noqa: E402
from ganet_tf.layers import GateSampler  # noqa: E402
from ganet_tf.layers import GateSparsity  # noqa: E402
from ganet_tf.layers import LocalAttentionPooling  # noqa: E402
from ganet_tf.models import build_bilstm  # noqa: E402
from ganet_tf.models import build_explainer  # noqa: E402
from ganet_tf.models import build_ganet  # noqa: E402
from ganet_tf.models import build_local_attention  # noqa: E402
from ganet_tf.models import build_model  # noqa: E402
from ganet_tf.models import build_soft_attention  # noqa: E402

__version__ = "0.1.0"
