import keras
import numpy as np
import pytest
import tensorflow as tf

from ganet_tf.seq2seq.decoding import beam_search
from ganet_tf.seq2seq.decoding import greedy_decode
from ganet_tf.seq2seq.decoding import length_limits
from ganet_tf.seq2seq.decoding import make_decoder
from ganet_tf.seq2seq.encoder_decoder import EncoderDecoder
from ganet_tf.seq2seq.encoder_decoder import word_index
from ganet_tf.seq2seq.encoder_decoder import word_means
from ganet_tf.seq2seq.source_words import word_begins
from ganet_tf.seq2seq.source_words import word_codes

RNG = np.random.default_rng(0)
SOURCE = RNG.integers(2, 12, size=[4, 7]).astype("int32")
SOURCE[1, 4:] = 0  # padded rows
SOURCE[3, 2:] = 0
TARGET = RNG.integers(2, 10, size=[4, 6]).astype("int32")
# A source vocabulary of SentencePiece pieces for word gates: ids 0-3 are the specials.
PIECES = ["<pad>", "<unk>", "<s>", "</s>", "\u2581Ein", "\u2581Mann", "fähr", "t", ".", "\u2581Rad", ",", "s"]
CODES = word_codes(PIECES)
TARGET[2, 3:] = 0
INPUTS = {"source": SOURCE, "target_in": TARGET}


def tiny(attention="bahdanau", **kwargs):
    return EncoderDecoder(12, 10, embedding_dim=6, hidden=5, attention=attention, attention_units=4, seed=1, **kwargs)


@pytest.mark.parametrize(
    "attention, options",
    [
        (
            "gated",
            {
                "input_feeding": True,
                "gate_distribution": "hard_concrete",
                "inference_mode": "top_k",
                "inference_density": 0.5,
                "target_density": 0.4,
            },
        ),
        ("gated", {"gate_input": "states", "auxiliary": "fnn", "auxiliary_hidden_dim": 3}),
        (
            "gated",
            {"gate_unit": "word", "source_word_codes": CODES, "inference_mode": "top_k", "inference_density": 0.5},
        ),
        ("hier-act", {"levels": 3, "target_block_size": 2.0, "max_block_size": 3}),
        ("hier-rnn", {"levels": 2, "block_size": 2, "summary_inputs": "keys"}),
    ],
)
def test_keras_file_round_trip(tmp_path, attention, options):
    model = tiny(attention, **options)
    logits = model(INPUTS, training=False).numpy()
    assert logits.shape == (4, 6, 10) and np.all(np.isfinite(logits))
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    assert loaded.get_config() == model.get_config()
    np.testing.assert_allclose(loaded(INPUTS, training=False).numpy(), logits, atol=1e-5)
    np.testing.assert_array_equal(greedy_decode(loaded, SOURCE, 5).numpy(), greedy_decode(model, SOURCE, 5).numpy())


def test_gradients_reach_the_gates_auxiliary_network():
    model = tiny("gated", penalty=0.1)
    model(INPUTS)
    with tf.GradientTape() as tape:
        logits = model(INPUTS, training=True)
        loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(TARGET, logits, from_logits=True))
        penalty = tf.add_n(model.losses)
    auxiliary = model.auxiliary.trainable_weights
    gradients = tape.gradient(loss, auxiliary)
    assert len(auxiliary) > 0 and float(penalty) > 0
    assert all(np.all(np.isfinite(g.numpy())) for g in gradients)
    assert all(np.any(g.numpy() != 0) for g in gradients)


@pytest.mark.parametrize("gate_input, reaches_encoder", [("embeddings", False), ("states", True)])
def test_gate_penalty_reaches_the_encoder_only_when_the_gates_read_its_states(gate_input, reaches_encoder):
    model = tiny("gated", gate_input=gate_input, penalty=0.1)
    model(INPUTS)
    with tf.GradientTape() as tape:
        model(INPUTS, training=True)
        penalty = tf.add_n(model.losses)
    gradients = tape.gradient(penalty, model.encoder.trainable_weights)
    reached = any(g is not None and np.any(g.numpy() != 0) for g in gradients)
    assert reached == reaches_encoder
    features = 2 * model.hidden if gate_input == "states" else model.embedding_dim
    assert model.auxiliary.weights[0].shape[0] == features


def test_teacher_forcing_with_input_feeding_matches_step_by_step_decoding():
    model = tiny("bahdanau", input_feeding=True)
    logits = model(INPUTS, training=False).numpy()
    memory, state, _ = model.encode(SOURCE)
    for step in range(TARGET.shape[1]):
        step_logits, state = model.decode_step(TARGET[:, step], state, memory)
        np.testing.assert_allclose(step_logits.numpy(), logits[:, step], atol=1e-5)


def test_attended_nodes_and_density_of_closed_gates():
    model = tiny("gated", initial_gate_logit=-10.0)  # every gate closed: fall back to all
    model(INPUTS)
    nodes = model.attended_nodes(SOURCE, TARGET).numpy()
    np.testing.assert_array_equal(nodes[:, 0], (SOURCE != 0).sum(1))
    model = tiny("gated", inference_mode="top_k", inference_density=0.5)
    model(INPUTS)
    nodes = model.attended_nodes(SOURCE, TARGET).numpy()
    np.testing.assert_array_equal(nodes[:, 0], np.ceil(0.5 * (SOURCE != 0).sum(1)))
    model = tiny("hier-cnn", block_size=2)
    model(INPUTS)
    nodes = model.attended_nodes(SOURCE, TARGET).numpy()
    # 7 states: 4 blocks + 2 children (1 in the last block); 4 states:
    # 2 + 2; 2 states: 1 + 2
    assert nodes[0, 0] in (5, 6) and nodes[2, 0] in (5, 6)
    np.testing.assert_array_equal(nodes[[1, 3], 0], [4, 3])
    feeding = tiny("hier-cnn", block_size=2, input_feeding=True)
    feeding(INPUTS)
    nodes = feeding.attended_nodes(SOURCE, TARGET).numpy()
    assert nodes.shape == (4, 6) and np.all((nodes >= 3) & (nodes <= 6))


def sequence_log_probability(model, source, tokens):
    target_in = np.concatenate([np.full([len(tokens), 1], 2), tokens[:, :-1]], 1)
    logits = model({"source": source, "target_in": target_in.astype("int32")})
    log_probs = tf.nn.log_softmax(logits).numpy()
    total = np.zeros(len(tokens))
    for row in range(len(tokens)):
        for step, token in enumerate(tokens[row]):
            total[row] += log_probs[row, step, token]
            if token == 3:
                break
    return total


def test_beam_search_of_width_one_is_greedy_and_wider_beams_score_higher():
    keras.utils.set_random_seed(0)
    model = tiny("hier-cnn", block_size=2)
    greedy = greedy_decode(model, SOURCE, tf.constant(6)).numpy()
    one = beam_search(model, SOURCE, tf.constant(6), beam_size=1, length_penalty=0.0).numpy()
    np.testing.assert_array_equal(one[:, : greedy.shape[1]], greedy)
    wide = beam_search(model, SOURCE, tf.constant(6), beam_size=4, length_penalty=0.0).numpy()
    greedy_score = sequence_log_probability(model, SOURCE, one)
    wide_score = sequence_log_probability(model, SOURCE, wide)
    assert np.all(wide_score >= greedy_score - 1e-5) and np.any(wide_score > greedy_score + 1e-3)


@pytest.mark.parametrize(
    "attention, options",
    [("bahdanau", {}), ("gated", {"inference_mode": "top_k", "inference_density": 0.5}), ("hier-act", {"levels": 3})],
)
def test_greedy_decoding_drops_ended_rows_without_changing_outputs(attention, options):
    source = np.concatenate([SOURCE, RNG.integers(2, 12, size=[12, 7]).astype("int32")])
    model = tiny(attention, **options)
    model({"source": source, "target_in": np.minimum(source[:, :5], 9)})
    # Raise the end token's bias to the median margin, so about half the
    # rows end at the first step and the rest go on (and leave the batch).
    memory, state, _ = model.encode(source, training=False)
    logits, _ = model.decode_step(tf.fill([len(source)], 2), state, memory, training=False)
    logits = logits.numpy()
    margin = np.delete(logits, 3, axis=1).max(1) - logits[:, 3]
    bias = model.logits.bias.numpy()
    bias[3] += np.median(margin) + 1e-6
    model.logits.bias.assign(bias)
    dropped = greedy_decode(model, source, 9).numpy()
    kept = greedy_decode(model, source, 9, drop_finished=False).numpy()
    ended_first = np.sum(dropped[:, 0] == 3)
    assert 4 <= ended_first < len(source) and dropped.shape[1] > 1
    np.testing.assert_array_equal(dropped, kept)
    assert np.all(dropped[dropped[:, 0] == 3, 1:] == 0)
    assert make_decoder(model)(tf.constant(source), tf.zeros([len(source)], tf.int32)).shape == (len(source), 0)


@pytest.mark.parametrize("beam_size", [1, 3])
def test_a_translation_that_never_ends_stops_at_its_own_limit_whatever_its_batch(beam_size):
    model = tiny("hier-act", levels=3)
    model(INPUTS)
    bias = model.logits.bias.numpy()
    bias[[0, 3]] = -1e4  # neither padding nor the end token wins: every row runs to its limit
    model.logits.bias.assign(bias)
    limits = length_limits(tf.constant(SOURCE)).numpy()
    np.testing.assert_array_equal(limits, [20, 16, 20, 13])  # 7, 4, 7 and 2 tokens: 1.5 times plus 10

    def decode(rows):
        source = tf.constant(SOURCE[rows][:, : max(int(np.sum(SOURCE[r] > 0)) for r in rows)])
        if beam_size == 1:
            return make_decoder(model)(source, length_limits(source)).numpy()
        return beam_search(model, source, length_limits(source), beam_size=beam_size).numpy()

    together = decode([0, 1, 2, 3])
    assert together.shape == (4, 20)
    for row, limit in enumerate(limits):
        np.testing.assert_array_equal(np.sum(together[row] > 0), limit)
        alone = decode([row])
        assert alone.shape == (1, limit)  # the batch of one decodes no further than its own limit
        np.testing.assert_array_equal(together[row, :limit], alone[0])
    np.testing.assert_array_equal(decode([3, 1]), together[[3, 1], :16])


@pytest.mark.parametrize("beam_size", [1, 3])
def test_padding_and_the_start_token_are_never_produced(beam_size):
    model = tiny("bahdanau")
    model(INPUTS)
    bias = model.logits.bias.numpy()
    bias[[0, 2]] = 1e4  # an untrained padding or start logit above every other
    bias[3] = -1e4  # and no end: every row runs to its limit
    model.logits.bias.assign(bias)
    limits = length_limits(tf.constant(SOURCE)).numpy()
    if beam_size == 1:
        decoded = greedy_decode(model, SOURCE, limits).numpy()
    else:
        decoded = beam_search(model, SOURCE, limits, beam_size=beam_size).numpy()
    for row, limit in enumerate(limits):
        assert not np.isin(decoded[row, :limit], [0, 2, 3]).any()
        assert np.all(decoded[row, limit:] == 0)


def test_bad_arguments():
    with pytest.raises(ValueError, match="attention"):
        tiny("local")
    with pytest.raises(ValueError, match="hidden"):
        EncoderDecoder(12, 10, hidden=0)
    with pytest.raises(ValueError, match="Received: gate_input=words"):
        tiny("gated", gate_input="words")
    with pytest.raises(ValueError, match="Received: gate_unit=piece"):
        tiny("gated", gate_unit="piece")
    with pytest.raises(ValueError, match="Received: source_word_codes=None"):
        tiny("gated", gate_unit="word")
    with pytest.raises(ValueError, match="one code in"):
        tiny("gated", gate_unit="word", source_word_codes=CODES[:-1])


def test_word_index_and_means_match_a_numpy_reference_of_the_explained_words():
    # Sentences of random pieces, each padded: the words are `word_begins`' (what `--explain` shows).
    rng = np.random.default_rng(3)
    source = rng.integers(4, len(PIECES), size=[6, 9]).astype("int32")
    for row, length in enumerate([9, 1, 4, 7, 2, 5]):
        source[row, length:] = 0
    values = rng.normal(size=source.shape).astype("float32")
    words = keras.ops.convert_to_numpy(word_index(source, keras.ops.convert_to_tensor(CODES, "int32")))
    means, word_mask = (keras.ops.convert_to_numpy(x) for x in word_means(values, words, source > 0))
    for row, ids in enumerate(source):
        length = int(np.sum(ids > 0))
        expected = np.cumsum(word_begins([PIECES[i] for i in ids[:length]])) - 1
        np.testing.assert_array_equal(words[row, :length], expected)
        count = expected[-1] + 1
        np.testing.assert_array_equal(word_mask[row], np.arange(source.shape[1]) < count)
        reference = [values[row, :length][expected == word].mean() for word in range(count)]
        np.testing.assert_allclose(means[row, :count], reference, rtol=1e-6)


@pytest.mark.parametrize("training", [True, False])
def test_word_gates_open_and_close_the_pieces_of_a_word_together(training):
    source = np.array([[4, 6, 7, 8, 9, 11, 10, 5], [5, 6, 7, 11, 8, 0, 0, 0]], "int32")
    model = tiny("gated", gate_unit="word", source_word_codes=CODES, inference_mode="top_k", inference_density=0.5)
    _, _, gates = model.encode(source, training=training)
    gates = keras.ops.convert_to_numpy(gates)
    for row, ids in enumerate(source):
        length = int(np.sum(ids > 0))
        words = np.cumsum(word_begins([PIECES[i] for i in ids[:length]])) - 1
        for word in range(words[-1] + 1):
            assert len(set(gates[row, :length][words == word].tolist())) == 1
        assert np.all(gates[row, length:] == 0)
        if not training:  # top_k 0.5 of the words: round(0.5 W), halves up
            opened = {word for word in range(words[-1] + 1) if gates[row, :length][words == word][0] > 0}
            assert len(opened) == int(np.floor(0.5 * (words[-1] + 1) + 0.5))


@pytest.mark.parametrize("initial_gate_logit, density", [(10.0, 1.0), (-10.0, 0.0)])
def test_validation_density_is_the_density_of_the_test_gates(initial_gate_logit, density):
    model = tiny("gated", initial_gate_logit=initial_gate_logit)
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0))
    result = model.evaluate(INPUTS, TARGET, verbose=0, return_dict=True)
    assert result["density"] == pytest.approx(density)


@pytest.mark.parametrize("max_block_size", [None, 3])
def test_act_decoding_steps_on_the_gathered_path_match_teacher_forcing(max_block_size):
    model = tiny("hier-act", levels=3, target_block_size=2.0, max_block_size=max_block_size)
    model(INPUTS)
    for halt in model.attention_layer.halting_units:  # blocks of 1-4 states
        halt.set_weights([np.random.default_rng(5).normal(size=[10, 1]), np.array([-1.0])])
    logits = model(INPUTS, training=False).numpy()  # the dense path
    memory, state, _ = model.encode(SOURCE)
    assert memory["levels"][1]["mask"].numpy().sum() > 4  # blocks below the sentence
    for step in range(TARGET.shape[1]):  # decode_step: the gathered path
        step_logits, state = model.decode_step(TARGET[:, step], state, memory)
        real = TARGET[:, step] != 0  # (teacher forcing skips padded steps)
        np.testing.assert_allclose(step_logits.numpy()[real], logits[real, step], atol=1e-5)


def test_act_trains_under_xla_and_its_multipliers_step():
    model = tiny("hier-act", levels=3, target_block_size=2.0)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
        jit_compile=True,
    )
    history = model.fit(INPUTS, TARGET, epochs=2, batch_size=4, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    multipliers = [float(m.numpy()) for m in model.attention_layer.halting_multipliers]
    assert len(multipliers) == 2 and all(m != 1e-3 for m in multipliers)
