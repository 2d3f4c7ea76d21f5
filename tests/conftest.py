import os

import pytest

from tests import tensorflow_blocker
from tests.eager import functions_run_eagerly
from tests.made_once import made_once

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# GANET_BLOCK_TENSORFLOW=1: TensorFlow cannot be imported (tests/test_backends.py).
if tensorflow_blocker.requested():
    tensorflow_blocker.install()
if os.environ.get("KERAS_BACKEND") == "torch":
    # The tests read layer outputs with NumPy (`np.asarray`, `assert_allclose`);
    # on PyTorch those need grad and `Tensor.__array__` refuses them: read
    # them detached, as `keras.ops.convert_to_numpy` does.
    import torch

    _tensor_array = torch.Tensor.__array__

    def _detached_array(self, *args, **kwargs):
        return _tensor_array(self.detach().cpu(), *args, **kwargs)

    torch.Tensor.__array__ = _detached_array

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.environ.get("GANET_DATA_DIR", os.path.join(os.path.dirname(REPO), "shared", "data"))


# CI sets GANET_REQUIRE_DATA=1: there a missing data folder fails the tests
# that need it instead of skipping them.
REQUIRE_DATA = os.environ.get("GANET_REQUIRE_DATA", "") not in ("", "0")
MISSING_DATA = (
    f"shared datasets not found at {SHARED_DATA}: set GANET_DATA_DIR to the "
    "shared/data folder to run the tests that need them"
)


def pytest_addoption(parser):
    parser.addoption("--run_large", action="store_true", default=False, help="also run the tests marked large")


def pytest_collection_modifyitems(config, items):
    """Skips the tests marked `large` unless `--run_large` is given, as
    keras-hub does: each takes a minute or more on 2 cores and checks a
    variant (another parameter, backend or distribution) of a path that a
    cheaper test in the default run covers."""
    if config.getoption("--run_large"):
        return
    skip = pytest.mark.skip(reason="large: run with --run_large")
    for item in items:
        if "large" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def data_dir():
    if not os.path.isdir(os.path.join(SHARED_DATA, "trec")):
        if REQUIRE_DATA:
            pytest.fail(MISSING_DATA + " (GANET_REQUIRE_DATA is set)")
        pytest.skip(MISSING_DATA)
    return SHARED_DATA


# The copy task on sentences of 2 to 6 symbols (the task's default, 10 to
# 100, only makes each step longer): the session's translator runs.
SHORT_COPY = ["--task", "copy", "--min-length", "2", "--max-length", "6"]


@pytest.fixture(scope="session")
def translator_run(tmp_path_factory):
    """A copy-task run written by `seq2seq --out`: 4 pairs, one epoch."""
    flags = [*SHORT_COPY, "--limit", "4", "--epochs", "1", "--hidden", "4", "--embedding-dim", "4"]
    return made_once(tmp_path_factory, "translator_run", lambda root: _seq2seq(root, [*flags, "--batch-size", "4"]))


def _seq2seq(root, flags):
    """The folder `seq2seq FLAGS --out` writes under `root`, trained and
    decoded eagerly (`tests.eager`: a tiny run on short sentences); the
    traced end-to-end run is tests/seq2seq/test_cli.py's."""
    from ganet_tf.cli import main

    with functions_run_eagerly():
        assert main(["seq2seq", *flags, "--verbose", "0", "--out", str(root / "run")]) == 0
    return str(root / "run")


@pytest.fixture(scope="session")
def gated_translator_run(tmp_path_factory):
    """A gated copy-task run: test gates top_k at 0.5, 8 pairs, one epoch."""
    flags = [*SHORT_COPY, "--limit", "8", "--epochs", "1", "--hidden", "4", "--embedding-dim", "4"]
    gates = [
        "--attention",
        "gated",
        "--target-density",
        "0.5",
        "--inference-mode",
        "top_k",
        "--inference-density",
        "0.5",
    ]
    return made_once(
        tmp_path_factory, "gated_translator_run", lambda root: _seq2seq(root, [*flags, *gates, "--batch-size", "4"])
    )


@pytest.fixture(scope="session")
def hierarchical_translator_run(tmp_path_factory):
    """A `hier-cnn` run folder (blocks of 2, 2 levels) on the copy task's
    symbols, as `seq2seq --out` lays it out but untrained: made in seconds,
    for what needs only the blocks (`translate --explain`), not good
    translations."""
    import json

    from ganet_tf.seq2seq import EncoderDecoder
    from ganet_tf.seq2seq.run_vocabularies import vocabularies_to_json
    from ganet_tf.seq2seq.vocabulary import END
    from ganet_tf.seq2seq.vocabulary import START
    from ganet_tf.seq2seq.word_vocabulary import WordVocabulary

    out = tmp_path_factory.mktemp("seq2seq") / "hier-cnn"
    out.mkdir()
    symbols = [f"s{index}" for index in range(20)]
    source, target = WordVocabulary(symbols), WordVocabulary([START, END, *symbols])
    model = EncoderDecoder(
        source.size, target.size, embedding_dim=4, hidden=4, attention="hier-cnn", levels=2, block_size=2, seed=0
    )
    model.build()
    model.save(out / "model.keras")
    (out / "vocabularies.json").write_text(json.dumps(vocabularies_to_json(source, target, "word")), encoding="utf-8")
    return str(out)


def pytest_terminal_summary(terminalreporter):
    """One line for all the tests skipped for want of the data."""
    skipped = [report for report in terminalreporter.stats.get("skipped", []) if MISSING_DATA in str(report.longrepr)]
    if skipped:
        terminalreporter.write_line(f"{len(skipped)} tests skipped: {MISSING_DATA}.")


@pytest.fixture
def eager_functions():
    """The test with `tf.function`s run eagerly (`tests.eager.functions_run_eagerly`)."""
    with functions_run_eagerly():
        yield
