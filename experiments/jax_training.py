"""Trains on a prepared dataset on any Keras backend as `python -m ganet_tf train` would: `train_spec`
(TensorFlow) reads the settings, `fit_and_evaluate` (no TensorFlow) fits and evaluates."""

import time
import types


def train_spec(flags, train_examples, dataset):
    """The JSON-ready spec of `train FLAGS` on prepared data: `model`, `seed`, `builder` (its arguments but the
    embeddings) and `fit`."""
    from experiments.runner import parse_train
    from ganet_tf.training.train import MONITORS
    from ganet_tf.training.train import model_arguments

    config = parse_train(flags)
    config.validate()
    splits = types.SimpleNamespace(train_texts=range(train_examples), name=dataset)
    builder = model_arguments(config, splits, embeddings=None)
    builder.pop("embeddings")
    fit = {name: getattr(config, name) for name in ("lr", "batch_size", "epochs", "patience", "monitor")}
    # `train`'s validation batches (`ganet_tf.training.distribution.training_datasets`).
    fit.update(mode=MONITORS[config.monitor], validation_batch_size=128)
    return {"flags": list(flags), "model": config.model, "seed": config.seed, "builder": builder, "fit": fit}


def fit_and_evaluate(spec, data, epochs=None, verbose=2):
    """Trains `spec` on the `PreparedArrays` `data` (`epochs`: a cap); the JSON-ready summary of its test."""
    import keras

    from ganet_tf.fitting.best_epoch_stopping import BestEpochStopping
    from ganet_tf.fitting.best_epoch_stopping import best_epoch
    from ganet_tf.fitting.epoch_timer import EpochTimer
    from ganet_tf.models import build_model
    from ganet_tf.models.gate_layers import gate_rule
    from ganet_tf.policy.non_finite_guard import NonFiniteGuard
    from ganet_tf.training.evaluate import evaluate_model

    fit = spec["fit"]
    keras.utils.set_random_seed(spec["seed"])
    embeddings = data.embeddings.astype("float32")
    model = build_model(spec["model"], data.num_classes, embeddings=embeddings, **spec["builder"])
    accuracy = keras.metrics.SparseCategoricalAccuracy(name="accuracy")
    model.compile(keras.optimizers.Adam(fit["lr"]), keras.losses.SparseCategoricalCrossentropy(), metrics=[accuracy])
    timer, stopping = EpochTimer(), BestEpochStopping(fit["monitor"], fit["mode"], fit["patience"])
    ids, labels, started = data.ids, data.labels, time.perf_counter()
    history = model.fit(
        ids["train"],
        labels["train"],
        batch_size=fit["batch_size"],
        epochs=epochs or fit["epochs"],
        callbacks=[NonFiniteGuard(), stopping, timer],
        validation_data=(ids["validation"], labels["validation"]),
        validation_batch_size=fit["validation_batch_size"],
        verbose=verbose,
    ).history
    train_seconds = round(time.perf_counter() - started, 2)
    test = evaluate_model(model, ids["test"], labels["test"], data.class_names)
    summary = {f"test_{key}": test[key] for key in ("accuracy", "density", "attended_density", "all_closed_rate")}
    summary.update(test_gates=gate_rule(model), epochs_trained=len(history["val_loss"]))
    summary.update(best_epoch=best_epoch(history[fit["monitor"]], fit["mode"]) + 1, train_seconds=train_seconds)
    summary.update(epoch_seconds=[round(s, 2) for s in timer.epoch_seconds], keras_backend=keras.backend.backend())
    return {**summary, "sequence_length": data.sequence_length, "train_examples": len(labels["train"])}
