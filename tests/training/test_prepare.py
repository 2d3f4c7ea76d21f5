import numpy as np
import tensorflow as tf

from ganet_tf import cli
from ganet_tf.data.vectorizer import standardize_text
from ganet_tf.training.prepare import SPLITS
from ganet_tf.training.prepare import prepare
from ganet_tf.tuning import search


def test_train_and_tuning_give_identical_token_ids(data_dir):
    # The same data flags, parsed by each command's own parser. A seed
    # other than the default carves another validation split from TREC.
    flags = ["--dataset", "trec", "--data-dir", data_dir, "--limit", "60", "--seed", "3", "--glove-vocabulary", "0"]
    train_config = cli._config_from(cli.build_parser().parse_args(["train", *flags]))
    search_config = search.config_from(search.build_parser().parse_args(flags))
    trained = prepare(train_config)
    tuned = prepare(search_config.data_config())

    assert tuned.vocabulary == trained.vocabulary
    assert tuned.sequence_length == trained.sequence_length
    assert tuned.class_names == trained.class_names
    for split in SPLITS:
        assert getattr(tuned.splits, f"{split}_texts") == getattr(trained.splits, f"{split}_texts")
        np.testing.assert_array_equal(tuned.ids[split], trained.ids[split])
    np.testing.assert_array_equal(tuned.embeddings, trained.embeddings)
    # Without GloVe words, the vocabulary is that of the training texts only.
    train_tokens = _tokens(trained.splits.train_texts)
    assert set(trained.vocabulary) == {word.decode() for word in train_tokens.flat_values.numpy()}
    validation_words = {word.decode() for word in _tokens(trained.splits.validation_texts).flat_values.numpy()}
    assert validation_words - set(trained.vocabulary)  # words seen in validation only...
    assert (trained.ids["validation"] == 1).any()  # ... are out of vocabulary
    # The sequence length is the 95th percentile of the training lengths.
    assert trained.sequence_length == int(np.ceil(np.percentile(train_tokens.row_lengths().numpy(), 95)))


def _tokens(texts):
    return tf.strings.split(standardize_text(tf.constant(texts)))
