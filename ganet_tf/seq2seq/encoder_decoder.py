import keras
import numpy as np
import tensorflow as tf
from keras import ops

from ganet_tf.layers.bahdanau_attention import BahdanauAttention
from ganet_tf.layers.bidirectional import bidirectional
from ganet_tf.layers.gated_source_attention import GatedSourceAttention
from ganet_tf.layers.hierarchical_attention import HierarchicalAttention
from ganet_tf.models.gate_layers import gate_layers
from ganet_tf.policy.renamed_keys import with_current_keys
from ganet_tf.seq2seq.source_words import BEGINS
from ganet_tf.seq2seq.source_words import CONTINUES
from ganet_tf.seq2seq.source_words import PUNCTUATION

ATTENTIONS = ("bahdanau", "gated", "hier-rnn", "hier-cnn", "hier-act")
GATE_INPUTS = ("embeddings", "states")
GATE_UNITS = ("token", "word")


def _check_arguments(
    attention, source_vocabulary_size, target_vocabulary_size, embedding_dim, hidden, dropout, gate_input
):
    if attention not in ATTENTIONS:
        raise ValueError(f"`attention` must be one of {ATTENTIONS}. Received: attention={attention}")
    if gate_input not in GATE_INPUTS:
        raise ValueError(f"`gate_input` must be one of {GATE_INPUTS}. Received: gate_input={gate_input}")
    for name, value in (
        ("source_vocabulary_size", source_vocabulary_size),
        ("target_vocabulary_size", target_vocabulary_size),
        ("embedding_dim", embedding_dim),
        ("hidden", hidden),
    ):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"`{name}` must be a positive integer. Received: {name}={value}")
    if not 0 <= dropout < 1:
        raise ValueError(f"`dropout` must be in [0, 1). Received: dropout={dropout}")


def _check_word_codes(gate_unit, source_word_codes, source_vocabulary_size):
    if gate_unit not in GATE_UNITS:
        raise ValueError(f"`gate_unit` must be one of {GATE_UNITS}. Received: gate_unit={gate_unit}")
    if gate_unit == "token":
        return None
    if source_word_codes is None:
        raise ValueError(
            "`gate_unit='word'` needs `source_word_codes`, one code per source id "
            "(`ganet_tf.seq2seq.source_words.word_codes`). Received: source_word_codes=None"
        )
    codes = [int(code) for code in source_word_codes]
    if len(codes) != source_vocabulary_size or not set(codes) <= {CONTINUES, BEGINS, PUNCTUATION}:
        raise ValueError(
            "`source_word_codes` must hold one code in {0, 1, 2} per source id "
            f"({source_vocabulary_size}). Received: {len(codes)} codes, values {sorted(set(codes))[:5]}"
        )
    return codes


def word_index(source, codes):
    """The word of every source token, `(batch, source_steps)` ints from 0
    in each row: a token begins a word where its code (`codes[id]`,
    `source_words.word_codes`) is not 0, where the token before is
    punctuation (code 2), or at the row's start. Padding continues the
    last word (callers mask it)."""
    code = ops.take(codes, source, axis=0)
    before = ops.pad(code[:, :-1], [[0, 0], [1, 0]])
    first = ops.expand_dims(ops.equal(ops.arange(ops.shape(source)[1]), 0), 0)
    begins = ops.logical_or(ops.logical_or(ops.not_equal(code, CONTINUES), ops.equal(before, PUNCTUATION)), first)
    return ops.cumsum(ops.cast(begins, "int32"), axis=1) - 1


def word_means(values, words, mask):
    """The mean of `values` `(batch, steps)` over each word's real tokens
    (`words` from `word_index`), `(batch, steps)` with word w at column w,
    and the mask of the columns that hold a word."""
    batch, steps = ops.shape(words)[0], ops.shape(words)[1]
    real = ops.cast(mask, "float32")
    segments = ops.reshape(words + ops.expand_dims(ops.arange(batch) * steps, 1), (-1,))
    values = ops.where(mask, ops.cast(values, "float32"), 0.0)
    sums = ops.segment_sum(ops.reshape(values, (-1,)), segments, num_segments=batch * steps)
    counts = ops.segment_sum(ops.reshape(real, (-1,)), segments, num_segments=batch * steps)
    means = ops.reshape(sums / ops.maximum(counts, 1.0), (batch, steps))
    return means, ops.reshape(counts > 0, (batch, steps))


@keras.saving.register_keras_serializable(package="ganet_tf")
class EncoderDecoder(keras.Model):
    """An attentional encoder-decoder: BiLSTM encoder, LSTM decoder.

    The encoder reads the source embeddings with a bidirectional LSTM
    (`hidden` units each way); a tanh layer maps its final states to the
    decoder's initial state. The decoder LSTM (`2 * hidden` units) reads the
    target embeddings (teacher forcing: the reference's previous token),
    its state `d_t` queries the source with `attention`, and a linear layer
    reads `[d_t; c_t; y_{t-1}]` (state, context, embedded previous token)
    into the logits, as in the widely used PyTorch seq2seq tutorial's
    attention model. With `input_feeding` the decoder
    also reads the previous context `c_{t-1}`, so training steps through
    the target one token at a time.

    `attention` is one of

    - `"bahdanau"`: `BahdanauAttention` over all source states;
    - `"gated"`: GA-Net gates on the source: `AuxiliaryNetwork` reads the
      source embeddings (or, with `gate_input="states"`, the encoder
      states) once per sentence, `GateSampler` draws the gates
      (relaxed in training, binary outside), `GateSparsity` adds the L1
      penalty, and `GatedSourceAttention` attends to the open states; outside
      training the open states are gathered before decoding;
    - `"hier-rnn"`, `"hier-cnn"`, `"hier-act"`: `HierarchicalAttention` with
      `levels` and `block_size`.

    Call arguments:
        inputs: dict with `"source"` `(batch, source_steps)` and
            `"target_in"` `(batch, target_steps)` int token ids, 0 padding.
        training: Python bool.

    Returns:
        Logits `(batch, target_steps, target_vocabulary_size)`.

    Decoding uses `encode(source)` once and `decode_step(tokens, state,
    memory)` per step (see `ganet_tf.seq2seq.decoding`).

    Args:
        source_vocabulary_size, target_vocabulary_size: ints, with padding
            (0) and out-of-vocabulary (1) ids.
        embedding_dim: int, width of both embeddings. Defaults to 256.
        hidden: int, encoder units each way; the decoder has twice as many.
            Defaults to 256.
        attention: one of `ATTENTIONS`. Defaults to `"bahdanau"`.
        attention_units: int, width of the score networks (default: hidden).
        levels, block_size: the hierarchy's L and k. Defaults to 2 and 3.
        descent: the hierarchy's training descent, `"straight_through"` or
            `"soft"`.
        halting_penalty: the `"hier-act"` halting penalty. Defaults to 1e-3.
        target_block_size, max_block_size: the `"hier-act"` counterweight
            (mean children per block its multiplier steers to) and bound
            on a block's children (`HierarchicalAttention`). Default to
            None.
        summary_inputs: what the `"hier-rnn"` and `"hier-cnn"` summarisers
            read, `"states"` or `"keys"` (`HierarchicalAttention`).
            Defaults to `"states"`.
        input_feeding: bool. Defaults to `False`.
        dropout: float in [0, 1), on the embeddings and the output layer's
            input.
        auxiliary, auxiliary_hidden_dim, temperature, penalty,
            initial_gate_logit: the gates' auxiliary network (one of
            `AuxiliaryNetwork`'s encoders, the attribute `auxiliary_encoder`;
            `auxiliary` is the network itself) and its width, Gumbel
            temperature, L1 weight and initial logit (`"gated"` only), as
            the model builders name them (`ganet_tf.models.build_ganet`).
            `from_config` also reads a config of their older names
            (`aux`, `aux_hidden`, `gate_penalty`, `gate_bias`).
        gate_input: what the auxiliary network reads (`"gated"` only):
            `"embeddings"`, the source embeddings (GA-Net's choice), or
            `"states"`, the encoder states, so that the gates see what the
            encoder made of the sentence and their gradient reaches the
            encoder (as L0Drop gates encoder outputs, Zhang et al., 2021).
            Defaults to `"embeddings"`.
        gate_unit: what one gate covers (`"gated"` only): `"token"`, each
            source token, or `"word"`, each source word: the logits of a
            word's tokens are averaged into one, the sampler draws one gate
            per word (so `"top_k"` opens a share of the words), and every
            token of the word takes it, so a word is read whole or not at
            all. The density penalty and metric count tokens. Defaults to
            `"token"`.
        source_word_codes: with `gate_unit="word"`, one int per source id
            (`ganet_tf.seq2seq.source_words.word_codes` of the subword
            pieces): 1 where the id begins a word, 2 for punctuation (a
            word of its own), 0 where it continues one.
        gate_distribution, straight_through, inference_mode,
            inference_density: passed to `GateSampler` (`"gated"` only):
            training gates `"relaxed_bernoulli"` or `"hard_concrete"`, and
            binary gates outside training by `"threshold"`, `"sample"` or
            `"top_k"` (the `inference_density` share of each sentence).
        target_density: passed to `GateSparsity`: None (fixed
            `penalty`) or the density its multiplier steers to.
        seed: int or None, seed of the gate sampler and dropout.
        **kwargs: `keras.Model` keyword arguments such as `name`.

    References:
        - [Bahdanau et al., 2015](https://arxiv.org/abs/1409.0473).
        - [Luong et al., 2015](https://arxiv.org/abs/1508.04025), Effective
          Approaches to Attention-based Neural Machine Translation.
        - [Xue et al., 2020](https://arxiv.org/abs/1912.00349), GA-Net.
        - [Zhang et al., 2021](https://arxiv.org/abs/2004.11854), On
          Sparsifying Encoder Outputs in Sequence-to-Sequence Models.
    """

    def __init__(
        self,
        source_vocabulary_size,
        target_vocabulary_size,
        embedding_dim=256,
        hidden=256,
        attention="bahdanau",
        attention_units=None,
        levels=2,
        block_size=3,
        descent="straight_through",
        halting_penalty=1e-3,
        target_block_size=None,
        max_block_size=None,
        summary_inputs="states",
        input_feeding=False,
        dropout=0.2,
        auxiliary="bilstm",
        auxiliary_hidden_dim=20,
        gate_input="embeddings",
        gate_unit="token",
        source_word_codes=None,
        temperature=0.5,
        penalty=1e-3,
        initial_gate_logit=2.0,
        gate_distribution="relaxed_bernoulli",
        straight_through=False,
        inference_mode="threshold",
        inference_density=None,
        target_density=None,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        _check_arguments(
            attention, source_vocabulary_size, target_vocabulary_size, embedding_dim, hidden, dropout, gate_input
        )
        self.source_vocabulary_size = source_vocabulary_size
        self.target_vocabulary_size = target_vocabulary_size
        self.embedding_dim = embedding_dim
        self.hidden = hidden
        self.attention = attention
        self.attention_units = attention_units or hidden
        self.levels = levels
        self.block_size = block_size
        self.descent = descent
        self.halting_penalty = float(halting_penalty)
        self.target_block_size = target_block_size
        self.max_block_size = max_block_size
        self.summary_inputs = summary_inputs
        self.input_feeding = bool(input_feeding)
        self.dropout = float(dropout)
        self.auxiliary_encoder = auxiliary
        self.auxiliary_hidden_dim = auxiliary_hidden_dim
        self.gate_input = gate_input
        self.gate_unit = gate_unit
        self.source_word_codes = _check_word_codes(gate_unit, source_word_codes, source_vocabulary_size)
        # The codes as one array, made once: `word_index` looks them up at every encoding.
        self._word_code_table = None if self.source_word_codes is None else np.asarray(self.source_word_codes, "int32")
        self.temperature = float(temperature)
        self.penalty = float(penalty)
        self.initial_gate_logit = float(initial_gate_logit)
        self.gate_distribution = gate_distribution
        self.straight_through = bool(straight_through)
        self.inference_mode = inference_mode
        self.inference_density = inference_density
        self.target_density = target_density
        self.seed = seed
        self.decoder_units = 2 * hidden

        # Sublayers in a fixed order: the unnamed ones are named by it.
        self._make_recurrent_layers(dropout, seed)
        self._make_attention_layers()
        self.output_dropout = keras.layers.Dropout(dropout, seed=seed)
        self.logits = keras.layers.Dense(target_vocabulary_size, name="logits")

    def _make_attention_layers(self):
        """The attention layer and, for `"gated"`, the gate branch."""
        if self.attention == "bahdanau":
            self.attention_layer = BahdanauAttention(self.attention_units, name="attention")
        elif self.attention == "gated":
            self.attention_layer = GatedSourceAttention(self.attention_units, name="attention")
            self.auxiliary, self.gate_sampler, self.gate_sparsity = gate_layers(
                auxiliary=self.auxiliary_encoder,
                auxiliary_hidden_dim=self.auxiliary_hidden_dim,
                initial_gate_logit=self.initial_gate_logit,
                temperature=self.temperature,
                penalty=self.penalty,
                straight_through=self.straight_through,
                inference_mode=self.inference_mode,
                gate_distribution=self.gate_distribution,
                target_density=self.target_density,
                inference_density=self.inference_density,
                seed=self.seed,
            )
        else:
            self.attention_layer = HierarchicalAttention(
                self.attention_units,
                summarizer=self.attention.split("-")[1],
                levels=self.levels,
                block_size=self.block_size,
                descent=self.descent,
                halting_penalty=self.halting_penalty,
                target_block_size=self.target_block_size,
                max_block_size=self.max_block_size,
                summary_inputs=self.summary_inputs,
                name="attention",
            )

    def _make_recurrent_layers(self, dropout, seed):
        """The embeddings, the encoder, its bridge to the decoder, and the decoder."""
        self.source_embedding = keras.layers.Embedding(
            self.source_vocabulary_size, self.embedding_dim, mask_zero=True, name="source_embedding"
        )
        self.target_embedding = keras.layers.Embedding(
            self.target_vocabulary_size, self.embedding_dim, mask_zero=True, name="target_embedding"
        )
        self.embedding_dropout = keras.layers.Dropout(dropout, seed=seed)
        self.encoder = bidirectional(
            keras.layers.LSTM(self.hidden, return_sequences=True, return_state=True),
            name="encoder",
        )
        self.bridge_h = keras.layers.Dense(self.decoder_units, activation="tanh", name="bridge_h")
        self.bridge_c = keras.layers.Dense(self.decoder_units, activation="tanh", name="bridge_c")
        self.decoder = keras.layers.LSTM(self.decoder_units, return_sequences=True, return_state=True, name="decoder")

    def build(self, input_shape=None):
        # Creates every weight by a forward pass on a dummy batch.
        dummy = {
            "source": ops.ones((1, 4), "int32"),
            "target_in": ops.ones((1, 3), "int32"),
        }
        self.call(dummy)
        self.built = True

    # --- encoder ---------------------------------------------------------

    def encode(self, source, training=None, track_density=False):
        """Source ids -> `(memory, initial decoder state, gates)`.

        The memory is what the attention layer prepared once per sentence;
        gates are `None` unless `attention="gated"`. `track_density`: update
        the gates' density metric outside training too (`call` does, so
        `val_density` is the test gates' density; decoding does not).
        `encode` is `prepare_memory(source, *encode_source(source))`.
        """
        states, mask, state = self.encode_source(source, training=training)
        memory, gates = self.prepare_memory(source, states, mask, training=training, track_density=track_density)
        return memory, state, gates

    def encode_source(self, source, training=None):
        """The encoder alone: source ids -> `(states, mask, initial decoder
        state)`, the states `(batch, source_steps, 2 * hidden)`."""
        mask = ops.not_equal(source, 0)
        embedded = self.embedding_dropout(self.source_embedding(source), training=training)
        states, forward_h, forward_c, backward_h, backward_c = self.encoder(embedded, mask=mask, training=training)
        h = self.bridge_h(ops.concatenate([forward_h, backward_h], -1))
        c = self.bridge_c(ops.concatenate([forward_c, backward_c], -1))
        feed = ops.zeros((ops.shape(source)[0], self.decoder_units), states.dtype)
        return states, mask, (h, c, feed)

    def prepare_memory(self, source, states, mask, training=None, track_density=False, compact=None):
        """The attention's once-per-sentence part: `(memory, gates)` from
        the encoder states (`encode_source`).

        `compact` (default: outside training) asks the gated and
        hierarchical layers for the memory that decoding steps read (the
        open states gathered; the hierarchy's levels without the dense
        path's compositions); `compact=False` keeps the full memory, which
        `attended_nodes` reads.
        """
        if compact is None:
            compact = not training
        gates = None
        if self.attention == "bahdanau":
            memory = self.attention_layer.prepare(states, mask)
        elif self.attention == "gated":
            features = states if self.gate_input == "states" else self.source_embedding(source)
            logits = self.auxiliary(features, mask=mask, training=training)
            if self.gate_unit == "word":
                words = word_index(source, self._word_code_table)
                word_logits, word_mask = word_means(logits, words, mask)
                word_gates = self.gate_sampler(word_logits, mask=word_mask, training=training)
                gates = ops.take_along_axis(word_gates, words, axis=1) * ops.cast(mask, word_gates.dtype)
            else:
                gates = self.gate_sampler(logits, mask=mask, training=training)
            if training or track_density:  # the penalty (training only) and the density metric
                gates = self.gate_sparsity(gates, mask=mask, training=training)
            memory = self.attention_layer.prepare(states, gates, mask, compact=compact)
        else:
            memory = self.attention_layer.prepare(states, mask, training=training, compact=compact)
        return memory, gates

    def _attend(self, query, memory, training=None):
        if self.attention.startswith("hier"):
            return self.attention_layer.attend(query, memory, training=training, return_weights=False)
        return self.attention_layer.attend(query, memory)

    # --- decoder ---------------------------------------------------------

    def decode_step(self, tokens, state, memory, training=None):
        """One decoder step: tokens `(batch,)` -> `(logits, new state)`."""
        h, c, feed = state
        # A lookup of the embedding table, not the layer: the layer would
        # attach a padding mask that the LSTM cell cannot take.
        if not self.target_embedding.built:
            self.target_embedding.build(None)
        embedded = ops.take(self.target_embedding.embeddings, tokens, axis=0)
        embedded = self.embedding_dropout(embedded, training=training)
        if self.input_feeding:
            embedded = ops.concatenate([embedded, feed], -1)
        output, (h, c) = self.decoder.cell(embedded, [h, c], training=training)
        context, _ = self._attend(output, memory, training)
        logits = self._logits(output, context, embedded[..., : self.embedding_dim], training)
        return logits, (h, c, ops.cast(context, output.dtype))

    def _logits(self, output, context, embedded, training=None):
        features = ops.concatenate([output, ops.cast(context, output.dtype), embedded], -1)
        return self.logits(self.output_dropout(features, training=training))

    def decoder_queries(self, target_in, state, training=None, return_embedded=False):
        """The decoder states for all target steps (teacher forcing),
        without input feeding."""
        h, c, _ = state
        mask = ops.not_equal(target_in, 0)
        embedded = self.embedding_dropout(self.target_embedding(target_in), training=training)
        outputs, _, _ = self.decoder(embedded, mask=mask, initial_state=[h, c], training=training)
        if return_embedded:
            return outputs, embedded
        return outputs

    def call(self, inputs, training=None):
        source, target_in = inputs["source"], inputs["target_in"]
        memory, state, _ = self.encode(source, training=training, track_density=True)
        if not self.input_feeding:
            queries, embedded = self.decoder_queries(target_in, state, training, return_embedded=True)
            context, _ = self._attend(queries, memory, training)
            return self._logits(queries, context, embedded, training)

        def step(carry, tokens):
            _, h, c, feed = carry
            logits, (h, c, feed) = self.decode_step(tokens, (h, c, feed), memory, training)
            return logits, h, c, feed

        batch = ops.shape(source)[0]
        initial = (ops.zeros((batch, self.target_vocabulary_size)),) + tuple(state)
        logits, _, _, _ = tf.scan(step, ops.transpose(target_in), initializer=initial)
        return ops.transpose(logits, (1, 0, 2))

    def attended_nodes(self, source, target_in):
        """Source states each decoder step attends to, `(batch, target_steps)`,
        outside training (teacher-forced queries): all real states
        (Bahdanau), the open ones (gated), the top level and the path's
        children (hierarchies)."""
        states, mask, state = self.encode_source(source, training=False)
        memory, _ = self.prepare_memory(source, states, mask, training=False, compact=False)
        steps = ops.shape(target_in)[1]
        if self.attention.startswith("hier"):
            if self.input_feeding:
                # The queries are the LSTM outputs, i.e. its h, step by step.
                def step(carry, tokens):
                    _, (h, c, feed) = self.decode_step(tokens, carry, memory, training=False)
                    return h, c, feed

                states = tf.scan(step, ops.transpose(target_in), initializer=tuple(state))
                queries = ops.transpose(states[0], (1, 0, 2))
            else:
                queries = self.decoder_queries(target_in, state, training=False)
            return self.attention_layer.attended_nodes(queries, memory)
        count = ops.sum(ops.cast(memory["mask"], "float32"), -1, keepdims=True)
        return ops.repeat(count, steps, axis=1)

    def attention_flops(self, attended_nodes):
        """FLOPs of attention for decoder steps that attend to
        `attended_nodes` source states: query projection plus per node. The
        keys are projected once per sentence (`prepare`), not at every step,
        so their projection is not counted here."""
        layer = self.attention_layer
        return layer.flops_per_query() + attended_nodes * layer.flops_per_node(projected_keys=True)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "source_vocabulary_size": self.source_vocabulary_size,
                "target_vocabulary_size": self.target_vocabulary_size,
                "embedding_dim": self.embedding_dim,
                "hidden": self.hidden,
                "attention": self.attention,
                "attention_units": self.attention_units,
                "levels": self.levels,
                "block_size": self.block_size,
                "descent": self.descent,
                "halting_penalty": self.halting_penalty,
                "target_block_size": self.target_block_size,
                "max_block_size": self.max_block_size,
                "summary_inputs": self.summary_inputs,
                "input_feeding": self.input_feeding,
                "dropout": self.dropout,
                "auxiliary": self.auxiliary_encoder,
                "auxiliary_hidden_dim": self.auxiliary_hidden_dim,
                "gate_input": self.gate_input,
                "gate_unit": self.gate_unit,
                "source_word_codes": self.source_word_codes,
                "temperature": self.temperature,
                "penalty": self.penalty,
                "initial_gate_logit": self.initial_gate_logit,
                "gate_distribution": self.gate_distribution,
                "straight_through": self.straight_through,
                "inference_mode": self.inference_mode,
                "inference_density": self.inference_density,
                "target_density": self.target_density,
                "seed": self.seed,
            }
        )
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        # A `model.keras` saved before the options took the builders' names.
        return super().from_config(with_current_keys(config), custom_objects)
