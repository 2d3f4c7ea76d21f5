"""The TFDS copy of a dataset of the registry (used without a data directory)."""

import numpy as np

from ganet_tf.data.file_formats import DATA_DIR_ENV
from ganet_tf.errors import GANetInputError


def _load(spec):
    if spec.tfds_name is None:
        raise GANetInputError(
            f"{spec.name} is not in TFDS: pass --data-dir (or set {DATA_DIR_ENV}) "
            f"to a folder DIR holding {spec.local_layout}."
        )
    try:
        import tensorflow_datasets as tfds

        loaded, info = tfds.load(spec.tfds_name, split=list(spec.tfds_splits), batch_size=-1, with_info=True)
    except ImportError as error:  # TFDS itself, or a module it needs
        raise GANetInputError(
            f"Could not load {spec.name} from TFDS: the Python module "
            f"{error.name or str(error)!r} is missing (pip install it), or pass "
            f"--data-dir (or set {DATA_DIR_ENV}) to a local copy."
        ) from None
    except Exception as error:
        raise GANetInputError(
            f"Could not load {spec.name} from TFDS ({type(error).__name__}); "
            "without network pass --data-dir (or set "
            f"{DATA_DIR_ENV}) to a local copy."
        ) from None
    return [tfds.as_numpy(split) for split in loaded], info.features[spec.tfds_label_key].names


def label_ids(spec, tfds_names):
    """The map from TFDS label ids to `spec`'s class ids, an int64 array.

    TFDS numbers the classes of its `ClassLabel` in its own order, which is
    not always the paper's (`spec.class_names`); `spec.tfds_label_names`
    names TFDS's label of each class.

    Example:

    >>> from ganet_tf.data.registry import get_dataset_spec
    >>> label_ids(get_dataset_spec("trec"), ["DESC", "ENTY", "ABBR", "HUM", "NUM", "LOC"]).tolist()
    [1, 2, 0, 3, 5, 4]
    """
    ours = list(spec.tfds_label_names or spec.class_names)
    if sorted(ours) != sorted(tfds_names):
        raise GANetInputError(
            f"TFDS's {spec.tfds_name} has the labels {list(tfds_names)}, not {ours}: "
            "this version of tensorflow-datasets is not supported; pass --data-dir to a local copy."
        )
    return np.asarray([ours.index(name) for name in tfds_names], dtype="int64")


def read_tfds(spec):
    """`{"train": (texts, labels), "test": (texts, labels)}` of `spec` from TFDS.

    The text features `spec.tfds_text_keys` are decoded as UTF-8 and joined
    by a space; the labels are `spec`'s class ids (`label_ids`).
    """
    splits, tfds_names = _load(spec)
    mapping = label_ids(spec, tfds_names)
    decoded = []
    for split in splits:
        columns = [[text.decode("utf-8", "replace") for text in split[key]] for key in spec.tfds_text_keys]
        texts = [" ".join(parts) for parts in zip(*columns, strict=True)]
        decoded.append((texts, mapping[np.asarray(split[spec.tfds_label_key], dtype="int64")]))
    return {"train": decoded[0], "test": decoded[1]}
