"""`TrainConfig`, the flags of `train`, and their checks.

Imports nothing of Keras or TensorFlow, so that `train`'s parser reads its
defaults here (`ganet_tf.training.commands`); what the checks need of the
models, layers and distribution is imported inside them.
"""

import dataclasses

from ganet_tf.errors import GANetInputError
from ganet_tf.policy.flag_values import check_finite_fields
from ganet_tf.policy.flag_values import check_number

# Quantities early stopping and checkpointing may watch, and their direction.
MONITORS = {"val_loss": "min", "val_accuracy": "max"}
# The learning-rate schedules of `--lr-schedule` (None: a constant `--lr`).
LR_SCHEDULES = (None, "cosine")
# Attention heads of the Transformer models by default; `--hidden` is their
# width (`--num-heads` sets another number).
TRANSFORMER_HEADS = 4


@dataclasses.dataclass
class TrainConfig:
    """Everything that decides one training run (the `train` flags)."""

    dataset: str = "trec"
    model: str = "ganet"
    data_dir: str = None
    train_file: str = None
    test_file: str = None
    format: str = None
    encoding: str = "utf-8"
    text_column: str = "text"
    label_column: str = "label"
    epochs: int = 30
    seed: int = 0
    out: str = None
    auxiliary: str = "bilstm"
    auxiliary_hidden_dim: int = 20
    temperature: float = 0.5
    # Anneal --temperature to final_temperature over the first anneal_epochs
    # epochs (None: a fixed --temperature, the paper's).
    final_temperature: float = None
    anneal_epochs: int = 0
    initial_gate_logit: float = None
    penalty: float = 1e-2
    # A multiplier steers the gate density to target_density and the test
    # gates are the fewest most probable tokens holding that share of the
    # text's gate mass (nucleus; ganet_transformer: the round(rho T) most
    # probable, top_k). 0: the paper's fixed --penalty, test gates p > 0.5.
    target_density: float = 0.3
    gate_distribution: str = "relaxed_bernoulli"
    inference_mode: str = None  # nucleus (ganet) or top_k with a target density, else threshold
    inference_density: float = None
    # The parameters of --inference-mode relative and nucleus.
    inference_ratio: float = None
    inference_mass: float = None
    fallback: str = "all"
    lr: float = 1e-3
    # None: a constant --lr; "cosine": --lr decayed to 0 over the epochs' updates (Keras' CosineDecay).
    lr_schedule: str = None
    batch_size: int = 32
    # Validation during training, in batches of this many examples.
    validation_batch_size: int = 128
    # Average the gradients of this many batches per update (Keras'
    # optimizer option): an update of batch_size * N examples in the memory
    # of batch_size (None: every batch).
    gradient_accumulation_steps: int = None
    # Validate, back up and count the patience every N training batches (the
    # training data repeat; None: once per pass over them).
    steps_per_epoch: int = None
    # Stop once the epochs of every attempt, validation included, have taken
    # this many seconds (None: no budget; `ganet_tf.fitting.TimeBudget`).
    time_budget: float = None
    # "bytes": every UTF-8 byte a token, embeddings learned from scratch.
    tokenizer: str = "words"
    glove: str = None
    glove_vocabulary: int = 50000
    freeze_embeddings: bool = False
    sequence_length: int = None
    length_percentile: float = 95.0
    dropout: float = 0.3
    hidden: int = 100
    # The Transformer models' encoder: heads of width hidden / num_heads,
    # blocks, feed-forward width (None: 4 * hidden).
    num_heads: int = 4
    num_layers: int = 2
    intermediate_dim: int = None
    window: int = None
    straight_through: bool = False
    # ganet_transformer: blocks train on the top_k tokens only. None: on
    # whenever a density rho is given (`sparse_training_on`).
    sparse_training: bool = None
    # ganet_transformer: a stem the gates and the encoder share ("conv"), or none.
    stem: str = None
    # ganet_transformer: the pooling attends the open tokens ("gated") or every real token ("all").
    pooling: str = "gated"
    # ganet_transformer: learned position embeddings added to the encoder input.
    position_embedding: bool = True
    # transformer: local attention, each token attending those less than this many positions away.
    sliding_window: int = None
    # ganet: weight of the complement loss (0: none).
    complement_weight: float = 0.0
    # ganet: what the complement loss reads, "states" (attention over the
    # closed tokens' BiLSTM states) or "inputs" (the closed tokens'
    # embeddings re-encoded by the encoder held fixed; "inputs_vs_empty":
    # against the prediction on the emptied text; "adversarial": read by a
    # complement predictor trained alongside).
    complement: str = "states"
    # ganet: a bound in nats on the complement loss, its weight then a
    # multiplier (None: the fixed --complement-weight).
    complement_target: float = None
    patience: int = 3
    monitor: str = "val_loss"
    buckets: int = 4
    backup_dir: str = None
    restart: bool = False
    validation_fraction: float = 0.1
    limit: int = None
    verbose: int = 1
    strategy: str = "default"
    cpu_devices: int = None
    tensorboard: str = None
    mixed_precision: bool = False
    jit_compile: bool = False

    def validate(self):
        from ganet_tf.models import MODEL_BUILDERS
        from ganet_tf.training.distribution import validate_distribution

        if self.model not in MODEL_BUILDERS:
            raise GANetInputError(f"Unknown model {self.model!r}: choose one of {sorted(MODEL_BUILDERS)}.")
        if self.monitor not in MONITORS:
            raise GANetInputError(f"Unknown --monitor {self.monitor!r}: choose one of {sorted(MONITORS)}.")
        if self.lr_schedule not in LR_SCHEDULES:
            raise GANetInputError(f"Unknown --lr-schedule {self.lr_schedule!r}: choose one of {LR_SCHEDULES[1:]}.")
        check_number("buckets", self.buckets, at_least=0, integer=True, optional=True)
        check_number("glove_vocabulary", self.glove_vocabulary, at_least=0, integer=True)
        self._validate_tokens()
        for name in (
            "epochs",
            "batch_size",
            "validation_batch_size",
            "auxiliary_hidden_dim",
            "hidden",
            "patience",
            "num_heads",
            "num_layers",
        ):
            check_number(name, getattr(self, name), at_least=1, integer=True)
        check_number("seed", self.seed, at_least=0, at_most=2**32 - 1, integer=True)
        for name in ("temperature", "lr"):
            check_number(name, getattr(self, name), above=0)
        check_number("penalty", self.penalty, at_least=0)
        check_number("complement_weight", self.complement_weight, at_least=0)
        check_number("complement_target", self.complement_target, above=0, optional=True)
        self._validate_complement()
        check_number("initial_gate_logit", self.initial_gate_logit, optional=True)
        self._validate_gates()
        check_number("dropout", self.dropout, at_least=0, below=1)
        check_number("length_percentile", self.length_percentile, above=0, at_most=100)
        check_number("validation_fraction", self.validation_fraction, above=0, below=1)
        if self.test_file and not self.train_file:
            raise GANetInputError("--test-file needs --train-file.")
        check_finite_fields(self)
        for name in (
            "limit",
            "window",
            "sliding_window",
            "sequence_length",
            "intermediate_dim",
            "gradient_accumulation_steps",
            "steps_per_epoch",
        ):
            check_number(name, getattr(self, name), at_least=1, integer=True, optional=True)
        check_number("time_budget", self.time_budget, above=0, optional=True)
        if self.restart and not self.backup_dir:
            raise GANetInputError("--restart needs --backup-dir (the backup it deletes).")
        validate_distribution(self)

    def _validate_tokens(self):
        from ganet_tf.data.vectorizer import TOKENIZERS

        if self.tokenizer not in TOKENIZERS:
            raise GANetInputError(f"Unknown --tokenizer {self.tokenizer!r}: choose one of {list(TOKENIZERS)}.")
        if self.tokenizer == "bytes" and (self.glove or self.freeze_embeddings):
            flag = "--glove" if self.glove else "--freeze-embeddings"
            raise GANetInputError(
                f"{flag} sets word embeddings: --tokenizer bytes learns its byte embeddings; drop {flag}."
            )

    def _validate_complement(self):
        from ganet_tf.models.ganet import COMPLEMENTS

        if self.complement not in COMPLEMENTS:
            raise GANetInputError(f"Unknown --complement {self.complement!r}: choose one of {list(COMPLEMENTS)}.")
        if self.complement != "states" and not self.complement_weight:
            raise GANetInputError(
                f"--complement {self.complement} sets what the complement loss reads: give its weight with "
                "--complement-weight MU > 0."
            )
        if self.complement_target is not None and self.complement == "states":
            raise GANetInputError(
                "--complement-target bounds the loss of a re-encoded complement: give --complement inputs, "
                "inputs_vs_empty or adversarial (and --complement-weight MU > 0, the multiplier's start)."
            )

    def _validate_gates(self):
        from ganet_tf.layers.gate_sampler import DISTRIBUTIONS
        from ganet_tf.layers.gate_sampler import INFERENCE_MODES
        from ganet_tf.layers.gated_attention_pooling import FALLBACKS
        from ganet_tf.layers.uninformed_gates import RULES as UNINFORMED_RULES
        from ganet_tf.models.gate_layers import GATED_MODELS
        from ganet_tf.models.gate_layers import TARGET_RULES

        for name, choices in (
            ("gate_distribution", DISTRIBUTIONS),
            ("inference_mode", INFERENCE_MODES),
            ("fallback", FALLBACKS),
        ):
            if name == "inference_mode" and self.inference_mode is None:
                continue  # follows --target-density
            if getattr(self, name) not in choices:
                raise GANetInputError(
                    f"Unknown --{name.replace('_', '-')} {getattr(self, name)!r}: choose one of {list(choices)}."
                )
        check_number("target_density", self.target_density, at_least=0, below=1, optional=True)
        check_number("inference_density", self.inference_density, above=0, at_most=1, optional=True)
        for name, mode in (("inference_ratio", "relative"), ("inference_mass", "nucleus")):
            check_number(name, getattr(self, name), above=0, at_most=1, optional=True)
            # nucleus holds pi = --target-density of the gate mass by default.
            defaulted = mode in TARGET_RULES and self.target_density
            if self.inference_mode == mode and getattr(self, name) is None and not defaulted:
                flag = "--" + name.replace("_", "-")
                raise GANetInputError(f"--inference-mode {mode} needs its parameter: give {flag} in (0, 1].")
        self._validate_annealing()
        if self.model == "ganet_transformer" and self.pooling == "all" and not sparse_training_on(self):
            raise GANetInputError(
                "--pooling all reads the closed tokens as they entered the blocks, which only sparse training "
                "leaves them in training: drop --no-sparse-training and give rho with --target-density."
            )
        uninformed = self.model in GATED_MODELS and self.auxiliary in UNINFORMED_RULES
        if uninformed and self.inference_density is None and not self.target_density:
            raise GANetInputError(
                f"--auxiliary {self.auxiliary} chooses round(rho T) tokens per text without weights: "
                "give rho with --target-density (or --inference-density)."
            )
        if self.sparse_training and self.inference_density is None and not self.target_density:
            raise GANetInputError(
                "--sparse-training keeps round(rho T) tokens per text: "
                "give rho with --target-density (or --inference-density)."
            )
        if self.inference_mode == "top_k" and self.inference_density is None and not self.target_density:
            raise GANetInputError(
                "--inference-mode top_k opens round(rho T) tokens per text: "
                "give rho with --target-density (or --inference-density)."
            )

    def _validate_annealing(self):
        check_number("final_temperature", self.final_temperature, above=0, optional=True)
        check_number("anneal_epochs", self.anneal_epochs, at_least=0, integer=True)
        if (self.final_temperature is None) != (self.anneal_epochs == 0):
            raise GANetInputError(
                "--final-temperature and --anneal-epochs go together: give both (anneal --temperature to "
                "--final-temperature over that many epochs) or neither."
            )


def sparse_training_on(config):
    """Whether `ganet_transformer` trains on its open tokens only: the
    `--sparse-training` / `--no-sparse-training` given, else whenever a
    density rho (`--target-density` or `--inference-density`) is there.

    The default follows IMDB validation accuracy, on which sparse training
    matched relaxed-gate training in a fraction of the time
    (`docs/transformers.md`, `results/transformer_check/`).
    """
    if config.sparse_training is not None:
        return bool(config.sparse_training)
    return config.model == "ganet_transformer" and bool(config.inference_density or config.target_density)
