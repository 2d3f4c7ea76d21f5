import numpy as np
import pytest

from ganet_tf.seq2seq.encoder_decoder import EncoderDecoder
from ganet_tf.seq2seq.run import teacher_forced_scores
from ganet_tf.seq2seq.vocabulary import make_dataset

RNG = np.random.default_rng(0)
SOURCE = [list(RNG.integers(2, 12, size=length)) for length in (7, 4, 6, 2)]
TARGET = [list(RNG.integers(4, 10, size=length)) for length in (5, 3, 6, 2)]


def scores(attention, **kwargs):
    model = EncoderDecoder(12, 10, embedding_dim=6, hidden=5, attention=attention, attention_units=4, seed=1, **kwargs)
    return teacher_forced_scores(model, make_dataset(SOURCE, TARGET, batch_size=3))


@pytest.mark.parametrize("gate_bias, rate", [(-10.0, 1.0), (10.0, 0.0)])
def test_all_closed_rate_counts_the_sentences_the_fallback_attends(gate_bias, rate):
    result = scores("gated", gate_bias=gate_bias)
    assert result["test_all_closed_rate"] == rate
    # closed or open, every state is attended: the fallback counts in the density
    assert result["test_attended_density"] == pytest.approx(1.0)


def test_top_k_gates_leave_no_sentence_all_closed():
    result = scores("gated", gate_bias=-10.0, inference_mode="top_k", inference_density=0.2)
    assert result["test_all_closed_rate"] == 0.0
    assert result["test_attended_density"] < 0.6


def test_all_closed_rate_is_none_without_gates():
    result = scores("bahdanau")
    assert result["test_all_closed_rate"] is None
    assert result["test_attended_density"] == pytest.approx(1.0)
