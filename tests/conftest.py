import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.environ.get(
    "GANET_DATA_DIR", os.path.join(os.path.dirname(REPO), "shared", "data")
)


@pytest.fixture(scope="session")
def data_dir():
    if not os.path.isdir(os.path.join(SHARED_DATA, "trec")):
        pytest.fail(
            f"The shared datasets are missing at {SHARED_DATA}: put shared/ "
            "beside the repository or set GANET_DATA_DIR."
        )
    return SHARED_DATA
