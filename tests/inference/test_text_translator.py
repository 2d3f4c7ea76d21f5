"""`TextTranslator`: a seq2seq run folder on raw sentences, as the run decoded them."""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from ganet_tf import load_translator
from ganet_tf.errors import GANetInputError
from ganet_tf.inference import TextTranslator
from ganet_tf.models import gate_rule


def test_predict_gives_the_runs_own_greedy_translations(translator_run):
    with open(os.path.join(translator_run, "examples.json"), encoding="utf-8") as handle:
        examples = json.load(handle)
    translator = load_translator(translator_run)
    # The run decoded its test sentences in batches of --batch-size 4; a
    # translation's length limit is its own sentence's, so any batch agrees.
    translations = translator.predict([example["source"] for example in examples], batch_size=3)
    assert translator.predict([example["source"] for example in examples], batch_size=1) == translations
    assert translations == [example["hypothesis"] for example in examples]
    assert len(translations) == 4 and all(isinstance(text, str) for text in translations)
    assert translator.predict("") == translator.predict([""])  # an empty sentence decodes too


def test_bad_runs_are_one_input_error(translator_run, classifier_run, tmp_path):
    with pytest.raises(GANetInputError, match="No vocabularies.json in"):
        TextTranslator.from_run(str(tmp_path))
    with pytest.raises(GANetInputError, match="is a classification run"):
        TextTranslator.from_run(classifier_run)
    broken = tmp_path / "broken"
    shutil.copytree(translator_run, broken)
    (broken / "vocabularies.json").write_text('{"source": ["s1"], "target": ["[start]", "[end]"]}')
    with pytest.raises(GANetInputError, match="come from different runs"):
        TextTranslator.from_run(str(broken))
    (broken / "vocabularies.json").write_text("{")
    with pytest.raises(GANetInputError, match="is not a valid vocabulary file"):
        TextTranslator.from_run(str(broken))


def _open_share(translator, sentences):
    """The share of the real source tokens the translator's test gates open."""
    source = translator.translator.source_vocabulary.tokenize_graph(tf.constant(sentences)).to_tensor()
    _, _, gates = translator.translator.model.encode(tf.cast(source, tf.int32), training=False)
    real = source.numpy() > 0
    return np.asarray(gates)[real].mean(), real.sum(1)


def test_a_gated_run_serves_another_test_gate_rule(gated_translator_run, translator_run):
    with open(os.path.join(gated_translator_run, "examples.json"), encoding="utf-8") as handle:
        sources = [example["source"] for example in json.load(handle)]
    own = load_translator(gated_translator_run)
    assert gate_rule(own.translator.model) == {"inference_mode": "top_k", "inference_density": 0.5}
    # top_k without its parameter takes the run's target density (0.5): the run's own rule.
    same = load_translator(gated_translator_run, {"inference_mode": "top_k"})
    assert gate_rule(same.translator.model) == {"inference_mode": "top_k", "inference_density": 0.5}
    assert same.predict(sources) == own.predict(sources)
    share, lengths = _open_share(own, sources)
    assert share == pytest.approx(np.sum(np.floor(0.5 * lengths + 0.5)) / np.sum(lengths))
    every = load_translator(gated_translator_run, {"inference_mode": "top_k", "inference_density": 1.0})
    assert _open_share(every, sources)[0] == 1.0
    assert len(every.predict(sources)) == len(sources)
    with pytest.raises(GANetInputError, match="has no gates to serve under --inference-mode"):
        load_translator(translator_run, {"inference_mode": "top_k", "inference_density": 0.5})


def test_explain_gives_each_translation_and_what_the_model_attended_to(hierarchical_translator_run, translator_run):
    translator = load_translator(hierarchical_translator_run)
    sentences = ["s1 s2 s3", "S4 s5", ""]
    results = translator.explain(np.asarray(sentences), batch_size=2)
    assert [item["source"] for item in results] == sentences
    assert [item["translation"] for item in results] == translator.predict(sentences)
    assert [item["explain"]["blocks"] for item in results] == [[["s1", "s2"], ["s3"]], [["s4", "s5"]], []]
    assert [item["explain"]["nodes"] for item in results] == [[3, 2], [2, 1], [0, 0]]
    with pytest.raises(ValueError, match="batch_size"):
        translator.explain(sentences, batch_size=0)
    with pytest.raises(ValueError, match="Received: attention=bahdanau"):
        load_translator(translator_run).explain(sentences)
