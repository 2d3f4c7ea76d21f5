"""`train --strategy`: training under a `tf.distribute` strategy.

- `default`: one device (TensorFlow's default strategy).
- `mirrored`: `tf.distribute.MirroredStrategy` over the GPUs of this
  machine, or over its logical CPU devices when it has no GPU (split the
  CPU with `--cpu-devices N`, e.g. to check a multi-device run on a laptop).
- `multi_worker`: `tf.distribute.MultiWorkerMirroredStrategy`, the cluster
  read from the `TF_CONFIG` environment variable; every worker runs the
  same command.

The model is built and compiled under the strategy's scope, so its
variables (the gate sampler's seed state and the sparsity multiplier
included) are mirrored. `--batch-size` is the global batch: Keras splits
each batch over the replicas and divides every loss, the `add_loss`
penalty of `GateSparsity` included, by the number of replicas before the
gradients are summed (`keras.src.backend.tensorflow.trainer`), so a
mirrored run follows the single-device objective. Each replica draws its
own gate noise (the replica id is folded into the sampler's seed).

With several workers, each worker trains on its own equal share of the
training and validation rows (`distribute_datasets_from_function`), with
`--batch-size / workers` examples a step, padded to the sequence length
(length buckets would give the workers different numbers of steps, and a
worker waiting for a step that never comes hangs). Only the chief writes
`--out` and the TensorBoard logs.
"""

import json
import os

import numpy as np
import tensorflow as tf

from ganet_tf.data import make_dataset
from ganet_tf.errors import GANetInputError
from ganet_tf.keras_compat import skip_symbolic_build
from ganet_tf.keras_compat import symbolic_build

STRATEGIES = ("default", "mirrored", "multi_worker")


def validate_distribution(config):
    """`GANetInputError` for a bad `--strategy` / `--cpu-devices`."""
    if config.strategy not in STRATEGIES:
        raise GANetInputError(f"Unknown --strategy {config.strategy!r}: choose one of {list(STRATEGIES)}.")
    if config.cpu_devices is not None and (not isinstance(config.cpu_devices, int) or config.cpu_devices < 1):
        raise GANetInputError(f"--cpu-devices must be a positive integer, got {config.cpu_devices}.")
    if config.strategy == "multi_worker" and not os.environ.get("TF_CONFIG"):
        raise GANetInputError(
            "--strategy multi_worker needs the cluster in TF_CONFIG (see the "
            "README, 'Training on several devices or machines')."
        )


def split_cpu(count):
    """Splits the first physical CPU into `count` logical devices.

    Must run before TensorFlow initialises its devices (before the first
    operation); `GANetInputError` otherwise.
    """
    cpu = tf.config.list_physical_devices("CPU")[0]
    wanted = [tf.config.LogicalDeviceConfiguration() for _ in range(count)]
    try:
        tf.config.set_logical_device_configuration(cpu, wanted)
    except RuntimeError:
        if len(tf.config.list_logical_devices("CPU")) != count:
            raise GANetInputError(
                "--cpu-devices must be set before TensorFlow starts: run it in a fresh process."
            ) from None


def make_strategy(name, cpu_devices=None):
    """The `tf.distribute.Strategy` that `--strategy name` means."""
    if cpu_devices:
        split_cpu(cpu_devices)
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "multi_worker":
        return tf.distribute.MultiWorkerMirroredStrategy()
    gpus = tf.config.list_logical_devices("GPU")
    if gpus:
        return tf.distribute.MirroredStrategy([device.name for device in gpus])
    # CPU devices: sums on one device (TensorFlow's collective all-reduce
    # packs GA-Net's sparse embedding gradients as dense tensors, whose
    # sizes then differ between the replicas).
    cpus = [device.name for device in tf.config.list_logical_devices("CPU")]
    return tf.distribute.MirroredStrategy(cpus, cross_device_ops=tf.distribute.ReductionToOneDevice(cpus[0]))


def is_multi_worker(strategy):
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


def is_chief(strategy):
    """Whether this process writes the outputs (always, on one machine)."""
    if not is_multi_worker(strategy):
        return True
    resolver = strategy.cluster_resolver
    if resolver.task_type in (None, "chief"):
        return True
    has_chief = "chief" in json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster", {})
    return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief


def training_datasets(strategy, config, ids, splits):
    """`(train, validation)` datasets for `model.fit` under `strategy`.

    On one worker, batches of the global batch size (Keras splits them over
    the replicas); on several, each worker's share (see the module). With
    `config.steps_per_epoch` the training batches repeat, reshuffled each
    pass, so that epochs of that many batches continue one another.
    """
    if not is_multi_worker(strategy):
        train = make_dataset(
            ids["train"], splits.train_labels, config.batch_size, shuffle=True, seed=config.seed, buckets=config.buckets
        )
        validation = make_dataset(
            ids["validation"], splits.validation_labels, config.validation_batch_size, buckets=config.buckets
        )
        replicas = strategy.num_replicas_in_sync
        if replicas > 1:
            if config.batch_size % replicas:
                raise GANetInputError(
                    f"--batch-size {config.batch_size} must be a multiple of the {replicas} replicas."
                )
            train, validation = _even(train, replicas), _even(validation, replicas)
        return _repeated(train, config), validation
    if config.batch_size % strategy.num_replicas_in_sync:
        raise GANetInputError(
            f"--batch-size {config.batch_size} must be a multiple of the "
            f"{strategy.num_replicas_in_sync} replicas of the cluster."
        )

    def shard(rows, labels, batch_size, shuffle):
        def dataset(context):
            workers = context.num_input_pipelines  # one pipeline a worker
            share = len(rows) // workers  # equal shares: equal steps
            start = context.input_pipeline_id * share
            local = context.get_per_replica_batch_size(batch_size) * (strategy.num_replicas_in_sync // workers)
            made = make_dataset(
                rows[start : start + share],
                labels[start : start + share],
                local,
                shuffle=shuffle,
                seed=config.seed,
                buckets=0,
            )
            return _repeated(made, config) if shuffle else made

        return strategy.distribute_datasets_from_function(dataset)

    replicas = strategy.num_replicas_in_sync
    validation_batch = max(replicas, config.validation_batch_size - config.validation_batch_size % replicas)
    return (
        shard(ids["train"], np.asarray(splits.train_labels), config.batch_size, True),
        shard(ids["validation"], np.asarray(splits.validation_labels), validation_batch, False),
    )


def _repeated(train, config):
    """The training batches, repeated when epochs are counted in `config.steps_per_epoch` batches."""
    return train.repeat() if config.steps_per_epoch else train


def _even(dataset, replicas):
    """`dataset` with each batch cut to a multiple of `replicas` examples.

    Keras builds a distributed model's metrics from the mean over the
    replicas of the first batch (`_maybe_symbolic_build`), which fails
    when the replicas' shares differ in size. Only partial batches (the
    last one of a length bucket) lose examples: at most `replicas - 1` a
    bucket, other ones each epoch as the rows are reshuffled.
    """

    def cut(tokens, labels):
        size = tf.shape(labels)[0]
        size = size - size % replicas
        return tokens[:size], labels[:size]

    dataset = dataset.map(cut).filter(lambda tokens, labels: tf.shape(labels)[0] > 0)
    # Which batches survive depends on the bucket sizes only: count once.
    batches = sum(1 for _ in dataset)
    return dataset.apply(tf.data.experimental.assert_cardinality(batches))


def prepare_model(model, strategy, ids, labels):
    """Builds a compiled `model`'s metrics before `fit` (`compile_model`
    built its optimizer).

    Under `MultiWorkerMirroredStrategy`, Keras 3.15's `fit` would build them
    from the first distributed batch, reduced over the workers with
    `strategy.reduce`, which the collective strategy refuses for a
    `(tokens, labels)` pair ("Attempt to convert a value (PerReplica...)").
    Built here from a local batch of the same structure, and that step
    skipped. And each step's logs (metric results, already aggregated over
    all replicas) get a leading axis of 1: Keras reduces them over the
    workers with a mean along axis 0, which fails on scalars
    (tensorflow/tensorflow#72388). Other strategies: nothing to do.
    """
    if not is_multi_worker(strategy):
        return
    model.train_step = _with_leading_axis(model.train_step)
    model.test_step = _with_leading_axis(model.test_step)
    with strategy.scope():
        symbolic_build(model, data_batch=(ids[:2], np.asarray(labels[:2])))
    skip_symbolic_build(model)


def _with_leading_axis(step):
    def step_with_axis(data):
        return tf.nest.map_structure(lambda value: tf.reshape(value, [1]), step(data))

    return step_with_axis


def local_copy(model, strategy):
    """`model` itself, or under several workers a copy on this worker only
    (prediction under `MultiWorkerMirroredStrategy` would shard the texts
    over the workers)."""
    if not is_multi_worker(strategy):
        return model
    import keras

    copy = keras.models.clone_model(model)  # outside the strategy's scope
    copy.set_weights(model.get_weights())
    return copy
