"""One test harness for every ganet_tf layer, in the spirit of Keras'
`run_layer_test`: config round trip, `.keras` round trip, a fit step,
mixed precision and masked rows, each asserting real values; and Keras'
`run_layer_test` itself (`run_keras_layer_test`)."""

import keras
import numpy as np


def _tensor_inputs(inputs, call_kwargs, mask, mask_argument):
    """Named arrays a functional model feeds to the layer."""
    arrays = {"inputs": inputs, **call_kwargs}
    if mask is not None:
        arrays[mask_argument] = mask
    return arrays


def _call(layer, arrays, **kwargs):
    """Calls `layer` eagerly on `arrays` (`inputs` positional)."""
    rest = {name: value for name, value in arrays.items() if name != "inputs"}
    return layer(arrays["inputs"], **rest, **kwargs)


def _functional(layer, arrays):
    """A functional model calling `layer` on `keras.Input`s for `arrays`."""
    symbolic = {
        name: keras.Input(array.shape[1:], dtype="bool" if array.dtype == bool else array.dtype.name, name=name)
        for name, array in arrays.items()
    }
    kwargs = {name: tensor for name, tensor in symbolic.items() if name != "inputs"}
    outputs = layer(symbolic["inputs"], **kwargs)
    return keras.Model(symbolic, outputs)


def _floating(outputs):
    return [np.asarray(x) for x in keras.tree.flatten(outputs) if np.issubdtype(np.asarray(x).dtype, np.floating)]


def check_config_round_trip(layer_cls, init_kwargs):
    layer = layer_cls(**init_kwargs)
    config = layer.get_config()
    for name, value in init_kwargs.items():
        assert name in config, f"get_config() lacks the argument {name!r}"
        assert config[name] == value or isinstance(value, (dict, keras.initializers.Initializer)), (
            f"get_config()[{name!r}] is {config[name]!r}, built with {value!r}"
        )
    assert layer_cls.from_config(config).get_config() == config


def check_keras_round_trip(layer_cls, init_kwargs, arrays, tmp_path):
    model = _functional(layer_cls(**init_kwargs), arrays)
    before = model.predict(arrays, verbose=0)
    path = str(tmp_path / f"{layer_cls.__name__}.keras")
    model.save(path)
    reloaded = keras.models.load_model(path)
    after = reloaded.predict(arrays, verbose=0)
    for old, new in zip(keras.tree.flatten(before), keras.tree.flatten(after), strict=True):
        np.testing.assert_allclose(np.asarray(old), np.asarray(new), rtol=1e-6, atol=1e-6)


def check_fit_step(layer_cls, init_kwargs, arrays):
    model = _functional(layer_cls(**init_kwargs), arrays)
    first = keras.tree.flatten(model.outputs)[0]
    # tanh bounds outputs such as the large negative logits of masked steps.
    flat = keras.layers.Flatten()(keras.ops.tanh(keras.ops.cast(first, "float32")))
    head = keras.Model(model.inputs, keras.layers.Dense(1, name="head")(flat))
    head.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    layer_weights = [w for w in head.trainable_weights if not w.path.startswith("head")]
    before = [np.array(w) for w in layer_weights]
    targets = np.random.default_rng(0).normal(size=(len(arrays["inputs"]), 1))
    history = head.fit(arrays, targets.astype("float32"), epochs=2, batch_size=len(targets), verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    if before:
        assert any(not np.allclose(a, np.array(w)) for a, w in zip(before, layer_weights, strict=True)), (
            "a fit step left every weight of the layer unchanged"
        )
    else:
        # A layer without trainable weights must pass a training gradient
        # on to its floating `inputs`, or the fit step checked nothing.
        check_gradient_reaches_inputs(head, arrays, targets.astype("float32"))


def check_gradient_reaches_inputs(model, arrays, targets):
    gradient = input_gradient(model, arrays, targets)
    assert gradient is not None, "no gradient reaches `inputs` of a layer without weights"
    assert np.all(np.isfinite(gradient)) and np.any(gradient != 0), "the gradient on `inputs` is zero or not finite"


def input_gradient(model, arrays, targets):
    """The gradient (NumPy, or None) on `arrays["inputs"]` of the training
    loss `mean((model(arrays) - targets)^2) + sum(model.losses)`, with the
    backend's own differentiation."""
    rest = {name: keras.ops.convert_to_tensor(value) for name, value in arrays.items() if name != "inputs"}
    targets = keras.ops.convert_to_tensor(targets)  # a tensor minus a NumPy array is NumPy on PyTorch

    def loss(outputs, losses):
        return keras.ops.mean((outputs - targets) ** 2) + sum(losses)

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        inputs = tf.Variable(arrays["inputs"])
        with tf.GradientTape() as tape:
            value = loss(model({**rest, "inputs": inputs}, training=True), model.losses)
        gradient = tape.gradient(value, inputs)
        return None if gradient is None else gradient.numpy()
    if backend == "jax":
        import jax

        trainable = [v.value for v in model.trainable_variables]
        non_trainable = [v.value for v in model.non_trainable_variables]

        def value(inputs):
            outputs, _, losses = model.stateless_call(
                trainable, non_trainable, {**rest, "inputs": inputs}, training=True, return_losses=True
            )
            return loss(outputs, losses)

        return np.asarray(jax.grad(value)(keras.ops.convert_to_tensor(arrays["inputs"])))
    if backend == "torch":
        import torch

        inputs = torch.tensor(arrays["inputs"], requires_grad=True)
        loss(model({**rest, "inputs": inputs}, training=True), model.losses).backward()
        return None if inputs.grad is None else inputs.grad.cpu().numpy()
    raise ValueError(f"No input gradient on the {backend} backend. Received: backend={backend}")


def check_mixed_precision(layer_cls, init_kwargs, arrays):
    layer = layer_cls(**init_kwargs, dtype="mixed_float16")
    inputs = arrays["inputs"]
    half = inputs.astype("float16") if inputs.dtype == np.float32 else inputs
    outputs = _call(layer, {**arrays, "inputs": half})
    floats = _floating(outputs)
    assert floats, "the layer returned no floating output"
    assert floats[0].dtype == np.float16, f"mixed precision output is {floats[0].dtype}"
    for value in floats:
        assert np.all(np.isfinite(value)), "mixed precision gave non-finite values"


def check_masked_rows(
    layer_cls, init_kwargs, arrays, mask_argument="mask", masked_input="inputs", passes_through=False
):
    """Outputs are finite on every row (a row may be fully masked), and
    values at masked positions of `arrays[masked_input]` do not change the
    first output (with `passes_through`, its real positions only)."""
    layer = layer_cls(**init_kwargs)
    clean = _floating(_call(layer, arrays))
    for value in clean:
        assert np.all(np.isfinite(value)), "a masked row gave non-finite values"
    mask = np.asarray(arrays[mask_argument], bool)
    assert not mask.all(), "the mask masks nothing: the masked-row check would check nothing"
    noisy = np.array(arrays[masked_input], copy=True)
    noisy[~mask] = 1e3
    perturbed = _floating(_call(layer, {**arrays, masked_input: noisy}))
    if passes_through:
        clean[0], perturbed[0] = clean[0][mask], perturbed[0][mask]
    np.testing.assert_allclose(clean[0], perturbed[0], rtol=1e-5, atol=1e-5)


def run_layer_test(
    layer_cls,
    init_kwargs,
    inputs,
    tmp_path,
    call_kwargs=None,
    mask=None,
    mixed_precision=True,
    fit=True,
    mask_argument="mask",
    masked_input="inputs",
    passes_through=False,
):
    """Runs every generic check on `layer_cls(**init_kwargs)`.

    Args:
        layer_cls: the layer class.
        init_kwargs: constructor arguments (all must appear in its config).
        inputs: the first positional call argument, a NumPy array with a
            batch axis.
        tmp_path: pytest's `tmp_path`, for the `.keras` file.
        call_kwargs: further call arguments that are tensors, as NumPy
            arrays with a batch axis (e.g. `{"gates": ...}`).
        mask: optional boolean array `(batch, steps)` passed as `mask=`;
            it should hold a fully masked row. Enables the masked-row check.
        mixed_precision: whether to check a `mixed_float16` layer.
        fit: whether to check a fit step. A layer without trainable
            weights must then pass a finite, non-zero training gradient to
            `inputs`.
        mask_argument: the call argument that takes `mask` (e.g.
            `"values_mask"` for attention over a source).
        masked_input: the name of the array `mask` covers, `"inputs"` or a
            key of `call_kwargs`; the masked-row check perturbs it.
        passes_through: for layers whose output is their input (e.g.
            `GateSparsity`): the masked-row check compares the first output
            at the real positions only.
    """
    arrays = _tensor_inputs(inputs, dict(call_kwargs or {}), mask, mask_argument)
    check_config_round_trip(layer_cls, init_kwargs)
    check_keras_round_trip(layer_cls, init_kwargs, arrays, tmp_path)
    if fit:
        check_fit_step(layer_cls, init_kwargs, arrays)
    if mixed_precision:
        check_mixed_precision(layer_cls, init_kwargs, arrays)
    if mask is not None:
        check_masked_rows(layer_cls, init_kwargs, arrays, mask_argument, masked_input, passes_through)


def run_keras_layer_test(
    layer_cls,
    init_kwargs,
    *,
    expected_num_trainable_weights,
    expected_num_non_trainable_weights,
    expected_num_seed_generators,
    expected_output_shape,
    expected_num_losses=0,
    input_data=None,
    input_shape=None,
    call_kwargs=None,
    expected_output_dtype=None,
    supports_masking=None,
    run_training_check=True,
    run_mixed_precision_check=True,
):
    """Keras' own layer test, `keras.src.testing.TestCase.run_layer_test`,
    on `layer_cls(**init_kwargs)`: the config and serialization round trip,
    a layer built from the input shapes alone, a symbolic and an eager call
    (output shapes and dtypes; the counts of trainable and non-trainable
    weights, of non-trainable variables and of seed generators after each;
    the losses of the eager call), a compiled fit step and a
    `mixed_float16` call (outputs of the dtypes that `compute_output_spec`
    gives, float32 weights).

    The expected counts are required: derive them from the layer's code,
    not from a run. The non-trainable variables are the non-trainable
    weights and one state per seed generator.

    Keras' harness passes `call_kwargs` to the eager and symbolic calls but
    not to `build`, the fit step or `compute_output_spec`: a layer with
    several tensor inputs whose `build` needs their shapes (or whose `call`
    requires one, as `GatedSourceAttention`'s `gates`) takes them as
    `input_shape={"query_shape": ..., "value_shape": ...}` (Keras makes
    random float32 tensors of them, passed by name; the fit step, which
    passes them as one dict, must then be off).

    Args:
        layer_cls: the layer class.
        init_kwargs: constructor arguments.
        expected_num_trainable_weights: int.
        expected_num_non_trainable_weights: int.
        expected_num_seed_generators: int.
        expected_output_shape: a shape tuple, or a tuple of them for
            several outputs.
        expected_num_losses: int, the losses of one eager call with
            `call_kwargs`. Defaults to 0.
        input_data: the first call argument (a NumPy array), or None with
            `input_shape`.
        input_shape: a shape tuple, or a dict of `{argument}_shape` tuples.
        call_kwargs: further call arguments (e.g. `{"gates": ...}`).
        expected_output_dtype: the dtype of every output (at the layer's
            default dtype policy). Defaults to None (not checked).
        supports_masking: None, or the expected `supports_masking`.
        run_training_check: whether to fit one step.
        run_mixed_precision_check: whether to call a `mixed_float16` layer.
    """
    # Keras' harness is not public API; only the test suite imports it.
    from keras.src.testing.test_case import TestCase

    if expected_output_dtype is not None:
        expected_output_dtype = keras.tree.map_shape_structure(lambda _: expected_output_dtype, expected_output_shape)
    TestCase().run_layer_test(
        layer_cls,
        init_kwargs,
        input_data=input_data,
        input_shape=input_shape,
        call_kwargs=call_kwargs,
        expected_output_shape=expected_output_shape,
        expected_output_dtype=expected_output_dtype,
        expected_num_trainable_weights=expected_num_trainable_weights,
        expected_num_non_trainable_weights=expected_num_non_trainable_weights,
        expected_num_non_trainable_variables=expected_num_non_trainable_weights + expected_num_seed_generators,
        expected_num_seed_generators=expected_num_seed_generators,
        expected_num_losses=expected_num_losses,
        supports_masking=supports_masking,
        run_training_check=run_training_check,
        run_mixed_precision_check=run_mixed_precision_check,
    )
