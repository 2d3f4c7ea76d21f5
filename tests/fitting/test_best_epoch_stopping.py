import keras
import numpy as np
import pytest

from ganet_tf.fitting.best_epoch_stopping import BestEpochStopping

_RNG = np.random.default_rng(0)
X = _RNG.normal(size=(64, 4)).astype("float32")
# Random labels: the validation loss gets worse after the first epochs.
Y = _RNG.integers(0, 2, 64).astype("int32")


def _model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
    model.compile(keras.optimizers.SGD(1.0), "sparse_categorical_crossentropy")
    return model


def _fit(model, stopper, initial_epoch=0):
    history = model.fit(
        X[:48],
        Y[:48],
        validation_data=(X[48:], Y[48:]),
        epochs=12,
        initial_epoch=initial_epoch,
        batch_size=16,
        shuffle=False,
        verbose=0,
        callbacks=[stopper],
    )
    return history.history["val_loss"]


def _val_loss(model):
    return model.evaluate(X[48:], Y[48:], verbose=0)


@pytest.mark.parametrize("in_file", [False, True])
def test_fit_ends_with_the_best_epoch_and_stops_after_patience(tmp_path, in_file):
    path = str(tmp_path / "best.weights.h5") if in_file else None
    model = _model()
    stopper = BestEpochStopping("val_loss", "min", patience=2, path=path)
    losses = _fit(model, stopper)
    best = int(np.argmin(losses))
    assert best < len(losses) - 1  # the last epoch is not the best: restoring matters
    assert stopper.best_epoch == best
    assert len(losses) in (12, best + 1 + 2)
    assert _val_loss(model) == pytest.approx(losses[best], rel=1e-5)
    assert (tmp_path / "best.weights.h5").exists() == in_file


def test_memory_and_file_give_the_same_weights(tmp_path):
    in_memory, in_file = _model(), _model()
    _fit(in_memory, BestEpochStopping("val_loss", "min", patience=2))
    _fit(in_file, BestEpochStopping("val_loss", "min", patience=2, path=str(tmp_path / "best.weights.h5")))
    for a, b in zip(in_memory.get_weights(), in_file.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_resumed_attempt_goes_on_from_the_earlier_best(tmp_path):
    path = str(tmp_path / "best.weights.h5")
    earlier = _model()
    earlier.save_weights(path)
    # An unbeatable earlier best, one epoch of the patience of 2 spent:
    # the attempt trains one epoch and ends with the earlier best weights.
    stopper = BestEpochStopping("val_loss", "min", patience=2, path=path, best=0.0, waited=1)
    model = _model()
    model.fit(X[:48], Y[:48], epochs=1, verbose=0)  # other weights than the file's
    losses = _fit(model, stopper, initial_epoch=3)
    assert len(losses) == 1 and stopper.best == 0.0
    for a, b in zip(model.get_weights(), earlier.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_an_earlier_best_needs_its_weights_file():
    with pytest.raises(ValueError, match="pass `path` too"):
        BestEpochStopping("val_loss", "min", patience=2, best=0.5)
