"""A seq2seq run's two vocabularies: learned, written to and read from
`vocabularies.json`.

The file is `{"source": [...], "target": [...]}`, the tokens from id 2 on;
a subword run adds `"tokenizer"` (`"unigram"` or `"bpe"`) and its one
SentencePiece model, base64 (`"model"`): subword runs learn a joint model
on both sides' training sentences, so the two lists are the same. A file
without `"tokenizer"` is a word-level run (every run before subwords).

Why one joint model rather than one a side: tensorflow-text keeps a
SentencePiece model as a kernel-owned TensorFlow resource, and in a
reloaded SavedModel two such resources collide, the second side then
tokenising with the first side's model (docs/seq2seq.md). With one model
there is nothing to collide, and joint subword vocabularies are the usual
choice for related languages (shared names, numbers, cognates).
"""

from ganet_tf.errors import GANetInputError
from ganet_tf.seq2seq.config import SUBWORD_TOKENIZERS
from ganet_tf.seq2seq.config import WORD
from ganet_tf.seq2seq.subword_vocabulary import SubwordVocabulary
from ganet_tf.seq2seq.vocabulary import build_vocabulary
from ganet_tf.seq2seq.word_vocabulary import WordVocabulary

# The vocabularies' file in a run folder and in a `--backup-dir`.
VOCABULARY_FILE = "vocabularies.json"


def learn_vocabularies(sources, targets, tokenizer, size=None, min_count=1):
    """`(source, target)` vocabularies learned on the training pairs.

    Args:
        sources, targets: the training sentences.
        tokenizer: `"word"`, `"unigram"` or `"bpe"`.
        size: the subword vocabulary's number of ids (one joint model).
        min_count: a word side's least count (rarer words are unknown).
    """
    if tokenizer == WORD:
        return (
            WordVocabulary(build_vocabulary(sources, min_count=min_count)),
            WordVocabulary(build_vocabulary(targets, min_count=min_count, target=True)),
        )
    joint = SubwordVocabulary.train([*sources, *targets], size, tokenizer)
    return joint, joint


def vocabularies_to_json(source, target, tokenizer):
    """The `vocabularies.json` object of two vocabularies."""
    saved = {"source": source.tokens, "target": target.tokens}
    if tokenizer != WORD:
        if target is not source:
            raise ValueError("A subword run has one joint vocabulary: pass it as both `source` and `target`.")
        saved.update(tokenizer=tokenizer, model=source.to_json())
    return saved


def is_vocabularies(value):
    """Whether `value` looks like a `vocabularies.json` object."""
    return (
        isinstance(value, dict)
        and all(
            isinstance(value.get(side), list) and all(isinstance(token, str) for token in value[side])
            for side in ("source", "target")
        )
        and (
            value.get("tokenizer", WORD) == WORD
            or (value.get("tokenizer") in SUBWORD_TOKENIZERS and isinstance(value.get("model"), str))
        )
    )


def saved_tokenizer(saved):
    """The tokenizer of a `vocabularies.json` object."""
    return saved.get("tokenizer", WORD)


def vocabularies_from_json(saved, path=VOCABULARY_FILE):
    """`(source, target)` vocabularies of a `vocabularies.json` object;
    a damaged one is one input error naming `path`."""
    if not is_vocabularies(saved):
        raise GANetInputError(
            f"{path} is not a valid vocabulary file (no source and target token lists, or a damaged "
            "subword model): copy it again from the run folder, or retrain."
        )
    if saved_tokenizer(saved) == WORD:
        return WordVocabulary(saved["source"]), WordVocabulary(saved["target"])
    try:
        joint = SubwordVocabulary.from_json(saved["model"])
    except (ValueError, RuntimeError) as error:
        message = (str(error).splitlines() or [type(error).__name__])[0][:120]
        raise GANetInputError(
            f"{path} holds a damaged subword model ({message}): copy it again from the run folder, or retrain."
        ) from None
    if saved["source"] != joint.tokens or saved["target"] != joint.tokens:
        raise GANetInputError(
            f"{path}: its token lists do not match its subword model: copy it again from the run folder, or retrain."
        )
    return joint, joint
