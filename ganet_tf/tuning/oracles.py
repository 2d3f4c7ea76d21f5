"""The KerasTuner oracles of a search, the hand-set configuration as the first trial."""

import keras_tuner

from ganet_tf.errors import GANetInputError
from ganet_tf.tuning.search_config import OBJECTIVES


class _FirstTrialMixin:
    """Oracle mixin: the first trial of a project runs `first_values`.

    KerasTuner's random and Bayesian oracles start from random points; this
    lets a search include a known configuration (the hand-set one) so that
    the tuned result is compared with it on the same footing.
    """

    first_values = None

    def populate_space(self, trial_id):
        if self.first_values and not self.trials:
            return {"status": keras_tuner.engine.trial.TrialStatus.RUNNING, "values": dict(self.first_values)}
        return super().populate_space(trial_id)


class _RandomSearchOracle(_FirstTrialMixin, keras_tuner.oracles.RandomSearchOracle):
    pass


class _BayesianOptimizationOracle(_FirstTrialMixin, keras_tuner.oracles.BayesianOptimizationOracle):
    pass


def make_oracle(config):
    """The KerasTuner oracle of `config.tuner` for `config.objective`.

    With `config.hand_set_first` its first trial is `config.hand_set_values()`.
    """
    name, direction = OBJECTIVES[config.objective]
    objective = keras_tuner.Objective(name, direction)
    # KerasTuner reads seed 0 as "no seed": offset it to stay reproducible.
    seed = config.seed + 1
    first = config.hand_set_values() if config.hand_set_first else None
    if config.tuner == "random":
        oracle = _RandomSearchOracle(objective=objective, max_trials=config.max_trials, seed=seed)
        oracle.first_values = first
        return oracle
    if config.tuner == "bayesian":
        try:
            oracle = _BayesianOptimizationOracle(
                objective=objective,
                max_trials=config.max_trials,
                num_initial_points=config.initial_points,
                seed=seed,
            )
            oracle.first_values = first
            return oracle
        except ImportError:
            raise GANetInputError(
                "--tuner bayesian needs scikit-learn: pip install "
                "'keras-tuner[bayesian]' (or scikit-learn), or use --tuner random."
            ) from None
    oracle = keras_tuner.oracles.HyperbandOracle(
        objective=objective,
        max_epochs=config.epochs,
        factor=config.hyperband_factor,
        seed=seed,
    )
    # Hyperband sizes itself by its epochs; --max-trials caps it too.
    oracle.max_trials = config.max_trials
    return oracle
