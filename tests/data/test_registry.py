import pytest

from ganet_tf.data import load_dataset
from ganet_tf.data.dataset_spec import DatasetSpec
from ganet_tf.data.file_formats import read_label_text
from ganet_tf.data.registry import DATASETS
from ganet_tf.data.registry import LOCAL_WINDOWS
from ganet_tf.data.registry import get_dataset_spec
from ganet_tf.data.registry import local_window
from ganet_tf.data.tfds_source import read_tfds
from ganet_tf.errors import GANetInputError


def test_local_windows_are_the_papers():
    # Paper, Section 4: D = 40/16/8/8/4 on IMDB/AG News/SST-1/SST-2/TREC.
    assert LOCAL_WINDOWS == {"trec": 4, "sst1": 8, "sst2": 8, "imdb": 40, "ag_news": 16}
    assert local_window("imdb") == 40 and local_window("my_files") == 8
    assert local_window("my_files", default=5) == 5
    from ganet_tf.training.train import LOCAL_WINDOWS as from_train

    assert from_train is LOCAL_WINDOWS


def test_specs_and_unknown_name():
    assert list(DATASETS) == ["trec", "sst1", "sst2", "imdb", "ag_news"]
    assert get_dataset_spec("sst2").dev_file == "sst/stsa.binary.dev"
    assert [name for name, spec in DATASETS.items() if spec.dev_file] == ["sst1", "sst2"]
    assert get_dataset_spec("sst1").tfds_name is None
    with pytest.raises(GANetInputError, match="Unknown dataset 'mnist'.*'trec'"):
        get_dataset_spec("mnist")


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"class_names": ("only",)}, "at least two classes"),
        ({"local_window": 0}, "`local_window` must be a positive integer"),
        ({"tfds_splits": ("train",)}, "a train and a test split"),
    ],
)
def test_spec_validation(arguments, message):
    valid = dict(
        name="toy",
        class_names=("a", "b"),
        local_window=2,
        local_folder="toy",
        local_layout="DIR/toy/all.txt",
        read_local=lambda folder: {},
    )
    with pytest.raises(ValueError, match=message):
        DatasetSpec(**{**valid, **arguments})


@pytest.mark.parametrize("name, prefix", [("sst1", "stsa.fine"), ("sst2", "stsa.binary")])
def test_sst_validation_is_its_dev_file(data_dir, name, prefix):
    # SST has its own dev split: validation_fraction and seed do not apply.
    dev_texts, _ = read_label_text(f"{data_dir}/sst/{prefix}.dev")
    for fraction, seed in ((0.1, 0), (0.5, 7)):
        splits = load_dataset(name, data_dir, validation_fraction=fraction, seed=seed)
        assert splits.validation_texts == dev_texts


def test_missing_files_describe_the_layout(tmp_path):
    (tmp_path / "sst").mkdir()
    with pytest.raises(GANetInputError) as error:
        load_dataset("trec", str(tmp_path))
    message = str(error.value)
    assert "File not found" in message and "shared/data" not in message
    assert "Expected DIR/trec/train_5500.label and DIR/trec/TREC_10.label" in message
    with pytest.raises(GANetInputError, match=r"DIR/sst/stsa\.fine\.dev"):
        load_dataset("sst1", str(tmp_path))
    with pytest.raises(GANetInputError, match=r"DIR/ag_news/train\.csv"):
        load_dataset("ag_news", str(tmp_path))
    with pytest.raises(GANetInputError, match=r"DIR/imdb/aclImdb_v1_train_test\.tar\.gz"):
        load_dataset("imdb", str(tmp_path))
    with pytest.raises(GANetInputError, match=r"DIR/trec/, DIR/sst/") as error:
        load_dataset("trec", str(tmp_path / "nowhere"))
    assert "shared/data" not in str(error.value)


def test_dataset_without_tfds_copy_describes_the_layout():
    with pytest.raises(GANetInputError, match=r"sst1 is not in TFDS.*DIR/sst/stsa\.fine\.train"):
        read_tfds(get_dataset_spec("sst1"))
