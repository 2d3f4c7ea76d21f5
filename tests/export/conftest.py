"""One tiny GA-Net and one soft-attention run per session, exported once."""

import pytest

from ganet_tf.export import export_saved_model
from tests.eager import functions_run_eagerly
from tests.made_once import made_once

MODELS = ("ganet", "soft")


@pytest.fixture(scope="session")
def runs(data_dir, tmp_path_factory):
    """`{model: folder written by train --out}` of tiny TREC runs."""
    return made_once(tmp_path_factory, "export_runs", lambda root: _train(data_dir, root))


def _train(data_dir, root):
    from ganet_tf.training import TrainConfig
    from ganet_tf.training import train_and_evaluate

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

    def export(folder):
        base = str(folder / "saved_models")
        return base, {model: export_saved_model(run, f"trec_{model}", base=base) for model, run in runs.items()}

    return tuple(made_once(tmp_path_factory, "exports", export))
