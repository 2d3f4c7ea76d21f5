"""What the studies and the driver score a `seq2seq` model with: teacher-forced
test scores, decoding, and a finished run folder's split read back and scored."""

import dataclasses
import math
import os
import time

import keras
import numpy as np
import tensorflow as tf

from ganet_tf.policy import check_stop_signal
from ganet_tf.policy import load_model_file
from ganet_tf.policy.run_folder import MODEL_FILE
from ganet_tf.seq2seq.config import Seq2SeqConfig
from ganet_tf.seq2seq.datasets import load_task
from ganet_tf.seq2seq.decoding import MAX_EXTRA_TOKENS
from ganet_tf.seq2seq.decoding import length_limits
from ganet_tf.seq2seq.decoding import make_decoder
from ganet_tf.seq2seq.initial_run import finished_run_files
from ganet_tf.seq2seq.run_vocabularies import VOCABULARY_FILE
from ganet_tf.seq2seq.run_vocabularies import vocabularies_from_json
from ganet_tf.seq2seq.scores import corpus_bleu
from ganet_tf.seq2seq.scores import exact_match
from ganet_tf.seq2seq.scores import symbol_error_rate
from ganet_tf.seq2seq.vocabulary import UNKNOWN_ID
from ganet_tf.seq2seq.vocabulary import ids_to_tokens
from ganet_tf.seq2seq.vocabulary import kept_row
from ganet_tf.seq2seq.vocabulary import make_dataset


def encoded_datasets(config, splits, source_vocabulary, target_vocabulary):
    """Token ids `{split: (source ids, target ids)}` and the batched datasets."""
    ids = {
        split: (source_vocabulary.encode(pairs[0]), target_vocabulary.encode(pairs[1], target=True))
        for split, pairs in splits.items()
    }
    keras.utils.set_random_seed(config.seed)
    # Only training batches are shuffled and bucketed: validation and test
    # losses are averaged over the same batches whatever `--buckets` says.
    datasets = {
        split: make_dataset(*ids[split], config.batch_size)
        if split != "train"
        else make_dataset(*ids[split], config.batch_size, shuffle=True, seed=config.seed, buckets=config.buckets)
        for split in ids
    }
    return ids, datasets


def teacher_forced_scores(model, dataset):
    """Test cross-entropy per token (no regularisers), attended source
    states per decoded token, attended density, attention FLOPs and (gated)
    the share of sentences whose gates are all closed (the fallback rows)."""
    total_loss = total_tokens = total_nodes = total_density = total_flops = 0.0
    closed_rows = sentences = 0
    gated = model.attention == "gated"
    for inputs, target_out in dataset:
        logits = model(inputs, training=False)
        token_mask = tf.cast(tf.not_equal(target_out, 0), tf.float32)
        loss = tf.keras.losses.sparse_categorical_crossentropy(target_out, logits, from_logits=True)
        total_loss += float(tf.reduce_sum(loss * token_mask))
        nodes = model.attended_nodes(inputs["source"], inputs["target_in"])
        lengths = tf.reduce_sum(tf.cast(tf.not_equal(inputs["source"], 0), tf.float32), -1)
        density = nodes / tf.maximum(lengths[:, None], 1.0)
        total_tokens += float(tf.reduce_sum(token_mask))
        total_nodes += float(tf.reduce_sum(nodes * token_mask))
        total_density += float(tf.reduce_sum(density * token_mask))
        total_flops += float(tf.reduce_sum(model.attention_flops(nodes) * token_mask))
        if gated:
            _, _, gates = model.encode(inputs["source"], training=False)
            real = tf.cast(tf.not_equal(inputs["source"], 0), gates.dtype)
            open_gates = tf.reduce_sum(gates * real, -1)
            closed_rows += int(tf.reduce_sum(tf.cast((open_gates == 0) & (lengths > 0), tf.int32)))
        sentences += int(tf.reduce_sum(tf.cast(lengths > 0, tf.int32)))
    tokens = max(total_tokens, 1.0)
    return {
        "test_loss": total_loss / tokens,
        "test_perplexity": math.exp(total_loss / tokens),
        "attended_nodes_per_token": total_nodes / tokens,
        "test_attended_density": total_density / tokens,
        "test_all_closed_rate": closed_rows / max(sentences, 1) if gated else None,
        "attention_flops_per_token": total_flops / tokens,
    }


def decoded_scores(model, config, test_ids, test_pairs, target_vocabulary):
    """Decodes the test sources; returns `(scores, hypotheses as text)`.

    The scores are the decoding time, the beam size, the number of
    translations that hold the unknown id (`[UNK]` of a word vocabulary;
    a subword model can emit it only if it predicts id 1), and BLEU
    (Multi30k) or the exact-match rate and the symbol error rate (the
    synthetic tasks).
    """
    decoded, seconds = decode_all(model, test_ids[0], config.batch_size, config.beam_size, verbose=config.verbose)
    hypotheses = [ids_to_tokens(row, target_vocabulary.pieces) for row in decoded]
    references = [ids_to_tokens(row[1:], target_vocabulary.pieces) for row in test_ids[1]]
    texts = target_vocabulary.decode(decoded)
    scores = {
        "decode_seconds_per_sentence": seconds,
        "beam_size": config.beam_size,
        "test_unknown_translations": sum(UNKNOWN_ID in kept_row(row) for row in decoded),
        # Each translation's length limited by its own source
        # (`decoding.length_limits`); a summary without the key limited it
        # by its batch's longest source.
        "decode_length_limit": "sentence",
    }
    if config.task == "multi30k":
        scores["test_bleu"] = corpus_bleu(texts, test_pairs[1])
        scores["test_exact_match"] = scores["test_symbol_error_rate"] = None
    else:
        scores["test_bleu"] = None
        scores["test_exact_match"] = exact_match(hypotheses, references)
        scores["test_symbol_error_rate"] = symbol_error_rate(hypotheses, references)
    return scores, texts


def decoder_batches(source_ids, batch_size, max_extra=MAX_EXTRA_TOKENS):
    """The decoder's inputs: `(padded source ids, max_length)` per batch of
    `batch_size` sources, in order; each source may produce up to 1.5 times
    its own tokens plus `max_extra` (`decoding.length_limits`)."""
    batches = []
    for start in range(0, len(source_ids), batch_size):
        rows = source_ids[start : start + batch_size]
        padded = np.zeros([len(rows), max(len(r) for r in rows)], "int32")
        for i, row in enumerate(rows):
            padded[i, : len(row)] = row
        padded = tf.constant(padded)
        batches.append((padded, length_limits(padded, max_extra)))
    return batches


def decode_all(model, source_ids, batch_size, beam_size=1, max_extra=MAX_EXTRA_TOKENS, verbose=1, decoder=None):
    """Decodes every source; returns `(token id rows, seconds per sentence)`.

    The first batch is decoded once before timing, so tracing is not timed.
    `decoder`: a `make_decoder(model, beam_size)` to reuse (not traced again).
    """
    decoder = decoder or make_decoder(model, beam_size)
    batches = decoder_batches(source_ids, batch_size, max_extra)
    decoder(*batches[0])
    progress = keras.utils.Progbar(len(batches), verbose=verbose, unit_name="batch")
    outputs = []
    started = time.perf_counter()
    for number, (padded, limit) in enumerate(batches, 1):
        check_stop_signal()
        outputs.extend(decoder(padded, limit).numpy())
        progress.update(number)
    seconds = time.perf_counter() - started
    return outputs, seconds / max(len(source_ids), 1)


def load_run(run_dir, data_dir=None, split="test", with_pairs=False):
    """A finished run folder's `(config, model, ids, dataset)` of one split
    (`"test"` or `"val"`) as the run read it, encoded with the run's
    vocabularies; `with_pairs` adds the split's text pairs and the
    vocabularies. `data_dir` overrides the one the run was given. A
    missing or damaged file of the run is one input error naming it."""
    metrics, vocabularies = finished_run_files(run_dir, flag="")
    saved = {key: value for key, value in metrics["config"].items() if key in Seq2SeqConfig.__dataclass_fields__}
    config = Seq2SeqConfig(**{**saved, "data_dir": data_dir or saved.get("data_dir")})
    splits = load_task(config.task, config.data_dir, config.limit, config.seed, config.min_length, config.max_length)
    vocabularies = vocabularies_from_json(vocabularies, os.path.join(run_dir, VOCABULARY_FILE))
    ids, datasets = encoded_datasets(config, {split: splits[split]}, *vocabularies)
    model = load_model_file(os.path.join(run_dir, MODEL_FILE))
    if with_pairs:
        return config, model, ids[split], datasets[split], splits[split], vocabularies
    return config, model, ids[split], datasets[split]


def decoded_split_scores(run_dir, split, data_dir=None):
    """Greedy-decodes one split of a finished run with its saved model;
    returns `{"bleu", "exact_match", "symbol_error_rate",
    "decode_seconds_per_sentence", "unknown_translations"}` (BLEU for
    Multi30k, exact match and symbol error rate for the synthetic tasks,
    the others None).
    Choosing between runs by their `"val"` scores keeps the test set out."""
    config, model, ids, _, pairs, vocabularies = load_run(run_dir, data_dir, split, with_pairs=True)
    config = dataclasses.replace(config, verbose=0)
    scores, _ = decoded_scores(model, config, ids, pairs, vocabularies[1])
    return {
        "bleu": scores["test_bleu"],
        "exact_match": scores["test_exact_match"],
        "symbol_error_rate": scores["test_symbol_error_rate"],
        "decode_seconds_per_sentence": scores["decode_seconds_per_sentence"],
        "unknown_translations": scores["test_unknown_translations"],
    }


def rescore_run(run_dir, data_dir=None):
    """The teacher-forced test scores of a finished run folder, recomputed
    from its `model.keras` (by the code of today: its FLOPs count and
    all-closed rate)."""
    _, model, _, dataset = load_run(run_dir, data_dir)
    return teacher_forced_scores(model, dataset)
