from ganet_tf.models import build_ganet_transformer
from ganet_tf.tuning.ganet_hypermodel import GANetHyperModel
from ganet_tf.tuning.transformer_hypermodel import check_encoder_arguments
from ganet_tf.tuning.transformer_hypermodel import encoder_arguments


class GANetTransformerHyperModel(GANetHyperModel):
    """The search space of GA-Net with a Transformer encoder, as a `keras_tuner.HyperModel`.

    Tunes `lr`, `batch_size`, the encoder (`num_layers`, `hidden`,
    `dropout`, as `TransformerHyperModel`) and GA-Net's gates (`tau`, `lam`,
    `aux_hidden`, `aux`, `target_density`, as `GANetHyperModel`) over
    `space` (see `SearchSpace`); an empty `HyperParameters()` gives
    `ganet_tf train --model ganet_transformer`'s setting: lr 1e-3, batch 32,
    2 blocks of width 100, dropout 0.3, tau 0.5, lambda 1e-2, a BiLSTM
    auxiliary network of width 20 and target density 0.3, the blocks
    trained on the open tokens only (`sparse_training`, on whenever the
    trial's target density is positive, as in `train`). `build` returns
    a compiled `ganet_tf.models.build_ganet_transformer` model, which logs
    `density` (and `tradeoff` with `density_weight`).

    Args:
        num_classes: int >= 2, the number of classes.
        density_weight: optional float >= 0; compiles the metric
            `tradeoff`, accuracy minus this weight times the density.
        **kwargs: the other arguments of `TextClassifierHyperModel`
            (`embeddings`, `vocabulary_size`, `space`, by default
            `SearchSpace("ganet_transformer")`, `seed`, which also seeds the
            gate sampler, `buckets`, `run_eagerly`, `name`, `tunable`), but
            not `hidden_dim` and `dropout`: the trial's set them.

    Example:

    >>> import keras_tuner
    >>> hypermodel = GANetTransformerHyperModel(num_classes=6, vocabulary_size=1000)
    >>> model = hypermodel.build(keras_tuner.HyperParameters())
    >>> tuner = keras_tuner.RandomSearch(
    ...     hypermodel, objective="val_accuracy", max_trials=20
    ... )
    """

    model_name = "ganet_transformer"

    def __init__(self, num_classes, density_weight=None, **kwargs):
        check_encoder_arguments(kwargs)
        super().__init__(num_classes, density_weight=density_weight, **kwargs)

    def build_network(self, hp):
        gates = self.gate_arguments(hp)
        # As `ganet_tf train` (`sparse_training_on`): the blocks train on the
        # open tokens whenever there is a density to keep.
        sparse_training = bool(gates["target_density"])
        return build_ganet_transformer(
            self.num_classes, **encoder_arguments(self, hp), **gates, sparse_training=sparse_training
        )
