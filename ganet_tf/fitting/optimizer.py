"""`compile_and_build`: a model compiled, its optimizer's variables made before the first step."""


def build_optimizer(model):
    """Builds the optimizer of the compiled `model` on its trainable variables.

    Without a distribution strategy, Keras' TensorFlow trainer builds the
    optimizer inside the first traced train step; TensorFlow then traces
    that step a second time, as a function that made variables on its first
    call must be. Built here, the step is traced once (a TREC smoke run
    trains about a third faster). A model not yet built is left as it is.

    Args:
        model: a compiled `keras.Model`.

    Returns:
        `model`.
    """
    optimizer = model.optimizer
    if model.built and model.trainable_variables and not optimizer.built:
        optimizer.build(model.trainable_variables)
    return model


def compile_and_build(model, optimizer, loss, **options):
    """Compiles `model` and builds its optimizer (`build_optimizer`).

    The one compile of the models that `train` and `seq2seq` fit.

    Args:
        model: a `keras.Model`, built or not.
        optimizer: a `keras.optimizers.Optimizer`.
        loss: the training loss.
        **options: the other keyword arguments of `model.compile`
            (`metrics`, `jit_compile`, ...).

    Returns:
        `model`.

    Example:

    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
    >>> model = compile_and_build(model, keras.optimizers.Adam(1e-3), "sparse_categorical_crossentropy")
    >>> model.optimizer.built
    True
    """
    model.compile(optimizer=optimizer, loss=loss, **options)
    return build_optimizer(model)
