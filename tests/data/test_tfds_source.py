"""The TFDS path of every registered dataset that names a TFDS builder.

No test downloads: the builders are constructed and prepared up to the
download step, where the download manager is stopped (or, for TREC, handed
the package's own copy of the files TFDS would download), so that a module
TFDS needs but `requirements.txt` lacks, a wrong builder name or a changed
label set fails here and not on a user's machine.
"""

import os

import numpy as np
import pytest

from ganet_tf.data.datasets import PACKAGED_DATA
from ganet_tf.data.local_datasets import read_trec
from ganet_tf.data.registry import DATASETS
from ganet_tf.data.registry import get_dataset_spec
from ganet_tf.data.tfds_source import label_ids
from ganet_tf.data.tfds_source import read_tfds
from ganet_tf.errors import GANetInputError

tfds = pytest.importorskip("tensorflow_datasets")

TFDS_SPECS = [spec for spec in DATASETS.values() if spec.tfds_name]


class _Offline(Exception):
    """Raised where TFDS would start downloading."""


def _refuse_downloads(monkeypatch):
    def refuse(self, urls, *args, **kwargs):
        raise _Offline(urls)

    for method in ("download", "download_and_extract"):
        monkeypatch.setattr(tfds.download.DownloadManager, method, refuse)


@pytest.mark.parametrize("spec", TFDS_SPECS, ids=lambda spec: spec.name)
def test_builder_is_prepared_up_to_its_download(spec, tmp_path, monkeypatch):
    builder = tfds.builder(spec.tfds_name, data_dir=str(tmp_path))
    features = builder.info.features
    for key in (*spec.tfds_text_keys, spec.tfds_label_key):
        assert key in features, f"{spec.tfds_name} has no feature {key!r}"
    # Its labels are ours under other ids: the map is a permutation.
    mapping = label_ids(spec, features[spec.tfds_label_key].names)
    assert sorted(mapping.tolist()) == list(range(len(spec.class_names)))
    _refuse_downloads(monkeypatch)
    with pytest.raises(_Offline):
        builder.download_and_prepare(download_config=tfds.download.DownloadConfig(try_download_gcs=False))


def test_trec_through_tfds_matches_the_local_reader(tmp_path, monkeypatch):
    # TFDS is handed the files it would download; its label ids (DESC, ENTY,
    # ABBR, HUM, NUM, LOC) come back as the paper's class ids.
    def packaged(self, urls, *args, **kwargs):
        return {key: os.path.join(PACKAGED_DATA, "trec", url.rsplit("/", 1)[-1]) for key, url in urls.items()}

    monkeypatch.setattr(tfds.download.DownloadManager, "download_and_extract", packaged)
    monkeypatch.setattr(tfds.download.DownloadManager, "download", packaged)
    real_load = tfds.load
    monkeypatch.setattr(tfds, "load", lambda *a, **k: real_load(*a, data_dir=str(tmp_path), **k))
    spec = get_dataset_spec("trec")
    through_tfds = read_tfds(spec)
    local = read_trec(os.path.join(PACKAGED_DATA, "trec"), list(spec.class_names))
    for split in ("train", "test"):
        tfds_label = dict(zip(*through_tfds[split], strict=True))
        local_texts, local_labels = local[split]
        assert len(through_tfds[split][0]) == len(local_texts)
        # TFDS drops one byte of one latin-1 question; every other text matches.
        pairs = zip(local_texts, local_labels, strict=True)
        agree = [tfds_label[text] == label for text, label in pairs if text in tfds_label]
        assert len(agree) >= len(local_texts) - 1
        assert all(agree)


def test_label_ids_refuse_another_label_set():
    spec = get_dataset_spec("imdb")
    assert label_ids(spec, ["neg", "pos"]).tolist() == [0, 1]
    assert label_ids(spec, ["pos", "neg"]).tolist() == [1, 0]
    with pytest.raises(GANetInputError, match="has the labels .*'negative', 'positive'.*not supported"):
        label_ids(spec, ["negative", "positive"])
    assert np.array_equal(label_ids(get_dataset_spec("sst2"), ["negative", "positive"]), [0, 1])


def test_offline_tfds_is_one_error_line(tmp_path, monkeypatch):
    monkeypatch.delenv("GANET_DATA_DIR", raising=False)
    _refuse_downloads(monkeypatch)
    real_load = tfds.load
    monkeypatch.setattr(tfds, "load", lambda *a, **k: real_load(*a, data_dir=str(tmp_path), **k))
    with pytest.raises(GANetInputError, match=r"Could not load imdb from TFDS \(_Offline\).*--data-dir"):
        read_tfds(get_dataset_spec("imdb"))
