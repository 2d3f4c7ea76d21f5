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

        loaded = tfds.load(spec.tfds_name, split=list(spec.tfds_splits), batch_size=-1)
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
    return [tfds.as_numpy(split) for split in loaded]


def read_tfds(spec):
    """`{"train": (texts, labels), "test": (texts, labels)}` of `spec` from TFDS.

    The text features `spec.tfds_text_keys` are decoded as UTF-8 and joined
    by a space.
    """
    decoded = []
    for split in _load(spec):
        columns = [[text.decode("utf-8", "replace") for text in split[key]] for key in spec.tfds_text_keys]
        texts = [" ".join(parts) for parts in zip(*columns, strict=True)]
        decoded.append((texts, np.asarray(split[spec.tfds_label_key], dtype="int64")))
    return {"train": decoded[0], "test": decoded[1]}
