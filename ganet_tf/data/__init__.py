"""Datasets, splits and token ids.

The names below are imported from their modules on first use
(`ganet_tf.lazy_names`): the commands' parsers read `DATASETS` before
TensorFlow, and `build_vectorizer`, `load_vectorizer`, `make_dataset` and
`save_vectorizer` use TensorFlow (`TextVectorization`, `tf.data`), which the
rest of the package (the dataset readers, `ganet_tf.data.prepared_dataset`)
does not: it imports on every Keras backend without TensorFlow.
"""

from ganet_tf.lazy_names import lazy_names

__all__ = [
    "DATASETS",
    "DatasetSpec",
    "TextSplits",
    "build_vectorizer",
    "dataset_source",
    "get_dataset_spec",
    "load_dataset",
    "load_files",
    "load_vectorizer",
    "make_dataset",
    "save_vectorizer",
]

__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "ganet_tf.data.dataset_spec": ("DatasetSpec",),
        "ganet_tf.data.datasets": ("DATASETS", "dataset_source", "load_dataset", "load_files"),
        "ganet_tf.data.registry": ("get_dataset_spec",),
        "ganet_tf.data.text_splits": ("TextSplits",),
        "ganet_tf.data.vectorizer": ("build_vectorizer", "load_vectorizer", "make_dataset", "save_vectorizer"),
    },
)
