"""`TextTranslator`: a seq2seq run folder on raw sentences, as the run decoded them."""

import json
import os
import shutil

import pytest

from ganet_tf import load_translator
from ganet_tf.errors import GANetInputError
from ganet_tf.inference import TextTranslator


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
