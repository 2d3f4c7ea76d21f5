"""The `bench` part of `experiments/gpu_check.py`: the gated 2-block encoder
(gate network, token dropping, sparse training) against the dense 2-block
encoder with fused attention, under JAX, in bf16. See `gpu_check.py`."""

import math
import statistics

import numpy as np
from bench_sparse_attention import encoder_flops

from ganet_tf.layers.sparse_gather import kept_count

SGD_RATE = 1e-4


# The fused attention kernels' tile: every gathered length a multiple of it.
BUCKET_MULTIPLE = 64


def gathered_k(density, length):
    """The length the gated blocks gather rows of `length` real tokens to,
    at inference and in sparse training alike: their kept count rounded up
    to a multiple of 64 (`sparse_bucket_multiple`), at most `length`."""
    return min(length, BUCKET_MULTIPLE * math.ceil(kept_count(density, length) / BUCKET_MULTIPLE))


def bench_buckets(density, length):
    """The blocks' `sparse_buckets`: the kept count's share (and the whole
    length, which `normalize_buckets` adds), rounded up by the layers.
    Every row of the benchmark is full, so both paths run `gathered_k`; a
    ladder of sizes (`COARSE_SPARSE_BUCKETS`, the models' default) adds
    branches that compile but do not run."""
    return [kept_count(density, length) / length]


def fused_block_class():
    """`FusedEncoderBlock`: `GatedTransformerEncoder`'s post-norm block with
    `keras.ops.dot_product_attention` (defined on first use: Keras is
    imported after the backend is chosen)."""
    import keras
    from keras import ops

    class FusedEncoderBlock(keras.layers.Layer):
        """Self-attention (fused kernel), residual, layer norm, feedforward, residual, layer norm."""

        def __init__(self, intermediate_dim, num_heads, flash_attention=None, **kwargs):
            super().__init__(**kwargs)
            self.intermediate_dim = intermediate_dim
            self.num_heads = num_heads
            self.flash_attention = flash_attention

        def build(self, inputs_shape):
            width = inputs_shape[-1]
            self.qkv = keras.layers.Dense(3 * width, name="qkv")
            self.qkv.build(inputs_shape)
            self.output_dense = keras.layers.Dense(width, name="output")
            self.output_dense.build(inputs_shape)
            self.norm1 = keras.layers.LayerNormalization(epsilon=1e-5, name="norm1")
            self.norm1.build(inputs_shape)
            self.feedforward1 = keras.layers.Dense(self.intermediate_dim, activation="relu", name="feedforward1")
            self.feedforward1.build(inputs_shape)
            self.feedforward2 = keras.layers.Dense(width, name="feedforward2")
            self.feedforward2.build((*inputs_shape[:-1], self.intermediate_dim))
            self.norm2 = keras.layers.LayerNormalization(epsilon=1e-5, name="norm2")
            self.norm2.build(inputs_shape)

        def call(self, inputs):
            batch, steps, width = ops.shape(inputs)
            heads = self.num_heads
            qkv = ops.reshape(self.qkv(inputs), (batch, steps, 3, heads, width // heads))
            query, key, value = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
            attended = ops.dot_product_attention(query, key, value, flash_attention=self.flash_attention)
            x = self.norm1(inputs + self.output_dense(ops.reshape(attended, (batch, steps, width))))
            return self.norm2(x + self.feedforward2(self.feedforward1(x)))

    return FusedEncoderBlock


def flash_setting(choice):
    """`flash_attention` of the dense block and why: True where the fused
    kernel runs here (`auto`: tried on a tiny bf16 input), else None (XLA)."""
    import jax.numpy as jnp
    from keras import ops

    if choice == "off":
        return None, "off (--flash off)"
    x = jnp.ones((1, 128, 2, 64), jnp.bfloat16)
    try:
        np.asarray(ops.dot_product_attention(x, x, x, flash_attention=True))
        return True, "on (the flash kernel ran)"
    except Exception as error:
        if choice == "on":
            raise
        line = (str(error).splitlines() or [type(error).__name__])[0][:200]
        return None, f"unavailable here, XLA attention instead ({line})"


def build_pair(args, length, density, flash):
    """`{"gated": model, "dense": model}`, 2 blocks each, on `(None, length, width)`."""
    import keras

    from ganet_tf.layers import GatedTransformerEncoder
    from ganet_tf.layers import GateSampler

    inputs = keras.Input((length, args.width))
    logits = keras.layers.Reshape((length,))(keras.layers.Dense(1, name="gate_network")(inputs))
    gates = GateSampler(temperature=0.5, inference_mode="top_k", inference_density=density, seed=0)(logits)
    gated = inputs
    for _ in range(2):
        block = GatedTransformerEncoder(
            args.intermediate,
            args.heads,
            token_dropping=True,
            sparse_buckets=bench_buckets(density, length),
            sparse_bucket_multiple=BUCKET_MULTIPLE,
            sparse_training=True,
            training_density=density,
        )
        gated = block(gated, gates=gates)
    dense = inputs
    block_class = fused_block_class()
    for _ in range(2):
        dense = block_class(args.intermediate, args.heads, flash_attention=flash)(dense)
    return {"gated": keras.Model(inputs, gated), "dense": keras.Model(inputs, dense)}


def compiled_steps(model):
    """`(infer, train, state)`: jitted inference and SGD training step of
    `model` through `stateless_call`, and their initial variable values."""
    import jax
    import jax.numpy as jnp

    def infer(trainable, non_trainable, x):
        outputs, _ = model.stateless_call(trainable, non_trainable, x, training=False)
        return outputs

    def loss(trainable, non_trainable, x, readout):
        outputs, non_trainable = model.stateless_call(trainable, non_trainable, x, training=True)
        return jnp.mean(outputs.astype("float32") * readout), non_trainable

    def train(trainable, non_trainable, x, readout):
        (value, non_trainable), grads = jax.value_and_grad(loss, has_aux=True)(trainable, non_trainable, x, readout)
        trainable = [w - SGD_RATE * g.astype(w.dtype) for w, g in zip(trainable, grads, strict=True)]
        return value, trainable, non_trainable

    state = ([v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables])
    return jax.jit(infer), jax.jit(train), state


def time_calls(calls, warmup, runs):
    """`{name: (compile seconds, [seconds per run])}` of `{name: call}`, each
    call returning something to block on: the harness's alternating timer,
    the first call (compile) timed alone."""
    import jax
    from bench import alternating

    times, firsts = alternating(list(calls.values()), warmup, runs, block=jax.block_until_ready, first=True)
    return {name: (firsts[i], times[i]) for i, name in enumerate(calls)}


def _calls(models, x, readout):
    """The timed calls: `{"gated_infer", "dense_infer", "gated_train", "dense_train"}`."""
    calls = {}
    for name, model in models.items():
        infer, train, (trainable, non_trainable) = compiled_steps(model)
        calls[f"{name}_infer"] = lambda infer=infer, t=trainable, n=non_trainable: infer(t, n, x)
        calls[f"{name}_train"] = lambda train=train, t=trainable, n=non_trainable: train(t, n, x, readout)[0]
    return calls


def measure_cell(args, length, batch, density, flash):
    """One cell of the grid: medians (ms), compile seconds and FLOPs of both paths."""
    import jax.numpy as jnp
    import keras

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(batch, length, args.width)), jnp.bfloat16)
    readout = jnp.asarray(rng.normal(size=(batch, length, args.width)), jnp.float32)
    times = time_calls(_calls(build_pair(args, length, density, flash), x, readout), args.warmup, args.runs)
    k_infer = k_train = gathered_k(density, length)
    flops = {
        "dense_forward": encoder_flops(batch, length, args.width, args.intermediate),
        "gated_infer_forward": encoder_flops(batch, k_infer, args.width, args.intermediate),
        "gated_train_forward": encoder_flops(batch, k_train, args.width, args.intermediate),
    }
    cell = {"T": length, "batch": batch, "density": density, "k_infer": k_infer, "k_train": k_train, "flops": flops}
    for name, (compile_seconds, runs) in times.items():
        cell[f"{name}_ms"] = 1e3 * statistics.median(runs)
        cell[f"{name}_compile_s"] = round(compile_seconds, 2)
    cell["infer_speedup"] = cell["dense_infer_ms"] / cell["gated_infer_ms"]
    cell["train_speedup"] = cell["dense_train_ms"] / cell["gated_train_ms"]
    cell["infer_flops_ratio"] = flops["dense_forward"] / flops["gated_infer_forward"]
    cell["train_flops_ratio"] = flops["dense_forward"] / flops["gated_train_forward"]
    return cell


def run_bench(args, record):
    """Every cell of `args`' grid in bf16; `record(summary)` after each."""
    import keras

    keras.config.set_dtype_policy("mixed_bfloat16")
    flash, flash_note = flash_setting(args.flash)
    summary = {"dense_attention": flash_note, "cells": []}
    for length in args.lengths:
        for batch in args.batches:
            for density in args.densities:
                try:
                    cell = measure_cell(args, length, batch, density, flash)
                except Exception as error:
                    line = (str(error).splitlines() or [type(error).__name__])[0][:300]
                    cell = {"T": length, "batch": batch, "density": density, "error": line}
                summary["cells"].append(cell)
                print(f"bench {cell}", flush=True)
                record(summary)
    keras.config.set_dtype_policy("float32")
    return summary
