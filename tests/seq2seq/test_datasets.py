import gzip

import numpy as np
import pytest

from ganet_tf.cli import main
from ganet_tf.errors import GANetInputError
from ganet_tf.seq2seq.datasets import load_task
from ganet_tf.seq2seq.datasets import synthetic_pairs
from ganet_tf.seq2seq.vocabulary import build_vocabulary
from ganet_tf.seq2seq.vocabulary import detokenize
from ganet_tf.seq2seq.vocabulary import encode
from ganet_tf.seq2seq.vocabulary import make_dataset
from ganet_tf.seq2seq.vocabulary import vectorizer_from_vocabulary


def write_multi30k(folder, de_lines, en_lines):
    (folder / "multi30k").mkdir()
    for stem in ("train", "val", "test_2016_flickr"):
        for suffix, lines in (("de", de_lines), ("en", en_lines)):
            with gzip.open(folder / "multi30k" / f"{stem}.{suffix}.gz", "wt", encoding="utf-8") as f:
                f.write("".join(line + "\n" for line in lines))


def test_multi30k_splits_and_tokenisation(data_dir):
    splits = load_task("multi30k", data_dir, limit=50)
    assert {k: len(v[0]) for k, v in splits.items()} == {"train": 50, "val": 50, "test": 50}
    assert splits["val"][0][0] == "Eine Gruppe von Männern lädt Baumwolle auf einen Lastwagen"
    assert splits["val"][1][1] == "A man sleeping in a green room on a couch."
    vocabulary = build_vocabulary(splits["val"][1], target=True)
    assert vocabulary[:2] == ["[start]", "[end]"] and "a" in vocabulary and "." in vocabulary
    vectorizer = vectorizer_from_vocabulary(vocabulary)
    (ids,) = encode(vectorizer, ["A man, sleeping."], target=True)
    full = ["", "[UNK]"] + vocabulary
    assert [full[i] for i in ids] == ["[start]", "a", "man", ",", "sleeping", ".", "[end]"]
    assert detokenize(["a", "man", ",", "sleeping", "."]) == "a man, sleeping."


def test_full_multi30k_line_counts(data_dir):
    splits = load_task("multi30k", data_dir)
    assert [len(splits[s][0]) for s in ("train", "val", "test")] == [29000, 1014, 1000]
    assert all(len(s) == len(t) for s, t in splits.values())


def test_synthetic_tasks():
    sources, targets = synthetic_pairs("reverse", 200, seed=3)
    lengths = [len(s.split()) for s in sources]
    assert min(lengths) >= 10 and max(lengths) <= 100 and max(lengths) > 80
    assert all(t.split() == s.split()[::-1] for s, t in zip(sources, targets, strict=True))
    copy = load_task("copy", limit=5)
    assert [len(copy[s][0]) for s in ("train", "val", "test")] == [5, 5, 5]
    assert copy["train"][0] != copy["test"][0] and copy["train"][0] == copy["train"][1]


@pytest.mark.parametrize(
    "de_lines, en_lines, message",
    [
        (["Ein Hund.", "Zwei Hunde."], ["A dog."], "has 2 lines but"),
        (["Ein Hund.", ""], ["A dog.", "Nothing."], "Empty source sentence on line 2"),
        ([], [], "holds no sentences"),
    ],
)
def test_bad_parallel_files_give_one_error_line(tmp_path, capsys, de_lines, en_lines, message):
    write_multi30k(tmp_path, de_lines, en_lines)
    with pytest.raises(GANetInputError, match=message):
        load_task("multi30k", str(tmp_path))
    code = main(["seq2seq", "--task", "multi30k", "--data-dir", str(tmp_path), "--epochs", "1"])
    error = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(error) == 1 and error[0].startswith("ganet_tf: error: ")
    assert message in error[0]


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--task", "translate"], "Unknown --task 'translate'"),
        (["--attention", "local"], "Unknown --attention 'local'"),
        (["--levels", "1", "--attention", "hier-cnn"], "--levels must be an integer >= 2"),
        (["--limit", "0"], "--limit must be a positive integer"),
        (["--buckets", "-1"], "--buckets must be an integer >= 0"),
        (["--attention", "gated", "--inference-mode", "top_k", "--target-density", "0"], "--inference-density"),
    ],
)
def test_bad_arguments_give_one_error_line(capsys, arguments, message):
    code = main(["seq2seq", *arguments])
    error = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and error == [error[0]] and error[0].startswith("ganet_tf: error: ")
    assert message in error[0]


def _pairs(count, seed):
    """Random id rows: sources of 1-39 tokens whose first id names the pair
    (its index + 2), targets (start and end ids included) 1-3 tokens longer,
    as a translation's length follows its source's."""
    rng = np.random.default_rng(seed)
    sources = [
        np.concatenate([[index + 2], rng.integers(2, 50, size=n - 1)]).astype("int32")
        for index, n in enumerate(rng.integers(1, 40, size=count))
    ]
    targets = [rng.integers(2, 50, size=len(s) + rng.integers(1, 4)).astype("int32") for s in sources]
    return sources, targets


def test_length_buckets_batch_every_pair_once_padded_to_its_batch():
    sources, targets = _pairs(300, seed=0)
    dataset = make_dataset(sources, targets, batch_size=16, shuffle=True, seed=0, buckets=4)
    bucketed_steps, batches = 0, 0
    for epoch in range(2):  # reshuffled epochs: the same pairs, as many batches as stated
        seen = []
        for inputs, target_out in dataset:
            source, target_in = inputs["source"].numpy(), inputs["target_in"].numpy()
            source_lengths, target_lengths = (source != 0).sum(1), (target_out.numpy() != 0).sum(1)
            # padded to the batch's own longest source and target, no further
            assert source.shape[1] == source_lengths.max() and target_in.shape[1] == target_lengths.max()
            for row, length in enumerate(source_lengths):
                index = source[row, 0] - 2
                np.testing.assert_array_equal(source[row, :length], sources[index])
                np.testing.assert_array_equal(target_in[row, : target_lengths[row]], targets[index][:-1])
                seen.append(index)
            bucketed_steps += max(source.shape[1], target_in.shape[1]) if epoch == 0 else 0
            batches += 1
        assert sorted(seen) == list(range(300))
    assert batches == 2 * int(dataset.cardinality())
    # less padding than random batches: the recurrent steps a pass runs
    random_steps = sum(
        max(inputs["source"].shape[1], inputs["target_in"].shape[1])
        for inputs, _ in make_dataset(sources, targets, batch_size=16, shuffle=True, seed=0)
    )
    assert bucketed_steps < 0.8 * random_steps
