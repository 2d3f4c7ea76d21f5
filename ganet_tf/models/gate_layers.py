"""The gate branch that every GA-Net model shares: auxiliary network ->
gate logits -> `GateSampler` -> `GateSparsity`."""

import math

import keras

from ganet_tf.layers.auxiliary_network import AuxiliaryNetwork
from ganet_tf.layers.gate_sampler import MODE_PARAMETERS
from ganet_tf.layers.gate_sampler import GateSampler
from ganet_tf.layers.gate_sparsity import GateSparsity
from ganet_tf.layers.uninformed_gates import RULES as UNINFORMED_RULES
from ganet_tf.layers.uninformed_gates import UninformedGates

# The models of `MODEL_BUILDERS` with this gate branch.
GATED_MODELS = ("ganet", "ganet_transformer")

# The gate options of the GA-Net builders (`build_ganet`,
# `build_ganet_transformer`, their `**gate_options`) with their defaults: the
# one place of their names, which `train` (`TrainConfig`) and the tuning
# spell alike. `build_ganet` documents them.
GATE_DEFAULTS = {
    "auxiliary": "bilstm",
    "auxiliary_hidden_dim": 20,
    "initial_gate_logit": None,
    "temperature": 1.0,
    "penalty": 1e-4,
    "straight_through": False,
    "inference_mode": None,
    "gate_distribution": "relaxed_bernoulli",
    "target_density": 0.3,
    "inference_density": None,
    "final_temperature": None,
    "anneal_steps": 0,
    "inference_ratio": None,
    "inference_mass": None,
}


def with_gate_defaults(options):
    """The gate options a GA-Net builder was given, the others at their defaults.

    Args:
        options: a mapping of names of `GATE_DEFAULTS` to values, e.g. the
            builder's `**gate_options`.

    Returns:
        A dict with a value for every name of `GATE_DEFAULTS`; an unknown
        name raises `TypeError`, as an unexpected keyword argument does.

    Example:

    >>> with_gate_defaults({"temperature": 0.5})["temperature"], with_gate_defaults({})["penalty"]
    (0.5, 0.0001)
    """
    unknown = sorted(set(options) - set(GATE_DEFAULTS))
    if unknown:
        name = unknown[0]
        raise TypeError(
            f"`{name}` is not an argument of the GA-Net builders: the gate options are {list(GATE_DEFAULTS)}. "
            f"Received: {name}={options[name]!r}"
        )
    return {**GATE_DEFAULTS, **options}


def gated_tokens(embedded, options, seed=None, target_rule="top_k", mask=None):
    """The gate branch of a GA-Net builder, applied to its embeddings.

    Resolves the defaults that follow from the target density
    (`resolve_gate_defaults`; the gates of `UNINFORMED_RULES` test with
    `"threshold"`, which opens the tokens they chose), makes the three
    `gate_layers` and runs them:
    auxiliary network -> gate logits -> `GateSampler` -> `GateSparsity`.

    Args:
        embedded: the embeddings `(batch, steps, dim)` the gates read.
        options: a value for every name of `GATE_DEFAULTS`
            (`with_gate_defaults`).
        seed: seed of the gate sampler.
        target_rule: the builder's test rule with a target density and no
            `inference_mode`, `"top_k"` or `"nucleus"`.
        mask: the padding mask `(batch, steps)`, given to all three layers;
            defaults to the Keras mask of `embedded`, which a layer that
            does not carry masks (a convolution stem) leaves out.

    Returns:
        `(gate_logits, gates)`, both `(batch, steps)`.
    """
    options = dict(options)
    if options["auxiliary"] in UNINFORMED_RULES and options["inference_mode"] is None:
        # Their logits are +-20: p > 0.5 opens exactly the tokens they chose.
        options["inference_mode"] = "threshold"
    resolved = resolve_gate_defaults(
        options["initial_gate_logit"],
        options["target_density"],
        options["inference_mode"],
        options["inference_density"],
        inference_mass=options["inference_mass"],
        target_rule=target_rule,
    )
    (
        options["initial_gate_logit"],
        options["inference_mode"],
        options["inference_density"],
        options["inference_mass"],
    ) = resolved
    auxiliary_network, sampler, sparsity = gate_layers(**options, seed=seed)
    # Keras fills a mask given as None from the input's own.
    gate_logits = auxiliary_network(embedded, mask=mask)
    return gate_logits, sparsity(sampler(gate_logits, mask=mask), mask=mask)


# The test rules that open about a target density rho: `top_k` opens
# round(rho T) tokens of every text, `nucleus` at pi = rho at most
# ceil(rho T), fewer where the gate probabilities are concentrated.
TARGET_RULES = ("top_k", "nucleus")


def resolve_gate_defaults(
    initial_gate_logit,
    target_density,
    inference_mode,
    inference_density,
    inference_mass=None,
    target_rule="top_k",
):
    """The classifiers' defaults that follow from a target density.

    Returns `(initial_gate_logit, inference_mode, inference_density,
    inference_mass)`:

    - without an explicit initial logit, logit(target_density) when a
      target in (0, 1) is set, else 0;
    - without an explicit inference mode, `"top_k"` when only an
      `inference_density` is given, `"nucleus"` when only an
      `inference_mass` is; else `target_rule` with a target (the
      density penalty sets how many gates are open, not where p_t sits
      relative to 0.5, so a threshold can close them all) and
      `"threshold"` without one (the paper);
    - without an explicit parameter, `"top_k"` opens the share rho and
      `"nucleus"` the mass pi = rho of the target density. The top k
      tokens of a text of T hold at least k / T of its normalised gate
      mass, so nucleus at pi = rho opens at most ceil(rho T) tokens (up to
      float rounding): as many as `top_k` where the p_t are alike, fewer
      where a few stand out.
    """
    if target_rule not in TARGET_RULES:
        raise ValueError(f"`target_rule` must be one of {TARGET_RULES}. Received: target_rule={target_rule}")
    if inference_mode is None:
        if inference_density is not None and inference_mass is None:
            inference_mode = "top_k"
        elif inference_mass is not None and inference_density is None:
            inference_mode = "nucleus"
        else:
            inference_mode = target_rule if target_density else "threshold"
    if initial_gate_logit is None:
        initial_gate_logit = 0.0
        if target_density is not None and 0 < target_density < 1:
            initial_gate_logit = math.log(target_density / (1 - target_density))
    if inference_density is None and inference_mode == "top_k":
        inference_density = target_density
    if inference_mass is None and inference_mode == "nucleus":
        inference_mass = target_density
    return initial_gate_logit, inference_mode, inference_density, inference_mass


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
    layer adds the gate penalty and tracks the density. An `auxiliary` of
    `UNINFORMED_RULES` (`"random"`, `"strided"`) makes an `UninformedGates`
    instead, choosing the share `inference_density` (else
    `target_density`) of the tokens without weights: the controls of the
    learned gates.
    """
    if auxiliary in UNINFORMED_RULES:
        density = inference_density or target_density
        if not density:
            raise ValueError(
                f"`auxiliary={auxiliary!r}` chooses a share rho of the tokens: give rho as `target_density` or "
                f"`inference_density`. Received: target_density={target_density}, "
                f"inference_density={inference_density}"
            )
        # Another seed than the sampler's: its first noise would be the same.
        choice_seed = None if seed is None else seed + 1
        auxiliary_network = UninformedGates(rule=auxiliary, density=density, seed=choice_seed, name="auxiliary")
    else:
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

    >>> from ganet_tf.models import build_ganet
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


def gate_rule(model):
    """The test-gate rule of a GA-Net model: `{"inference_mode": MODE}` plus
    the mode's parameter (`MODE_PARAMETERS`) when it has one, read from its
    layer `gates`; None for a model without that layer.

    Example:

    >>> from ganet_tf.models import build_ganet
    >>> gate_rule(build_ganet(2, vocabulary_size=50))
    {'inference_mode': 'nucleus', 'inference_mass': 0.3}
    """
    sampler = next((layer for layer in model.layers if layer.name == "gates"), None)
    if sampler is None:
        return None
    rule = {"inference_mode": sampler.inference_mode}
    parameter = MODE_PARAMETERS.get(sampler.inference_mode)
    if parameter is not None:
        rule[parameter] = getattr(sampler, parameter)
    return rule
