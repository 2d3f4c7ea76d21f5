import dataclasses

import numpy as np


@dataclasses.dataclass
class TextSplits:
    """A labelled text classification dataset, split for training.

    Args:
        name: dataset name, e.g. `"trec"`.
        class_names: list of class names; label `i` means `class_names[i]`.
        train_texts, train_labels: the training split.
        validation_texts, validation_labels: the split that early stopping
            watches: the dataset's own dev split, or carved from training.
        test_texts, test_labels: the test split (may be empty).
    """

    name: str
    class_names: list
    train_texts: list
    train_labels: np.ndarray
    validation_texts: list
    validation_labels: np.ndarray
    test_texts: list
    test_labels: np.ndarray

    def __post_init__(self):
        for split in ("train", "validation", "test"):
            texts = getattr(self, f"{split}_texts")
            labels = np.asarray(getattr(self, f"{split}_labels"), dtype="int64")
            if len(texts) != len(labels):
                raise ValueError(f"{split}: {len(texts)} texts but {len(labels)} labels.")
            setattr(self, f"{split}_texts", list(texts))
            setattr(self, f"{split}_labels", labels)

    @property
    def num_classes(self):
        return len(self.class_names)

    def subset(self, limit):
        """`limit` examples of every split, spread evenly over it in its
        order (for smoke runs): a file sorted by label (IMDB's test split)
        still gives every label, not the first one only."""
        parts = {}
        for split in ("train", "validation", "test"):
            texts = getattr(self, f"{split}_texts")
            size = min(limit, len(texts))
            chosen = (np.arange(size) * len(texts)) // max(size, 1)
            parts[f"{split}_texts"] = [texts[i] for i in chosen]
            parts[f"{split}_labels"] = getattr(self, f"{split}_labels")[chosen]
        return dataclasses.replace(self, **parts)
