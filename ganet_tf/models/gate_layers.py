"""The gate branch that every GA-Net model shares: auxiliary network ->
gate logits -> `GateSampler` -> `GateSparsity`."""

import math

import keras

from ganet_tf.layers.auxiliary_network import AuxiliaryNetwork
from ganet_tf.layers.gate_sampler import GateSampler
from ganet_tf.layers.gate_sparsity import GateSparsity

# The arguments of the GA-Net builders that configure the gate branch.
GATE_OPTIONS = (
    "auxiliary",
    "auxiliary_hidden_dim",
    "initial_gate_logit",
    "temperature",
    "penalty",
    "straight_through",
    "inference_mode",
    "gate_distribution",
    "target_density",
    "inference_density",
    "final_temperature",
    "anneal_steps",
    "seed",
)
# Gate options that builders may leave out (None then): the parameters of the
# adaptive inference modes.
OPTIONAL_GATE_OPTIONS = ("inference_ratio", "inference_mass")


def gated_tokens(embedded, options):
    """The gate branch of a GA-Net builder, applied to its embeddings.

    Resolves the defaults that follow from the target density
    (`resolve_gate_defaults`), makes the three `gate_layers` and runs them:
    auxiliary network -> gate logits -> `GateSampler` -> `GateSparsity`.

    Args:
        embedded: the embeddings `(batch, steps, dim)` the gates read.
        options: a mapping with a value for every name of `GATE_OPTIONS`
            and maybe of `OPTIONAL_GATE_OPTIONS`, e.g. the builder's
            `locals()` (its arguments of those names).

    Returns:
        `(gate_logits, gates)`, both `(batch, steps)`.
    """
    options = {
        **{name: options[name] for name in GATE_OPTIONS},
        **{name: options.get(name) for name in OPTIONAL_GATE_OPTIONS},
    }
    resolved = resolve_gate_defaults(
        options["initial_gate_logit"],
        options["target_density"],
        options["inference_mode"],
        options["inference_density"],
    )
    options["initial_gate_logit"], options["inference_mode"], options["inference_density"] = resolved
    auxiliary_network, sampler, sparsity = gate_layers(**options)
    gate_logits = auxiliary_network(embedded)
    return gate_logits, sparsity(sampler(gate_logits))


def target_density_argument(value):
    """The builders' `target_density` for a command-line or search-space value.

    There, a target density of 0 asks for the paper's fixed penalty, which
    the GA-Net builders take as `target_density=None`.

    Args:
        value: None or a density in [0, 1), e.g. `--target-density`.

    Returns:
        `value`, or None for 0.

    Example:

    >>> target_density_argument(0), target_density_argument(0.3)
    (None, 0.3)
    """
    return value or None


def resolve_gate_defaults(initial_gate_logit, target_density, inference_mode, inference_density):
    """The classifiers' defaults that follow from a target density.

    Returns `(initial_gate_logit, inference_mode, inference_density)`:
    without an explicit initial logit, logit(target_density) when a target
    in (0, 1) is set, else 0; without an explicit inference mode, `"top_k"`
    with a target (the density penalty sets how many gates are open, not
    where p_t sits relative to 0.5, so a threshold can close them all) and
    `"threshold"` without one (the paper); without an explicit inference
    density, `"top_k"` opens the target density.
    """
    if inference_mode is None:
        inference_mode = "top_k" if target_density else "threshold"
    if initial_gate_logit is None:
        initial_gate_logit = 0.0
        if target_density is not None and 0 < target_density < 1:
            initial_gate_logit = math.log(target_density / (1 - target_density))
    if inference_density is None and inference_mode == "top_k":
        inference_density = target_density
    return initial_gate_logit, inference_mode, inference_density


def gate_layers(
    auxiliary,
    auxiliary_hidden_dim,
    initial_gate_logit,
    temperature,
    penalty,
    straight_through,
    inference_mode,
    gate_distribution,
    target_density,
    inference_density,
    seed,
    final_temperature=None,
    anneal_steps=0,
    inference_ratio=None,
    inference_mass=None,
):
    """The three gate layers, named `auxiliary`, `gates` and `gate_sparsity`
    (`build_explainer` and the export read these names).

    Returns `(auxiliary_network, sampler, sparsity)`: the auxiliary network
    gives gate logits, the sampler turns them into gates, and the sparsity
    layer adds the gate penalty and tracks the density.
    """
    auxiliary_network = AuxiliaryNetwork(
        encoder=auxiliary,
        hidden_dim=auxiliary_hidden_dim,
        return_logits=True,
        gate_bias_initializer=keras.initializers.Constant(initial_gate_logit),
        name="auxiliary",
    )
    sampler = GateSampler(
        temperature=temperature,
        straight_through=straight_through,
        inference_mode=inference_mode,
        seed=seed,
        distribution=gate_distribution,
        inference_density=inference_density,
        final_temperature=final_temperature,
        anneal_steps=anneal_steps,
        inference_ratio=inference_ratio,
        inference_mass=inference_mass,
        name="gates",
    )
    sparsity = GateSparsity(penalty=penalty, target_density=target_density, name="gate_sparsity")
    return auxiliary_network, sampler, sparsity


def with_gate_inference(model, inference_mode, **parameters):
    """A copy of a GA-Net model whose test gates follow another rule.

    The gate probabilities `p_t` do not depend on the inference mode, so a
    trained model can be served, explained or scored under any rule of
    `GateSampler` without retraining: the copy has the same layers and
    weights, and its layer `gates` uses `inference_mode`.

    Args:
        model: a model from `ganet_tf.models` with a layer named `gates`
            (a `GateSampler`), e.g. a trained run's model.
        inference_mode: the new `inference_mode` of the gates.
        **parameters: the rule's parameters (`inference_density`,
            `inference_ratio`, `inference_mass`); the others keep their
            values.

    Returns:
        A new `keras.Model` with the weights of `model`.

    Example:

    >>> model = build_ganet(2, vocabulary_size=50)
    >>> relative = with_gate_inference(model, "relative", inference_ratio=0.5)
    >>> relative.get_layer("gates").inference_mode
    'relative'
    """
    unknown = sorted(set(parameters) - {"inference_density", "inference_ratio", "inference_mass"})
    if unknown:
        raise ValueError(
            "`parameters` may only be inference_density, inference_ratio or inference_mass. "
            f"Received: {', '.join(unknown)}"
        )
    config = model.get_config()
    gates = [layer for layer in config["layers"] if layer["config"].get("name") == "gates"]
    if len(gates) != 1:
        raise ValueError(f"`model` must have one layer named 'gates'. Received: model={model.name}")
    gates[0]["config"].update(inference_mode=inference_mode, **parameters)
    copy = model.__class__.from_config(config)
    copy.set_weights(model.get_weights())
    return copy
