import numpy as np

from ganet_tf.data.text_splits import TextSplits


def test_subset_spreads_over_a_split_sorted_by_label():
    splits = TextSplits(
        name="toy",
        class_names=["neg", "pos"],
        train_texts=list("abcdef"),
        train_labels=[0, 0, 0, 1, 1, 1],
        validation_texts=["g", "h"],
        validation_labels=[0, 1],
        test_texts=[f"t{i}" for i in range(8)],
        test_labels=[0] * 4 + [1] * 4,
    )
    small = splits.subset(4)
    assert small.test_texts == ["t0", "t2", "t4", "t6"]
    np.testing.assert_array_equal(small.test_labels, [0, 0, 1, 1])
    np.testing.assert_array_equal(small.train_labels, [0, 0, 1, 1])
    # A split no larger than the limit is kept whole, in order, without repeats.
    assert small.validation_texts == ["g", "h"]
    assert splits.subset(100).train_texts == list("abcdef")
    assert splits.subset(1).test_texts == ["t0"]
