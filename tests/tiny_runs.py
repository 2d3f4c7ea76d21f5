"""Tiny trained runs that test modules read (made once: `tests.made_once`)."""

from tests.eager import functions_run_eagerly


def train_tiny_runs(root, data_dir, dataset, limit, models):
    """`{model: folder}`: one epoch of each of `models` (`{model: test-gate
    options}`) on `limit` examples of `dataset`, written by `train --out`
    under `root`, with eager steps (one epoch of a few batches) and the
    training words only (no GloVe words: a small embedding to save and
    serve)."""
    from ganet_tf.training import TrainConfig
    from ganet_tf.training import train_and_evaluate

    folders = {}
    with functions_run_eagerly():
        for model, gates in models.items():
            folders[model] = str(root / model)
            tiny = {"limit": limit, "epochs": 1, "hidden": 4, "auxiliary_hidden_dim": 3, "verbose": 0}
            tiny["glove_vocabulary"] = 0
            config = TrainConfig(dataset=dataset, data_dir=data_dir, model=model, out=folders[model], **tiny, **gates)
            train_and_evaluate(config)
    return folders
