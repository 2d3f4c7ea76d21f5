"""`python -m ganet_tf export` of a seq2seq run: its translator for TF Serving."""

import json
import os

import tensorflow as tf

from ganet_tf.export.export_saved_model import check_export_arguments
from ganet_tf.export.export_saved_model import version_folder
from ganet_tf.export.export_saved_model import write_version
from ganet_tf.export.model_config import write_model_config
from ganet_tf.export.warmup import serving_apis
from ganet_tf.export.warmup import vocabulary_texts
from ganet_tf.models.gate_layers import gate_rule
from ganet_tf.seq2seq.run import EXAMPLES_FILE
from ganet_tf.seq2seq.run_translator import load_translator_parts
from ganet_tf.seq2seq.translator import Translator

SENTENCES_INPUT = "sentences"
# Warmup sentences taken from the run's `examples.json` by default.
WARMUP_SENTENCES = 8


def export_translator(
    run_dir, name, version=None, base="saved_models", overwrite=False, warmup_texts=None, test_gates=None
):
    """Exports a seq2seq run's translator as `base/name/version/` for TF Serving.

    The SavedModel is the one `python -m ganet_tf seq2seq --export` writes
    (`ganet_tf.seq2seq.translator.Translator`): its `serving_default`
    signature takes a batch of raw source strings (input `sentences`) and
    returns their greedy, detokenised `translations`. Its `assets.extra/`
    holds TF Serving warmup requests and a copy of the run's
    `metrics.json`. As `export_saved_model`, it is written to a hidden
    folder, loaded back and checked (the warmup requests translate, no
    Python callbacks), then renamed into place, and `base/models.config` is
    regenerated. A subword run's SavedModel holds tensorflow-text's
    SentencePiece op: `import tensorflow_text` before loading it in Python.

    Args:
        run_dir: a folder written by `python -m ganet_tf seq2seq --out`.
        name: the model name TF Serving serves it under (as in
            `export_saved_model`, like `version`, `base` and `overwrite`).
        version: positive integer; by default the next version.
        base: folder of all exported models. Defaults to `"saved_models"`.
        overwrite: replace an existing version. Defaults to `False`.
        warmup_texts: optional list of source sentences for the warmup
            requests; by default the first sources of the run's
            `examples.json`.
        test_gates: optional test-gate rule of a gated run, from
            `ganet_tf.policy.trained_run.inference_rule`: the export
            serves it instead of the run's own rule
            (`ganet_tf.seq2seq.run_translator.with_translation_gates`), and
            its `metrics.json` copy names it in full under
            `served_test_gates`.

    Returns:
        The path of the written version folder.

    Example:

    >>> # Not run by the tests: needs a trained run (`seq2seq --out runs/m30k`).
    >>> export_translator("runs/m30k", "m30k")  # doctest: +SKIP
    'saved_models/m30k/1'
    """
    check_export_arguments(name, version, warmup_texts)
    serving_apis()  # fail early without tensorflow-serving-api
    model, source, target_vocabulary = load_translator_parts(run_dir, test_gates)
    translator = Translator(model, source, target_vocabulary)
    served = None if test_gates is None else gate_rule(model)
    target = version_folder(base, name, version, overwrite)
    if warmup_texts is None:
        warmup_texts = _example_sources(run_dir) or vocabulary_texts(translator.source_vocabulary.tokens, 16)
    archive = _TranslatorArchive(translator)
    write_version(archive, target, name, list(warmup_texts), run_dir, overwrite, served, SENTENCES_INPUT)
    write_model_config(base)
    return target


class _TranslatorArchive:
    """What `write_version` writes: the translator, saved as a SavedModel."""

    def __init__(self, translator):
        self.translator = translator

    def write_out(self, path, verbose=False):
        del verbose
        tf.saved_model.save(self.translator, path, signatures={"serving_default": self.translator.translate})


def _example_sources(run_dir):
    """The first sources of the run's `examples.json`; none where it is
    missing or unreadable (the warmup then uses vocabulary tokens)."""
    try:
        with open(os.path.join(run_dir, EXAMPLES_FILE), encoding="utf-8") as handle:
            examples = json.load(handle)
    except (OSError, ValueError):
        return []
    sources = [item.get("source") for item in examples if isinstance(item, dict)] if isinstance(examples, list) else []
    return [source for source in sources if isinstance(source, str) and source.strip()][:WARMUP_SENTENCES]
