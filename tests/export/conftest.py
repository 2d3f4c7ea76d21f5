"""One tiny GA-Net and one soft-attention run per session, exported once."""

import pytest

from ganet_tf.export import export_saved_model
from tests.eager import functions_run_eagerly

MODELS = ("ganet", "soft")


@pytest.fixture(scope="session")
def runs(data_dir, tmp_path_factory):
    """`{model: folder written by train --out}` of tiny TREC runs."""
    from ganet_tf.training import TrainConfig
    from ganet_tf.training import train_and_evaluate

    root = tmp_path_factory.mktemp("runs")
    folders = {}
    for model in MODELS:
        out = root / model
        with functions_run_eagerly():
            train_and_evaluate(
                TrainConfig(
                    dataset="trec",
                    data_dir=data_dir,
                    model=model,
                    limit=120,
                    epochs=1,
                    hidden=4,
                    aux_hidden=3,
                    verbose=0,
                    out=str(out),
                )
            )
        folders[model] = str(out)
    return folders


@pytest.fixture(scope="session")
def exports(runs, tmp_path_factory):
    """`(base, {model: version folder})`: both runs exported under one base."""
    base = tmp_path_factory.mktemp("exports") / "saved_models"
    paths = {model: export_saved_model(folder, f"trec_{model}", base=str(base)) for model, folder in runs.items()}
    return str(base), paths
