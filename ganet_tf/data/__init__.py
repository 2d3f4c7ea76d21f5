"""Datasets, splits and token ids.

`build_vectorizer`, `load_vectorizer`, `make_dataset` and `save_vectorizer`
use TensorFlow (`TextVectorization`, `tf.data`) and are imported from
`ganet_tf.data.vectorizer` on first use, so that the rest of the package (the
dataset readers, `ganet_tf.data.prepared_dataset`) imports on every Keras
backend without TensorFlow.
"""

import importlib

from ganet_tf.data.dataset_spec import DatasetSpec
from ganet_tf.data.datasets import DATASETS
from ganet_tf.data.datasets import dataset_source
from ganet_tf.data.datasets import load_dataset
from ganet_tf.data.datasets import load_files
from ganet_tf.data.registry import get_dataset_spec
from ganet_tf.data.text_splits import TextSplits

# The names of `ganet_tf.data.vectorizer`, which imports TensorFlow.
_VECTORIZER_NAMES = ("build_vectorizer", "load_vectorizer", "make_dataset", "save_vectorizer")


def __getattr__(name):
    if name not in _VECTORIZER_NAMES:
        raise AttributeError(f"module 'ganet_tf.data' has no attribute {name!r}")
    value = getattr(importlib.import_module("ganet_tf.data.vectorizer"), name)
    globals()[name] = value
    return value
