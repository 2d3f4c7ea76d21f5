"""Greedy and beam-search decoding of an `EncoderDecoder`, in TF ops."""

import tensorflow as tf

from ganet_tf.seq2seq.vocabulary import END_ID
from ganet_tf.seq2seq.vocabulary import PAD_ID
from ganet_tf.seq2seq.vocabulary import START_ID

# Ended rows leave a greedy batch once they are at least 1/DROP_FRACTION of it.
DROP_FRACTION = 4
# A translation that never produces the end token stops after 1.5 times its
# own source's tokens plus this many (`length_limits`).
MAX_EXTRA_TOKENS = 10
# Never a training target (the loss ignores padding; the start token only
# feeds the decoder), so never produced: an undertrained model could
# otherwise put them mid-sentence, where detokenising drops them silently.
NEVER_PRODUCED = (PAD_ID, START_ID)


def length_limits(source, max_extra=MAX_EXTRA_TOKENS):
    """The most tokens each row of `source` may produce: int32 `(batch,)`,
    1.5 times the row's own tokens (padding, id 0, not counted) plus
    `max_extra`. A row's limit follows its own sentence only, so its
    translation does not depend on the other sentences of its batch."""
    tokens = tf.reduce_sum(tf.cast(tf.not_equal(source, PAD_ID), tf.int32), axis=1)
    return tokens + tokens // 2 + max_extra


def producible(scores):
    """`scores` `(rows, vocabulary)` with the `NEVER_PRODUCED` ids set to
    -1e9 (float32), so that neither argmax nor beam search picks them."""
    scores = tf.cast(scores, tf.float32)
    ids = tf.range(tf.shape(scores)[-1])
    never = tf.reduce_any(tf.equal(ids[:, None], tf.constant(NEVER_PRODUCED)[None]), axis=1)
    return tf.where(never[None], tf.constant(-1e9, tf.float32), scores)


def _row_limits(max_length, batch):
    return tf.broadcast_to(tf.cast(max_length, tf.int32), [batch])


def greedy_decode(model, source, max_length, drop_finished=True):
    """Most probable next token at every step.

    Padding and the start token (`NEVER_PRODUCED`) are never picked.
    Rows are independent, so a row that has produced the end token leaves
    the batch: once at least `1 / DROP_FRACTION` of the rows still decoded
    have ended, they are gathered away (tokens, decoder state and the
    attention memory), and later steps work on the rest only. The work of a
    batch then follows the tokens its rows produce, not its longest row
    times the batch size. The outputs are the same as decoding every row to
    the end (`drop_finished=False`).

    Args:
        model: an `EncoderDecoder`.
        source: int32 `(batch, source_steps)` ids, 0 padding.
        max_length: int32 `(batch,)`, the most tokens each row may produce
            (e.g. `length_limits(source)`), or a scalar for every row. A
            row that reaches its limit stops there, without an end token.
        drop_finished: whether ended rows leave the batch.

    Returns:
        int32 `(batch, steps <= max(max_length))`: tokens, the end token
        included, padding (0) after it.
    """
    memory, state, _ = model.encode(source, training=False)
    batch = tf.shape(source)[0]
    limits = _row_limits(max_length, batch)
    outputs = tf.TensorArray(tf.int32, size=0, dynamic_size=True, element_shape=[None])

    def running(step, tokens, finished, rows, state, memory, outputs):
        return tf.reduce_any(tf.logical_not(finished))

    def one_step(step, tokens, finished, rows, state, memory, outputs):
        logits, state = model.decode_step(tokens, state, memory, training=False)
        tokens = tf.where(finished, PAD_ID, tf.argmax(producible(logits), -1, output_type=tf.int32))
        outputs = outputs.write(step, tf.tensor_scatter_nd_update(tf.fill([batch], PAD_ID), rows[:, None], tokens))
        at_limit = step + 1 >= tf.gather(limits, rows)
        finished = tf.logical_or(finished, tf.logical_or(tf.equal(tokens, END_ID), at_limit))
        carried = (tokens, finished, rows, state, memory)
        if drop_finished:
            ended = tf.reduce_sum(tf.cast(finished, tf.int32))

            def drop():
                kept = tf.where(tf.logical_not(finished))[:, 0]
                return tf.nest.map_structure(lambda tensor: tf.gather(tensor, kept), carried)

            carried = tf.cond(ended * DROP_FRACTION >= tf.size(finished), drop, lambda: carried)
        return (step + 1, *carried, outputs)

    # A row with no token to produce (a limit of 0) has ended before the first step.
    start = (tf.constant(0), tf.fill([batch], START_ID), limits <= 0, tf.range(batch), state, memory)
    invariants = tf.nest.map_structure(lambda t: tf.TensorShape([None]).concatenate(t.shape[1:]), start[1:])
    steps, *_, outputs = tf.while_loop(
        running,
        one_step,
        (*start, outputs),
        shape_invariants=(tf.TensorShape([]), *invariants, tf.TensorShape(None)),
    )
    # An empty TensorArray cannot stack (its element shape is not fully known).
    return tf.cond(steps > 0, lambda: tf.transpose(outputs.stack()), lambda: tf.zeros([batch, 0], tf.int32))


def beam_search(model, source, max_length, beam_size=4, length_penalty=0.6):
    """Beam search: keeps the `beam_size` best partial translations.

    Finished beams keep their log-probability; at the end each sentence
    takes the beam with the best `log p / length ** length_penalty`. The
    beams of a sentence end at its limit, and never pick padding or the
    start token, as in `greedy_decode`.

    Returns:
        int32 `(batch, max(max_length))`, as `greedy_decode`.
    """
    memory, state, _ = model.encode(source, training=False)
    batch = tf.shape(source)[0]
    flat = batch * beam_size
    limits = _row_limits(max_length, batch)
    beam_limits = tf.repeat(limits, beam_size)
    longest = tf.reduce_max(tf.concat([limits, [0]], 0))  # 0 for an empty batch

    def tile(tensor):
        return tf.repeat(tensor, beam_size, axis=0)

    memory = tf.nest.map_structure(tile, memory)
    state = tf.nest.map_structure(tile, state)
    tokens = tf.fill([flat], START_ID)
    first = tf.concat([[0.0], tf.fill([beam_size - 1], -1e9)], 0)
    scores = tf.tile(first, [batch])
    finished = beam_limits <= 0
    lengths = tf.zeros([flat], tf.float32)
    sequences = tf.zeros([flat, longest], tf.int32)
    offsets = tf.repeat(tf.range(batch) * beam_size, beam_size)
    for step in tf.range(longest):
        logits, state = model.decode_step(tokens, state, memory, training=False)
        log_probs = producible(tf.nn.log_softmax(tf.cast(logits, tf.float32)))
        vocabulary = tf.shape(log_probs)[1]
        only_pad = tf.one_hot(PAD_ID, vocabulary, on_value=0.0, off_value=-1e9)
        log_probs = tf.where(finished[:, None], only_pad[None], log_probs)
        total = tf.reshape(scores[:, None] + log_probs, [batch, beam_size * vocabulary])
        scores, index = tf.math.top_k(total, k=beam_size)
        scores = tf.reshape(scores, [flat])
        index = tf.reshape(index, [flat])
        parents = offsets + index // vocabulary
        tokens = index % vocabulary
        state = tf.nest.map_structure(lambda t, p=parents: tf.gather(t, p), state)
        was_finished = tf.gather(finished, parents)
        lengths = tf.gather(lengths, parents) + tf.cast(tf.logical_not(was_finished), tf.float32)
        position = tf.one_hot(step, longest, dtype=tf.int32)
        sequences = tf.gather(sequences, parents) + tokens[:, None] * position[None]
        finished = tf.logical_or(was_finished, tf.logical_or(tf.equal(tokens, END_ID), step + 1 >= beam_limits))
        if tf.reduce_all(finished):
            break
    normalised = scores / tf.maximum(lengths, 1.0) ** length_penalty
    best = tf.argmax(tf.reshape(normalised, [batch, beam_size]), -1, output_type=tf.int32)
    return tf.gather(sequences, tf.range(batch) * beam_size + best)


def make_decoder(model, beam_size=1, drop_finished=True):
    """A `tf.function` `(source, max_length) -> tokens` for `model`, with
    `max_length` int32 `(batch,)` (`length_limits(source)`; `drop_finished`:
    as in `greedy_decode`)."""
    signature = [
        tf.TensorSpec([None, None], tf.int32, name="source"),
        tf.TensorSpec([None], tf.int32, name="max_length"),
    ]
    if beam_size <= 1:
        return tf.function(
            lambda source, max_length: greedy_decode(model, source, max_length, drop_finished),
            input_signature=signature,
        )
    return tf.function(
        lambda source, max_length: beam_search(model, source, max_length, beam_size),
        input_signature=signature,
    )
