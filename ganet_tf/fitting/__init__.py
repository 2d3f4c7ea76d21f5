"""The fit loop that `train` and `seq2seq` share, resumable with a `--backup-dir`.

`fit_resumably` trains with the reliability policy's callbacks
(`ganet_tf.policy`), early stopping that keeps the best epoch
(`BestEpochStopping`), the epoch timer (`EpochTimer`) and an optional time
budget (`TimeBudget`), and resumes a
killed run from its last finished epoch; `compile_and_build` compiles a
model and makes its optimizer's variables before the first step
(`build_optimizer`). The package
lies below the commands that fit (`docs/architecture.md`) and imports none
of them.
"""

from ganet_tf.fitting.best_epoch_stopping import BestEpochStopping
from ganet_tf.fitting.epoch_timer import EpochTimer
from ganet_tf.fitting.optimizer import build_optimizer
from ganet_tf.fitting.optimizer import compile_and_build
from ganet_tf.fitting.resumable_fit import FittedRun
from ganet_tf.fitting.resumable_fit import fit_resumably
from ganet_tf.fitting.time_budget import TimeBudget

__all__ = [
    "BestEpochStopping",
    "EpochTimer",
    "FittedRun",
    "TimeBudget",
    "build_optimizer",
    "compile_and_build",
    "fit_resumably",
]
