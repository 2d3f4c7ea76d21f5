import keras_tuner
import numpy as np
import tensorflow as tf

# KerasTuner prints the traceback of every failed trial while its
# `config.DEBUG` is on (its default); `search` turns that off.
from keras_tuner.src import config as keras_tuner_config

from ganet_tf.data.file_formats import warn
from ganet_tf.policy.non_finite_guard import TrainingDivergedError

_FAILED = keras_tuner.engine.trial.TrialStatus.FAILED
_INVALID = keras_tuner.engine.trial.TrialStatus.INVALID


class CrossValidationTuner(keras_tuner.Tuner):
    """A KerasTuner `Tuner` that scores trials on a validation split or by k-fold CV.

    With `folds=1` a trial trains on `x, y` and is scored on
    `validation_data`, as `keras_tuner.Tuner` does. With `folds=K >= 2` it
    is scored as the paper scores its grid: `x, y` and `validation_data`
    are pooled, split (seeded) into K folds, and the trial trains K models,
    each on K-1 folds and validated on the remaining one; the oracle gets
    the objective and the best epoch averaged over the folds (and over
    `executions_per_trial`). The weights kept for the trial (see
    `load_model`) are those of the last fold.

    Any oracle works: `keras_tuner.oracles.RandomSearchOracle`,
    `BayesianOptimizationOracle` or `HyperbandOracle`. Hyperband's trials
    train from scratch for their bracket's epoch budget (`tuner/epochs`),
    as in Li et al. (2018), instead of resuming an earlier trial's weights,
    so that Hyperband combines with cross-validation.

    A trial whose training raises `TrainingDivergedError` (pass
    `ganet_tf.policy.non_finite_guard.NonFiniteGuard()` first in the
    `callbacks` of `search`) fails through KerasTuner's own mechanism,
    `keras_tuner.errors.FailedTrialError`: the oracle marks it FAILED, with
    the reason as its message, and never counts it among the best trials.
    Each failed trial is reported in one warning line on stderr, without
    KerasTuner's traceback (the trial's `message` keeps it).

    The tuner keeps the ids of the trials this process ran in `ran_trials`,
    which tells, in distributed tuning, which worker ran what.

    Args:
        oracle: a `keras_tuner.Oracle`.
        hypermodel: a `keras_tuner.HyperModel` whose `fit` takes
            `(hp, model, x, y, validation_data=..., **kwargs)`, such as
            `GANetHyperModel`.
        folds: int >= 1, the number of folds; 1 uses `validation_data`.
        fold_seed: seed of the split into folds.
        **kwargs: `keras_tuner.Tuner` arguments: `directory`,
            `project_name`, `overwrite`, `executions_per_trial`, ...

    Example:

    >>> import keras_tuner
    >>> from ganet_tf.tuning import GANetHyperModel
    >>> matrix = np.random.rand(1000, 50).astype("float32")  # e.g. GloVe rows
    >>> oracle = keras_tuner.oracles.BayesianOptimizationOracle(
    ...     objective=keras_tuner.Objective("val_accuracy", "max"),
    ...     max_trials=20,
    ... )
    >>> tuner = CrossValidationTuner(
    ...     oracle, GANetHyperModel(6, embeddings=matrix), folds=5,
    ...     directory="tuning_runs", project_name="trec",
    ... )
    >>> # Not run by the tests: 20 trials of 5 folds of 10 epochs on your data.
    >>> tuner.search(train_ids, train_labels, epochs=10,  # doctest: +SKIP
    ...              validation_data=(validation_ids, validation_labels))
    """

    def __init__(self, oracle, hypermodel=None, folds=1, fold_seed=0, **kwargs):
        if isinstance(folds, bool) or not isinstance(folds, int) or folds < 1:
            raise ValueError(f"`folds` must be an integer >= 1. Received: folds={folds}")
        super().__init__(oracle, hypermodel, **kwargs)
        self.folds = folds
        self.fold_seed = fold_seed
        self.ran_trials = []

    def run_trial(self, trial, x, y=None, validation_data=None, **kwargs):
        """Trains the trial's model(s); returns their histories.

        Args:
            trial: the `keras_tuner.engine.trial.Trial` to run.
            x, y: the training data, token ids and labels (or an unbatched
                `tf.data.Dataset` as `x`).
            validation_data: `(token_ids, labels)` or a dataset: the
                validation split with `folds=1`, pooled with `x, y` else.
            **kwargs: passed to the HyperModel's `fit` (`epochs`,
                `callbacks`, `verbose`).

        Returns:
            A list of `keras.callbacks.History`, one per fold and execution.
        """
        budget = trial.hyperparameters.values.get("tuner/epochs")
        if budget is not None:
            kwargs["epochs"] = budget
        try:
            if self.folds == 1:
                return super().run_trial(trial, x, y, validation_data=validation_data, **kwargs)
            histories = []
            for train_x, train_y, held_out in self._split(x, y, validation_data):
                histories.extend(super().run_trial(trial, train_x, train_y, validation_data=held_out, **kwargs))
            return histories
        except TrainingDivergedError as error:
            # The reason, without the advice meant for `train`.
            raise keras_tuner.errors.FailedTrialError(str(error).partition(";")[0]) from None

    def search(self, *fit_args, **fit_kwargs):
        debug, keras_tuner_config.DEBUG = keras_tuner_config.DEBUG, False
        try:
            return super().search(*fit_args, **fit_kwargs)
        finally:
            keras_tuner_config.DEBUG = debug

    def on_trial_end(self, trial):
        self.ran_trials.append(trial.trial_id)
        if trial.status in (_FAILED, _INVALID):
            warn(f"trial {trial.trial_id} failed and is not a candidate for the best: {failure_reason(trial)}")
        super().on_trial_end(trial)

    def _split(self, x, y, validation_data):
        if isinstance(x, tf.data.Dataset):
            yield from self._split_dataset(x, validation_data)
            return
        ids, labels = np.asarray(x), np.asarray(y)
        if validation_data is not None:
            ids = np.concatenate([ids, np.asarray(validation_data[0])])
            labels = np.concatenate([labels, np.asarray(validation_data[1])])
        if len(ids) < self.folds:
            raise ValueError(f"{self.folds} folds need at least {self.folds} examples; got {len(ids)}.")
        order = np.random.default_rng(self.fold_seed).permutation(len(ids))
        for held in np.array_split(order, self.folds):
            keep = np.ones(len(ids), dtype=bool)
            keep[held] = False
            yield ids[keep], labels[keep], (ids[held], labels[held])

    def _split_dataset(self, pool, validation_data):
        # Example i of the pool goes to fold i mod K.
        pool = _unbatched(pool)
        if validation_data is not None:
            pool = pool.concatenate(_unbatched(validation_data))
        numbered = pool.enumerate()
        folds = self.folds
        drop_number = lambda number, example: example  # noqa: E731
        for fold in range(folds):
            # tf.data traces each predicate here, while `fold` holds this value.
            held = numbered.filter(lambda n, _: n % folds == fold).map(drop_number)  # noqa: B023
            kept = numbered.filter(lambda n, _: n % folds != fold).map(drop_number)  # noqa: B023
            yield kept, None, held


def _unbatched(dataset):
    # Token ids of one example have rank 1.
    return dataset if dataset.element_spec[0].shape.rank == 1 else dataset.unbatch()


def failure_reason(trial):
    """The last line of a failed `trial`'s message: its error, without the
    class of KerasTuner's `FailedTrialError`."""
    lines = (trial.message or "").strip().splitlines()
    last = lines[-1].strip() if lines else "no message"
    name, separator, reason = last.partition(": ")
    return reason if separator and name.endswith("FailedTrialError") else last
