"""The datasets of the paper: one `DatasetSpec` each.

`load_dataset` reads a dataset through its spec; the training code takes the
local-attention window D from it. To add a dataset, write its local reader
(`ganet_tf/data/local_datasets.py`) and add its spec here.
"""

import functools

from ganet_tf.data.dataset_spec import DatasetSpec
from ganet_tf.data.local_datasets import AG_NEWS_LAYOUT
from ganet_tf.data.local_datasets import IMDB_LAYOUT
from ganet_tf.data.local_datasets import TREC_LAYOUT
from ganet_tf.data.local_datasets import read_ag_news_folder
from ganet_tf.data.local_datasets import read_imdb
from ganet_tf.data.local_datasets import read_sst
from ganet_tf.data.local_datasets import read_trec
from ganet_tf.data.local_datasets import sst_layout
from ganet_tf.errors import GANetInputError

# The local window of data that is not one of the paper's datasets.
DEFAULT_LOCAL_WINDOW = 8

_TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
_SST1_CLASSES = ("very negative", "negative", "neutral", "positive", "very positive")
_POLARITY = ("negative", "positive")


def _sst_spec(name, prefix, class_names, **tfds):
    """The `DatasetSpec` of an SST dataset.

    Its local copy is `DIR/sst/<prefix>.{train,dev,test}`, with a dev split of
    its own; its local window is the paper's 8; `tfds` are its TFDS fields.
    """
    return DatasetSpec(
        name=name,
        class_names=class_names,
        local_window=8,
        local_folder="sst",
        local_layout=sst_layout(prefix),
        read_local=functools.partial(read_sst, prefix=prefix, num_classes=len(class_names)),
        dev_file=f"sst/{prefix}.dev",
        **tfds,
    )


_SPECS = (
    DatasetSpec(
        name="trec",
        class_names=_TREC_CLASSES,
        local_window=4,
        local_folder="trec",
        local_layout=TREC_LAYOUT,
        read_local=functools.partial(read_trec, class_names=list(_TREC_CLASSES)),
        tfds_name="trec",
        tfds_label_key="label-coarse",
        packaged_folder="trec",
    ),
    _sst_spec("sst1", "stsa.fine", _SST1_CLASSES),
    # GLUE's SST-2 test labels are hidden: its validation split is the test.
    _sst_spec(
        "sst2",
        "stsa.binary",
        _POLARITY,
        tfds_name="glue/sst2",
        tfds_text_keys=("sentence",),
        tfds_splits=("train", "validation"),
    ),
    DatasetSpec(
        name="imdb",
        class_names=_POLARITY,
        local_window=40,
        local_folder="imdb",
        local_layout=IMDB_LAYOUT,
        read_local=read_imdb,
        tfds_name="imdb_reviews",
        tfds_label_names=("neg", "pos"),
    ),
    DatasetSpec(
        name="ag_news",
        class_names=("World", "Sports", "Business", "Sci/Tech"),
        local_window=16,
        local_folder="ag_news",
        local_layout=AG_NEWS_LAYOUT,
        read_local=read_ag_news_folder,
        tfds_name="ag_news_subset",
        tfds_text_keys=("title", "description"),
    ),
)

# Name -> `DatasetSpec`, in the order of the paper's tables.
DATASETS = {spec.name: spec for spec in _SPECS}

# Half-width D of the local attention window per dataset (paper, Section 4).
LOCAL_WINDOWS = {spec.name: spec.local_window for spec in _SPECS}


def get_dataset_spec(name):
    """The `DatasetSpec` of `name`; one error line for an unknown name."""
    if name not in DATASETS:
        raise GANetInputError(
            f"Unknown dataset {name!r}: choose one of {sorted(DATASETS)}, or pass your own with --train-file."
        )
    return DATASETS[name]


def local_window(name, default=DEFAULT_LOCAL_WINDOW):
    """The paper's local window D of dataset `name`; `default` for other data."""
    spec = DATASETS.get(name)
    return default if spec is None else spec.local_window
