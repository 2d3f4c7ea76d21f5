"""The protocol constants the studies share: the datasets that choose and those held out, the gate settings of
`adaptive_real`, `reproduce`'s IMDB candidates. A leaf: it imports nothing of `experiments`, so the studies
(`studies.py`), their tables (`reports.py`) and their scripts read them without importing each other."""

TOP_K = ("--inference-mode", "top_k")  # the default rule when gate_check and adaptive_real ran
# Every IMDB run (the epochs a 25k-review epoch affords), with the setting `reproduce` chose.
IMDB_PROTOCOL = ("--buckets", "8", "--epochs", "8", "--patience", "2")
IMDB_CHOSEN = ("--sequence-length", "400", "--dropout", "0.5")

# The gate studies choose on TUNING's validation scores, never on HELD_OUT.
REAL_DATASETS = ("trec", "sst2", "sst1", "imdb")
TUNING = ("trec", "sst2")
HELD_OUT = ("sst1", "imdb")

ADAPTIVE_SETTINGS = {
    "rho0.1": ("--target-density", "0.1", *TOP_K),
    "rho0.3": TOP_K,
    "rho0.5": ("--target-density", "0.5", *TOP_K),
    "soft": ("--model", "soft"),
    "sparsemax": ("--model", "sparsemax"),
    "entmax": ("--model", "entmax"),
}

# reproduce's IMDB candidates, GA-Net seed 0 (validation chose IMDB_SETTING): suffix -> (flags of every model, GA-Net's
# own). 256 tokens truncate 29 % of the reviews, 400 13 %; dropout 0.5 against the overfitting seen at 256; lambda 3e-3
# (chosen on SST) against the low density at 1e-2.
IMDB_SETTINGS = {
    "": (("--sequence-length", "256"), ()),
    "-len400": (("--sequence-length", "400"), ()),
    "-len400-dropout5": (IMDB_CHOSEN, ()),
    "-len400-dropout5-lam3e-3": (IMDB_CHOSEN, ("--penalty", "3e-3")),
}
IMDB_SETTING = "-len400-dropout5"


def imdb_run_name(model, setting, seed, part=""):
    """An IMDB run's name; a baseline's names the first setting with its flags (GA-Net's own flags aside)."""
    if model != "ganet":
        setting = next(other for other in IMDB_SETTINGS if IMDB_SETTINGS[other][0] == IMDB_SETTINGS[setting][0])
    return f"imdb_{model}{part}{setting}_seed{seed}"


# lra_text (issue 77): Long Range Arena's Text task, IMDB reviews as bytes cut at 4,000, in the small LRA configuration
# (2 blocks, width 64, 2 heads of 32, feed-forward 128) at an update of 32 reviews; validation is 10 % of the
# training reviews. The dense Transformer does not fit batch 32 at 4,000 bytes in 24 GiB: it steps 8 reviews and
# averages 4 steps' gradients (the same update). Budget per gated run: 8 epochs, patience 3 on validation accuracy.
# The dense run gets the wall-clock time of the slowest gated run rounded up (7,041 s: 2 hours), validated every
# eighth of an epoch (352 batches of 8; its epochs take hours), with a patience of 3 epochs.
LRA_TEXT = (
    *("--dataset", "imdb", "--tokenizer", "bytes", "--sequence-length", "4000", "--buckets", "8"),
    *("--hidden", "64", "--num-heads", "2", "--intermediate-dim", "128", "--num-layers", "2", "--dropout", "0.1"),
    *("--monitor", "val_accuracy"),
)
_LRA_GATED = ("--model", "ganet_transformer", "--batch-size", "32", "--epochs", "8", "--patience", "3", "--auxiliary")
# Its validation in batches of 8 too: 128 reviews of 4,000 bytes hold 16 GB of attention scores a layer.
_LRA_DENSE = (
    *("--model", "transformer", "--batch-size", "8", "--gradient-accumulation-steps", "4"),
    *("--validation-batch-size", "8"),
)
_HALF_EPOCHS = ("--steps-per-epoch", "352", "--epochs", "16", "--patience", "6")
# The gated recipe with the conv stem and the pooling over every real byte (its variants add one flag).
_STEM_ALL = (*_LRA_GATED, "fnn", "--stem", "conv", "--pooling", "all")
LRA_SETTINGS = {
    "dense": (*_LRA_DENSE, "--steps-per-epoch", "352", "--epochs", "64", "--patience", "24", "--time-budget", "7200"),
    "conv-rho0.2": (*_LRA_GATED, "conv", "--target-density", "0.2"),
    "fnn-rho0.2": (*_LRA_GATED, "fnn", "--target-density", "0.2"),
    "conv-rho0.1": (*_LRA_GATED, "conv", "--target-density", "0.1"),
    "conv-rho0.3": (*_LRA_GATED, "conv", "--target-density", "0.3"),
    # The controls of issue 86, in conv-rho0.2's configuration and budget: a random fifth of the bytes, drawn afresh
    # at every step and at test; every fifth byte; the gate network's convolutions alone, pooled (no attention).
    "random-rho0.2": (*_LRA_GATED, "random", "--target-density", "0.2"),
    "strided-rho0.2": (*_LRA_GATED, "strided", "--target-density", "0.2"),
    "conv-only": ("--model", "conv", "--batch-size", "32", "--epochs", "8", "--patience", "3"),
    # A gated recipe with a stem: the conv gate network's convolutions over every byte, read by per-token gates
    # (`fnn`) and, joined with the embeddings, by the encoder (issue 86).
    "conv-stem-rho0.2": (*_LRA_GATED, "fnn", "--stem", "conv", "--target-density", "0.2"),
    # The same with the pooling over every real byte: the conv-only model's read of every byte, plus the blocks'
    # attention among the fifth the gates open.
    "conv-stem-all-rho0.2": (*_STEM_ALL, "--target-density", "0.2"),
    # The same without learned positions (4,096 x 64: 72 % of the model's weights, those past most reviews' length
    # rarely trained): the overfitting suspect of conv-stem-all (its training accuracy climbs while validation falls).
    "conv-stem-all-nopos-rho0.2": (*_STEM_ALL, "--no-position-embedding", "--target-density", "0.2"),
    # The same with the learning rate decayed to 0 along a cosine over the 8 epochs (issue 86's schedule idea: its
    # validation peaked at epochs 5, 5 and 3 and then fell while its training accuracy rose).
    "conv-stem-all-cosine-rho0.2": (*_STEM_ALL, "--lr-schedule", "cosine", "--target-density", "0.2"),
    # The efficient-attention peer: softmax attention replaced by linear attention (Katharopoulos et al. 2020).
    "linear": ("--model", "linear_transformer", "--batch-size", "32", "--epochs", "8", "--patience", "3"),
    # The dense Transformer at equal reviews: a gated run's 8 epochs (patience 3), at 1,000 bytes, where batch 32 fits
    # without accumulating (LRA lets each model choose its length; `LRA_LENGTHS`). Its epochs take about an hour here,
    # so it counts half-epochs (352 batches: 16 of them and a patience of 6 are 8 epochs and 3): a killed run loses
    # at most half an epoch.
    "dense-1000": ("--model", "transformer", "--batch-size", "32", *_HALF_EPOCHS),
    # Local attention as an accuracy control (Keras' sliding window: each byte attends the 31 around it, the conv gate
    # network's context). It masks the dense scores, so it costs what dense-1000 costs: no speed peer.
    "local-1000": ("--model", "transformer", "--sliding-window", "16", "--batch-size", "32", *_HALF_EPOCHS),
}
# The gated recipe the guide recommends, which the table sets beside every other setting.
LRA_RECOMMENDED = "conv-stem-all-rho0.2"
# The models of `bench_long_documents` and their settings (its table and lra_text's read them): softmax attention, a
# gated recipe (its `--gated`, by default the recommended one), linear attention, the convolutions alone.
LRA_BENCH_MODELS = {"dense": "dense", "gated": LRA_RECOMMENDED, "linear": "linear", "conv": "conv-only"}
# The settings read at another length than LRA_TEXT's 4,000 bytes (flags after LRA_TEXT's: the last one counts).
LRA_LENGTHS = {"dense-1000": ("--sequence-length", "1000"), "local-1000": ("--sequence-length", "1000")}
