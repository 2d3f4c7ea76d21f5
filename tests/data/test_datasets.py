import hashlib
import os

import numpy as np
import pytest

from ganet_tf.data import dataset_source
from ganet_tf.data import load_dataset
from ganet_tf.data import load_files
from ganet_tf.data.datasets import PACKAGED_DATA
from ganet_tf.data.datasets import read_delimited
from ganet_tf.data.datasets import read_label_text
from ganet_tf.errors import GANetInputError


def test_trec_from_shared_data(data_dir):
    splits = load_dataset("trec", data_dir, validation_fraction=0.1, seed=0)
    assert splits.class_names == ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
    assert len(splits.train_texts) + len(splits.validation_texts) == 5452
    assert len(splits.test_texts) == 500
    counts = np.bincount(np.concatenate([splits.train_labels, splits.validation_labels]))
    np.testing.assert_array_equal(counts, [86, 1162, 1250, 1223, 835, 896])
    # latin-1 text decoded, not replaced.
    assert not any("\ufffd" in text for text in splits.train_texts)
    again = load_dataset("trec", data_dir, validation_fraction=0.1, seed=0)
    assert again.validation_texts == splits.validation_texts
    other = load_dataset("trec", data_dir, validation_fraction=0.1, seed=1)
    assert other.validation_texts != splits.validation_texts


# The md5 sums that shared/data/README.md publishes for the distributed files.
TREC_MD5 = {"train_5500.label": "073462e3fcefaae31e00edb1f18d2d02", "TREC_10.label": "323a3554401d86e650717e2d2f942589"}


def test_trec_ships_with_the_package(monkeypatch):
    # No --data-dir and no GANET_DATA_DIR: the package's copy, byte for byte
    # the distributed files.
    monkeypatch.delenv("GANET_DATA_DIR", raising=False)
    source, folder = dataset_source("trec")
    assert source == "packaged" and folder == os.path.join(PACKAGED_DATA, "trec")
    for file, md5 in TREC_MD5.items():
        with open(os.path.join(folder, file), "rb") as handle:
            assert hashlib.md5(handle.read()).hexdigest() == md5, file
    splits = load_dataset("trec", validation_fraction=0.1, seed=0)
    assert len(splits.train_texts) + len(splits.validation_texts) == 5452 and len(splits.test_texts) == 500
    counts = np.bincount(np.concatenate([splits.train_labels, splits.validation_labels]))
    np.testing.assert_array_equal(counts, [86, 1162, 1250, 1223, 835, 896])
    # Only TREC ships: the others still need a data directory (or TFDS).
    assert dataset_source("sst2")[0] == "tfds"
    with pytest.raises(GANetInputError, match="sst1 is not in TFDS: pass --data-dir"):
        load_dataset("sst1")


def test_a_data_dir_wins_over_the_packaged_copy(data_dir, monkeypatch):
    monkeypatch.delenv("GANET_DATA_DIR", raising=False)
    assert dataset_source("trec", data_dir) == ("local", os.path.join(data_dir, "trec"))
    monkeypatch.setenv("GANET_DATA_DIR", data_dir)
    assert dataset_source("trec")[0] == "local"
    assert load_dataset("trec").test_texts == load_dataset("trec", PACKAGED_DATA).test_texts


@pytest.mark.parametrize(
    "name, sizes, classes",
    [("sst1", (8544, 1101, 2210), 5), ("sst2", (6920, 872, 1821), 2)],
)
def test_sst_from_shared_data(data_dir, name, sizes, classes):
    splits = load_dataset(name, data_dir)
    assert (len(splits.train_texts), len(splits.validation_texts), len(splits.test_texts)) == sizes
    assert splits.num_classes == classes
    assert set(np.unique(splits.test_labels)) == set(range(classes))


def test_data_dir_from_environment(data_dir, monkeypatch):
    monkeypatch.setenv("GANET_DATA_DIR", data_dir)
    assert len(load_dataset("sst2").test_texts) == 1821


def write(path, content, encoding="utf-8"):
    with open(path, "w", encoding=encoding) as handle:
        handle.write(content)
    return str(path)


def test_label_text_csv_and_tsv_files(tmp_path):
    train = write(tmp_path / "train.txt", "pos a fine film\nneg a dull one\n\npos great\nneg bad\n")
    test = write(tmp_path / "test.txt", "neg awful\npos lovely\n")
    splits = load_files(train, test, validation_fraction=0.25)
    assert splits.class_names == ["neg", "pos"]
    assert len(splits.train_texts) == 3 and len(splits.validation_texts) == 1
    assert list(splits.test_labels) == [0, 1]
    csv_file = write(tmp_path / "data.csv", 'label,text\npos,"good, really"\nneg,bad\n')
    assert read_delimited(csv_file) == (["good, really", "bad"], ["pos", "neg"])
    tsv_file = write(tmp_path / "data.tsv", "text\tlabel\ngood\tpos\nbad\tneg\n")
    assert load_files(tsv_file, validation_fraction=0.5).num_classes == 2


@pytest.mark.parametrize(
    "content, encoding, message",
    [
        ("", "utf-8", "empty"),
        ("\n  \n", "utf-8", "empty"),
        ("pos caf\xe9 au lait\nneg no\n", "latin-1", "not valid utf-8"),
        ("nolabelhere\nnotext\n", "utf-8", "no line with both a label and a text"),
    ],
)
def test_bad_label_text_files(tmp_path, content, encoding, message):
    path = write(tmp_path / "bad.txt", content, encoding)
    with pytest.raises(GANetInputError, match=message) as error:
        load_files(path)
    assert "\n" not in str(error.value)


def test_bad_csv_files(tmp_path):
    with pytest.raises(GANetInputError, match="no column 'label'"):
        read_delimited(write(tmp_path / "a.csv", "text,target\nhi,1\n"))
    with pytest.raises(GANetInputError, match="label is missing"):
        read_delimited(write(tmp_path / "b.csv", "text,label\nhi,\n"))
    with pytest.raises(GANetInputError, match="no examples"):
        read_delimited(write(tmp_path / "c.csv", "text,label\n"))


def test_unknown_and_single_labels(tmp_path):
    train = write(tmp_path / "train.txt", "pos good\nneg bad\n")
    test = write(tmp_path / "test.txt", "neutral meh\n")
    with pytest.raises(GANetInputError, match="unknown label 'neutral'"):
        load_files(train, test)
    with pytest.raises(GANetInputError, match="single label"):
        load_files(write(tmp_path / "one.txt", "pos good\npos fine\n"))


def test_missing_directory_file_and_dataset(tmp_path):
    with pytest.raises(GANetInputError, match="Data directory not found"):
        load_dataset("trec", str(tmp_path / "nowhere"))
    with pytest.raises(GANetInputError, match="File not found"):
        load_dataset("trec", str(tmp_path))
    with pytest.raises(GANetInputError, match="Unknown dataset"):
        load_dataset("mnist", str(tmp_path))
    with pytest.raises(GANetInputError, match="File not found"):
        read_label_text(os.path.join(str(tmp_path), "none.txt"))


def _imdb_tree(root):
    reviews = {
        "train/pos/0_9.txt": "A great film.<br /><br />Loved it.",
        "train/pos/1_8.txt": "Wonderful — naïve and warm.",
        "train/neg/0_2.txt": "Dull.",
        "train/neg/1_1.txt": "Awful, awful<br />film.",
        "train/unsup/0_0.txt": "not a labelled review",
        "test/pos/0_10.txt": "Superb.",
        "test/neg/0_3.txt": "Bad.",
    }
    for name, text in reviews.items():
        path = root / "aclImdb" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "aclImdb" / "README").write_text("readme")


@pytest.mark.parametrize("packed", [False, True])
def test_imdb_from_extracted_folder_or_tarball(tmp_path, packed):
    import tarfile

    source = tmp_path / ("source" if packed else "data/imdb")
    _imdb_tree(source)
    if packed:
        (tmp_path / "data" / "imdb").mkdir(parents=True)
        with tarfile.open(tmp_path / "data" / "imdb" / "aclImdb_v1_train_test.tar.gz", "w:gz") as tar:
            tar.add(source / "aclImdb", arcname="aclImdb")
    splits = load_dataset("imdb", str(tmp_path / "data"), validation_fraction=0.25)
    assert splits.class_names == ["negative", "positive"]
    assert len(splits.train_texts) == 3 and len(splits.validation_texts) == 1
    assert sorted(zip(splits.test_texts, splits.test_labels, strict=True)) == [("Bad.", 0), ("Superb.", 1)]
    everything = splits.train_texts + splits.validation_texts
    assert "Wonderful — naïve and warm." in everything
    assert "not a labelled review" not in everything


def test_imdb_shared_tarball(data_dir):
    splits = load_dataset("imdb", data_dir)
    assert len(splits.train_texts) + len(splits.validation_texts) == 25000
    assert len(splits.test_texts) == 25000
    np.testing.assert_array_equal(np.bincount(splits.test_labels), [12500, 12500])


def test_imdb_missing(tmp_path):
    (tmp_path / "imdb").mkdir()
    with pytest.raises(GANetInputError, match="No IMDB data"):
        load_dataset("imdb", str(tmp_path))


def test_ag_news_official_csv(tmp_path):
    folder = tmp_path / "ag_news" / "ag_news_csv"
    folder.mkdir(parents=True)
    (folder / "train.csv").write_text(
        '"3","Wall St. Bears","Short-sellers, Wall Street\'s dwindling\\\\band."\n'
        '"2","Cup final","Team wins."\n"1","Summit","Leaders meet."\n"4","New chip","Faster."\n'
    )
    (folder / "test.csv").write_text('"4","Space","Probe lands."\n')
    splits = load_dataset("ag_news", str(tmp_path), validation_fraction=0.25)
    assert splits.class_names == ["World", "Sports", "Business", "Sci/Tech"]
    assert list(splits.test_labels) == [3] and splits.test_texts == ["Space Probe lands."]
    texts = splits.train_texts + splits.validation_texts
    assert any(t.startswith("Wall St. Bears Short-sellers") and "\\\\" not in t for t in texts)
    (folder / "test.csv").write_text('"5","Bad","class"\n')
    with pytest.raises(GANetInputError, match="class\\(1-4\\)"):
        load_dataset("ag_news", str(tmp_path))
