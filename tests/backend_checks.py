"""The checks `tests/test_backends.py` makes on a Keras backend: in the test
process on TensorFlow, and on another backend in one subprocess (`main`),
with TensorFlow unimportable."""

import sys
import traceback

import keras
import numpy as np


def _counts(model, x, training=False):
    """The share of open gates and of attended tokens, from the model's own gates."""
    from ganet_tf.models import build_explainer

    explainer = build_explainer(model)
    outputs = explainer(x, training=True) if training else explainer.predict(x, batch_size=len(x), verbose=0)
    real = x != 0
    lengths = real.sum(axis=1)
    gates = (keras.ops.convert_to_numpy(outputs["gates"]) > 0.5) & real
    attended = (keras.ops.convert_to_numpy(outputs["attention"]) > 0) & real
    return {"density": np.mean(gates.sum(1) / lengths), "attended_density": np.mean(attended.sum(1) / lengths)}


# Two bucket sizes keep the transformer's compiled branches few. No
# dropout: the builders' dropout layers draw from a generator of their own
# that restoring the variables does not restore (PyTorch's global one), and
# the count replays the training epoch's gates.
# Widths of 8 and one layer: what is counted is the gates, not the fit.
TINY = {"embedding_dim": 8, "hidden_dim": 8, "num_layers": 1, "attention_units": 8, "auxiliary_hidden_dim": 4}


def gate_metrics(prepared):
    """Fits both gated builders on prepared TREC ids (the file `prepared`)
    for one epoch of one batch, with validation (they fit, predict, and on
    another backend import nothing of TensorFlow), then counts the share of
    open gates and of attended tokens from the models' own gates
    (`build_explainer`): in validation and `evaluate` with the trained
    weights, and in training with the weights and random state the epoch
    started from (restored; not shuffled, as each row's noise follows its
    place in the batch). Returns the last line it printed."""
    from ganet_tf.data.prepared_dataset import load_prepared
    from ganet_tf.models import build_ganet
    from ganet_tf.models import build_ganet_transformer

    data = load_prepared(prepared)
    x, y = data.ids["train"][:64], data.labels["train"][:64]
    x_val, y_val = data.ids["validation"][:64], data.labels["validation"][:64]
    for build, options in (
        (build_ganet, {"dropout": 0.0, **TINY}),
        (
            build_ganet_transformer,
            {"dropout": 0.0, "sparse_training": True, "sparse_buckets": (0.5, 1.0), "num_heads": 2, **TINY},
        ),
    ):
        model = build(
            data.num_classes, vocabulary_size=data.vocabulary_size, sequence_length=x.shape[1], seed=0, **options
        )
        model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
        start = [keras.ops.convert_to_numpy(variable) for variable in model.variables]
        logs = model.fit(
            x, y, batch_size=len(x), validation_data=(x_val, y_val), validation_batch_size=32, shuffle=False, verbose=0
        ).history
        evaluated = model.evaluate(x_val, y_val, batch_size=32, return_dict=True, verbose=0)
        assert np.isfinite(logs["loss"][0]) and model.predict(x_val[:4], verbose=0).shape == (4, data.num_classes)
        trained = [keras.ops.convert_to_numpy(variable) for variable in model.variables]
        assert any(not np.allclose(a, w) for a, w in zip(start, trained, strict=True))
        validation = _counts(model, x_val)
        for variable, value in zip(model.variables, start, strict=True):
            variable.assign(value)
        training = _counts(model, x, training=True)
        for name in ("density", "attended_density"):
            assert abs(logs["val_" + name][0] - validation[name]) < 1e-6, (build.__name__, name, logs, validation)
            assert abs(evaluated[name] - validation[name]) < 1e-6, (build.__name__, name, evaluated, validation)
            assert abs(logs[name][0] - training[name]) < 1e-6, (build.__name__, name, logs, training)
            assert 0 < validation[name] < 1, validation
        print(build.__name__, {name: round(logs[name][0], 4) for name in sorted(logs)})
    if keras.backend.backend() != "tensorflow":  # imported nothing of TensorFlow
        assert not [name for name in sys.modules if name.split(".")[0] in ("tensorflow", "tensorflow_probability")]
    print("counted", keras.backend.backend())


def load_and_predict(folder):
    """Loads `folder`/model.keras (saved under TensorFlow) and writes its
    outputs for `folder`/inputs.npz to `folder`/outputs-BACKEND.npz."""
    import ganet_tf.layers  # noqa: F401 (registers the layers)

    model = keras.models.load_model(f"{folder}/model.keras")
    inputs = dict(np.load(f"{folder}/inputs.npz"))
    outputs = model.predict(inputs, verbose=0)
    np.savez(f"{folder}/outputs-{keras.backend.backend()}.npz", *[np.asarray(x) for x in keras.tree.flatten(outputs)])
    print("loaded", keras.backend.backend())


def main(prepared, saved=None):
    """`gate_metrics(prepared)`, then `load_and_predict(saved)` where given,
    in one interpreter: each prints its word and the backend when it
    passes, or its traceback; the exit status is 1 if either failed."""
    failed = False
    for check, argument in ((gate_metrics, prepared), (load_and_predict, saved)):
        if argument is None:
            continue
        try:
            check(argument)
        except Exception:
            print(f"{check.__name__} failed:", file=sys.stderr)
            traceback.print_exc()
            failed = True
    sys.exit(1 if failed else 0)
