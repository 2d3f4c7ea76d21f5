"""One tiny GA-Net and one soft-attention run per session, exported once."""

import pytest

from ganet_tf.export import export_saved_model
from tests.made_once import made_once
from tests.tiny_runs import train_tiny_runs

MODELS = ("ganet", "soft")


@pytest.fixture(scope="session")
def runs(data_dir, tmp_path_factory):
    """`{model: folder written by train --out}` of tiny TREC runs."""
    models = {model: {} for model in MODELS}
    return made_once(tmp_path_factory, "export_runs", lambda root: train_tiny_runs(root, data_dir, "trec", 120, models))


@pytest.fixture(scope="session")
def exports(runs, tmp_path_factory):
    """`(base, {model: version folder})`: both runs exported under one base."""

    def export(folder):
        base = str(folder / "saved_models")
        return base, {model: export_saved_model(run, f"trec_{model}", base=base) for model, run in runs.items()}

    return tuple(made_once(tmp_path_factory, "exports", export))
