import dataclasses
from collections.abc import Callable


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
    """Everything the package knows about one dataset of the paper.

    Args:
        name: the dataset's name on the command line, e.g. `"trec"`.
        class_names: tuple of class names; label `i` means `class_names[i]`.
        local_window: half-width D of the local attention window that the
            paper uses on this dataset (Section 4).
        local_folder: the folder of the local copy inside the data directory
            (`DIR/<local_folder>`).
        local_layout: the files of the local copy, as error messages show
            them, e.g. `"DIR/trec/train_5500.label and DIR/trec/TREC_10.label"`.
        read_local: `read_local(folder)` reads the local copy in
            `DIR/<local_folder>` and returns `{"train": (texts, labels),
            "test": (texts, labels)}`, plus `"dev"` when the copy has a dev
            split of its own.
        dev_file: the local copy's own dev split (relative to the data
            directory), which is then the validation split; `None` when the
            validation split is carved from training (`validation_fraction`,
            `seed`).
        tfds_name: the TFDS name (`None` when TFDS does not have it). A TFDS
            copy's validation split is always carved from training.
        tfds_text_keys: the feature(s) joined by a space into the text.
        tfds_label_key: the feature that holds the label id.
        tfds_splits: the TFDS splits read as `(train, test)`.
        tfds_label_names: the names of TFDS's `ClassLabel` feature for
            `class_names`, in the same order (TFDS numbers TREC's classes
            `DESC, ENTY, ABBR, HUM, NUM, LOC`, IMDB's `neg, pos`): the TFDS
            label ids are mapped through them. Default: `class_names`.
        packaged_folder: the folder under `ganet_tf/data/packaged/` that
            holds a copy of the dataset in its local layout, shipped with the
            package; read when no data directory is given, before TFDS.
            `None` for the datasets the package does not ship.

    Example:

    >>> from ganet_tf.data.registry import DATASETS
    >>> DATASETS["trec"].local_window
    4
    """

    name: str
    class_names: tuple
    local_window: int
    local_folder: str
    local_layout: str
    read_local: Callable
    dev_file: str = None
    tfds_name: str = None
    tfds_text_keys: tuple = ("text",)
    tfds_label_key: str = "label"
    tfds_splits: tuple = ("train", "test")
    tfds_label_names: tuple = None
    packaged_folder: str = None

    def __post_init__(self):
        if len(self.class_names) < 2:
            raise ValueError(f"`class_names` must name at least two classes. Received: class_names={self.class_names}")
        if not isinstance(self.local_window, int) or self.local_window < 1:
            raise ValueError(f"`local_window` must be a positive integer. Received: local_window={self.local_window}")
        if self.tfds_label_names is not None and len(self.tfds_label_names) != len(self.class_names):
            raise ValueError(
                "`tfds_label_names` must name one TFDS label per class. "
                f"Received: tfds_label_names={self.tfds_label_names}"
            )
        if len(self.tfds_splits) != 2:
            raise ValueError(
                f"`tfds_splits` must name a train and a test split. Received: tfds_splits={self.tfds_splits}"
            )
