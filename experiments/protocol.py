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
    "-len400-dropout5-lam3e-3": (IMDB_CHOSEN, ("--lam", "3e-3")),
}
IMDB_SETTING = "-len400-dropout5"


def imdb_run_name(model, setting, seed, part=""):
    """An IMDB run's name; a baseline's names the first setting with its flags (GA-Net's own flags aside)."""
    if model != "ganet":
        setting = next(other for other in IMDB_SETTINGS if IMDB_SETTINGS[other][0] == IMDB_SETTINGS[setting][0])
    return f"imdb_{model}{part}{setting}_seed{seed}"
