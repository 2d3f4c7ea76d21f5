"""Every study as data: its runs (command, shared flags, axes, name pattern, the studies whose runs it reuses) and the
function of `reports.py` that writes its tables. A new study is a new entry of `STUDIES` (`python -m experiments
list|run NAME|table NAME`)."""

import itertools

from experiments import reports
from experiments.protocol import ADAPTIVE_SETTINGS
from experiments.protocol import IMDB_CHOSEN
from experiments.protocol import IMDB_PROTOCOL
from experiments.protocol import IMDB_SETTING
from experiments.protocol import IMDB_SETTINGS
from experiments.protocol import LRA_LENGTHS
from experiments.protocol import LRA_SETTINGS
from experiments.protocol import LRA_TEXT
from experiments.protocol import REAL_DATASETS
from experiments.protocol import TOP_K
from experiments.protocol import TUNING
from experiments.protocol import imdb_run_name
from experiments.runner import PAPER_GATES
from experiments.study import Study

MONITOR_ACC = ("--monitor", "val_accuracy", "--patience", "5")
THRESHOLD = ("--inference-mode", "threshold")
IMDB = (*IMDB_CHOSEN, *IMDB_PROTOCOL)


def seeds(*values):
    return {seed: ("--seed", str(seed)) for seed in values}


def datasets(*names, **protocol):
    """`--dataset NAME`, then `protocol[NAME]`."""
    return {name: ("--dataset", name, *protocol.get(name, ())) for name in names}


# core's protocol per dataset, for every model alike, and GA-Net's own settings: chosen by `selection` on GA-Net's dev
# accuracy.
CORE_PROTOCOL = {"sst1": (*MONITOR_ACC, "--dropout", "0.5"), "sst2": MONITOR_ACC}
CORE_GANET = {"sst1": ("--penalty", "3e-3"), "sst2": ("--penalty", "3e-3")}
GATE_GRID = {"dataset": datasets(*REAL_DATASETS, imdb=IMDB), "seed": seeds(0, 1, 2)}
GATE_RUNS = {"record": ("setting",), "resumable": lambda point: point["dataset"] == "imdb"}


def _gate_check_keep(point):
    """gate_check's runs: the defaults and soft attention everywhere, annealing on TUNING, the sweep on GATE_SWEEP."""
    swept = TUNING if point["setting"] == "anneal" else reports.GATE_SWEEP
    return point["setting"] in ("default", "soft") or point["dataset"] in swept


def _reproduce_runs():
    """Run name -> flags: Figure 5's auxiliary sizes, the IMDB candidates, Table 2's IMDB models, Table 5's."""
    runs = {}
    for dataset, seed, hidden in itertools.product(("trec", "sst1"), (0, 1, 2), (20, 40, 60, 80, 100)):
        gates = (*CORE_PROTOCOL.get(dataset, ()), *CORE_GANET.get(dataset, ()), *PAPER_GATES)
        flags = (
            "--dataset",
            dataset,
            "--model",
            "ganet",
            "--auxiliary-hidden-dim",
            str(hidden),
            "--seed",
            str(seed),
            *gates,
        )
        runs[f"{dataset}_ganet-aux{hidden}_seed{seed}"] = flags

    def imdb(setting, model, seed, aux=None):
        every, ganet = IMDB_SETTINGS[setting]
        flags = (*every, *((*ganet, *PAPER_GATES) if model == "ganet" else ()), "--model", model, "--seed", str(seed))
        name = imdb_run_name(model, setting, seed, f"-aux-{aux}" if aux else "")
        runs[name] = ("--dataset", "imdb", *IMDB_PROTOCOL, *flags, *(("--auxiliary", aux) if aux else ()))

    for setting in IMDB_SETTINGS:
        imdb(setting, "ganet", 0)
    for model, seed in [(m, s) for s in (0, 1, 2) for m in ("ganet", "soft")] + [("bilstm", 0), ("local", 0)]:
        imdb(IMDB_SETTING, model, seed)
    for aux in ("fnn", "attention", "lstm"):
        imdb(IMDB_SETTING, "ganet", 0, aux)
    return runs


# transformer_check (issues 17, 41; its README has the design): validation at seed 0 chose the auxiliary network
# TRANSFORMER_CHOSEN.
TRANSFORMER_CHOSEN = "fnn"
_GATED_TRANSFORMER = ("--model", "ganet_transformer", "--target-density", "0.2", "--auxiliary")
TRANSFORMER_SETTINGS = {
    "dense": ("--model", "transformer"),
    "fnn": (*_GATED_TRANSFORMER, "fnn", "--no-sparse-training"),
    "attention": (*_GATED_TRANSFORMER, "attention", "--no-sparse-training"),
    "sparse": (*_GATED_TRANSFORMER, TRANSFORMER_CHOSEN, "--sparse-training"),
}


def _transformer_runs():
    """Run name -> flags, in the order they ran: IMDB, its epoch timing (`round0`), TREC's sparse training."""
    imdb = ("--dataset", "imdb", "--sequence-length", "512", "--buckets", "8", "--patience", "2")
    chosen = TRANSFORMER_CHOSEN
    trained = [("dense", 0), ("fnn", 0), ("attention", 0), *((s, seed) for seed in (1, 2) for s in ("dense", chosen))]
    runs = {
        f"imdb_{setting}_seed{seed}": (*imdb, "--epochs", "8", "--seed", str(seed), *TRANSFORMER_SETTINGS[setting])
        for setting, seed in [*trained, *(("sparse", seed) for seed in (0, 1, 2))]
    }
    for setting in ("dense", chosen, "sparse"):
        runs[f"imdb_{setting}_seed0_round0"] = (*imdb, "--epochs", "2", "--seed", "0", *TRANSFORMER_SETTINGS[setting])
    trec = ("--dataset", "trec", "--model", "ganet_transformer")
    for seed, setting in itertools.product((0, 1, 2), ("relaxed", "sparse")):
        flag = "--sparse-training" if setting == "sparse" else "--no-sparse-training"
        runs[f"trec_{setting}_seed{seed}"] = (*trec, "--seed", str(seed), flag)
    return runs


def _transformer_record(point):
    setting = point["run"].split("_")[1]
    return {"setting": setting, **({"gates_of": TRANSFORMER_CHOSEN} if point["run"].startswith("imdb_sparse") else {})}


def _transformer_folder(point):
    run = point["run"]
    return "trec" if run.startswith("trec") else "epoch_time" if run.endswith("round0") else "runs"


def top_k_at(density):
    """seq2seq gates trained to `density` (a string), the round(density T) most probable source states open at test."""
    return ("--target-density", density, "--inference-mode", "top_k", "--inference-density", density)


# seq2seq: half the source states, fixed before any Multi30k run.
HALF = top_k_at("0.5")
EMBEDDING_GATES = ("--auxiliary", "bilstm", "--gate-input", "embeddings")  # the defaults when `gated` ran
STATES_FNN = ("--gate-input", "states", "--auxiliary", "fnn")
# The training gates of every gated seq2seq run before `hard_concrete` became the default (issue 63), and L0Drop's.
RELAXED = ("--gate-distribution", "relaxed_bernoulli")
HARD_CONCRETE = ("--gate-distribution", "hard_concrete")
GATED_STATES = (*HALF, *STATES_FNN, *RELAXED)  # chosen on validation BLEU on words
STATES_SUMMARY = ("--summary-inputs", "states")
LONG_MULTI30K = ("--patience", "3", "--buckets", "8")
LONG_SYNTHETIC = (
    *("--min-length", "100", "--max-length", "200", "--limit", "2000"),
    *("--hidden", "128", "--embedding-dim", "64", "--batch-size", "32", *LONG_MULTI30K),
)
# The report's figures: row -> loss, perplexity, BLEU.
REPORT_MULTI30K = {
    "bahdanau": (3.214, 24.872, 29.33),
    "hier-cnn": (3.411, 30.293, 23.82),
    "hier-rnn": (3.358, 28.727, 24.02),
    "hier-act": (3.764, 43.105, 19.39),  # 3 epochs in the report
}
REPORT_COPY = {"bahdanau": (3.214, 24.872, None), "hier-cnn": (1.842, 6.312, None), "hier-rnn": (2.056, 7.811, None)}
SUBWORDS = ("--tokenizer", "bpe", "--vocabulary-size", "8000")
# The word-level tables ran before subwords became Multi30k's default; the flag keeps their rows the runs they were.
WORDS = ("--tokenizer", "word")
# Issue 63's gated recipes at density 0.6, the most its "Done when" allows.
GATED_AT_06 = ("--attention", "gated", "--target-density", "0.6")
LONG_SYNTHETIC_ROWS = {
    "bahdanau": (),
    "gated": ("--target-density", "0.5", *RELAXED),
    "hier-cnn": ("--block-size", "5", "--levels", "3"),
}
# The seq2seq tables in README order (the task: the name's start): epochs, the flags every row adds, rows (name ->
# flags; the attention is the name's start), the rows run on seeds 0-2 (the others on 0) and the report's figures.
SEQ2SEQ_TABLES = {
    "multi30k": {
        "epochs": 10,
        "flags": WORDS,
        "rows": {
            "bahdanau": (),
            "gated": (*HALF, *EMBEDDING_GATES, *RELAXED),
            "gated-ft": (*HALF, *EMBEDDING_GATES, *RELAXED),
            "gated-states": GATED_STATES,
        },
        "three_seeds": ("bahdanau", "gated-states"),
        "report": REPORT_MULTI30K,
    },
    "multi30k-long": {
        "epochs": 20,
        "flags": (*LONG_MULTI30K, *WORDS),
        "rows": {
            "bahdanau": (),
            "gated-states": GATED_STATES,
            "hier-cnn": ("--block-size", "3", "--levels", "3"),
            "hier-rnn": ("--block-size", "6", "--levels", "2", *STATES_SUMMARY),
            "hier-rnn-keys": ("--block-size", "6", "--levels", "2", "--summary-inputs", "keys"),
            "hier-act": ("--levels", "3", "--target-block-size", "0"),
            "hier-act-target3": ("--levels", "3", "--target-block-size", "3"),
            "hier-act-target2.5": ("--levels", "3", "--target-block-size", "2.5"),
            # The subword default (gated-hc, issue 63) on words, which its choice never saw (seed 0).
            "gated-hc": (*top_k_at("0.6"), *STATES_FNN, *HARD_CONCRETE),
        },
        "three_seeds": ("bahdanau", "gated-states", "hier-act-target2.5"),
        "report": REPORT_MULTI30K,
    },
    "multi30k-subwords": {
        "epochs": 20,
        "flags": LONG_MULTI30K,
        "rows": {
            "bahdanau": SUBWORDS,
            "gated-states": (*GATED_STATES, *SUBWORDS),
            "hier-act-target2.5": ("--levels", "3", "--target-block-size", "2.5", *SUBWORDS),
            # seq2seq_recipes' choice on validation BLEU (issue 63): hard concrete gates at density 0.6.
            "gated-hc": (*top_k_at("0.6"), *STATES_FNN, *HARD_CONCRETE, *SUBWORDS),
            # Its BLEU-density curve retrained: the same recipe trained and served at other densities (seed 0).
            "gated-hc-td0.4": (*top_k_at("0.4"), *STATES_FNN, *HARD_CONCRETE, *SUBWORDS),
            "gated-hc-td0.8": (*top_k_at("0.8"), *STATES_FNN, *HARD_CONCRETE, *SUBWORDS),
        },
        "three_seeds": ("bahdanau", "gated-states", "hier-act-target2.5", "gated-hc"),
    },
    "copy": {
        "epochs": 10,
        "rows": {
            "bahdanau": (),
            "gated": (*EMBEDDING_GATES, "--target-density", "0", *RELAXED),
            "hier-cnn": ("--block-size", "5", "--levels", "2"),
            "hier-rnn": ("--block-size", "5", "--levels", "3", *STATES_SUMMARY),
        },
        "three_seeds": ("bahdanau", "gated"),
        "report": REPORT_COPY,
    },
    "copy-long": {
        "epochs": 20,
        "flags": LONG_SYNTHETIC,
        "rows": {
            **LONG_SYNTHETIC_ROWS,
            "hier-rnn": ("--block-size", "5", "--levels", "3", *STATES_SUMMARY),
            "hier-act": ("--levels", "3", "--target-block-size", "3"),
        },
        "three_seeds": ("bahdanau",),
    },
    "reverse-long": {
        "epochs": 20,
        "flags": LONG_SYNTHETIC,
        "rows": {
            **LONG_SYNTHETIC_ROWS,
            "hier-rnn": ("--block-size", "5", "--levels", "3"),
            "hier-act": ("--levels", "3"),
        },
        "three_seeds": ("bahdanau",),
    },
}


def _seq2seq_runs():
    """Run name -> `seq2seq` flags of every run of `SEQ2SEQ_TABLES`."""
    runs = {}
    for name, table in SEQ2SEQ_TABLES.items():
        task = name.split("-")[0]
        for row, flags in table["rows"].items():
            attention = next(a for a in ("bahdanau", "gated", "hier-cnn", "hier-rnn", "hier-act") if row.startswith(a))
            for seed in (0, 1, 2) if row in table["three_seeds"] else (0,):
                epochs, start = table["epochs"], ()
                if row == "gated-ft":
                    epochs, start = epochs // 2, ("--init-from", f"runs/seq2seq/{name}_bahdanau_seed{seed}")
                head = ("--task", task, "--attention", attention, "--seed", str(seed), "--epochs", str(epochs))
                runs[f"{name}_{row}_seed{seed}"] = (*head, *flags, *table.get("flags", ()), *start)
    return runs


# KerasTuner searches of GA-Net on TREC (`python -m ganet_tf tune`), a project each in runs/tuning/NAME (the committed
# summaries by an older wrapper: `experiments/README.md`); results/tuning/README.md is written by hand.
SEARCH = (
    *("--dataset", "trec", "--model", "ganet", "--tuner", "bayesian", "--max-trials", "20", "--patience", "3"),
    *("--objective", "val_accuracy", "--penalty-values", "4e-6,1e-5,1e-4,1e-3,5e-3,1e-2", "--seed", "0"),
    *("--directory", "runs/tuning"),
)
SEARCHES = {
    "trec_ganet_bayesian": ("--initial-points", "8", "--epochs", "10"),
    "trec_ganet_bayesian_cv3": ("--initial-points", "6", "--folds", "3", "--epochs", "30", "--hand-set-first")
    + ("--final-seeds", "0", "1", "2"),
}


STUDIES = {
    study.name: study
    for study in (
        Study(
            name="selection",
            doc="GA-Net's settings per dataset, chosen on validation accuracy (seeds 0-2)",
            axes={
                "dataset": datasets("trec", "sst1", "sst2"),
                "candidate": {
                    "default": (),
                    "monitor-acc": MONITOR_ACC,
                    "monitor-acc-lr5e-4": (*MONITOR_ACC, "--lr", "5e-4"),
                    "monitor-acc-lam3e-3": (*MONITOR_ACC, "--penalty", "3e-3"),
                    "monitor-acc-fnn": (*MONITOR_ACC, "--auxiliary", "fnn"),
                    "monitor-acc-tau1": (*MONITOR_ACC, "--temperature", "1.0"),
                    "monitor-acc-lam3e-3-aux100": (*MONITOR_ACC, "--penalty", "3e-3", "--auxiliary-hidden-dim", "100"),
                    "monitor-acc-lam3e-3-dropout5": (*MONITOR_ACC, "--penalty", "3e-3", "--dropout", "0.5"),
                },
                "seed": seeds(0, 1, 2),
            },
            flags=("--epochs", "30", "--model", "ganet", *PAPER_GATES),
            pattern="{dataset}_{candidate}_seed{seed}",
            record=("candidate",),
            models=False,
            tables=reports.selection,
        ),
        Study(
            name="core",
            doc="every model on TREC, SST-1 and SST-2 (seeds 0-2), the protocol chosen by `selection`",
            flags=("--epochs", "30"),
            axes={
                "seed": seeds(0, 1, 2),
                "dataset": datasets("trec", "sst1", "sst2"),
                "variant": {
                    "ganet": ("--model", "ganet", *PAPER_GATES),
                    "ganet-aux100": ("--model", "ganet", "--auxiliary-hidden-dim", "100", *PAPER_GATES),
                    "bilstm": ("--model", "bilstm"),
                    "local": ("--model", "local"),
                    "soft": ("--model", "soft"),
                },
            },
            extra=lambda point: (
                *CORE_PROTOCOL.get(point["dataset"], ()),
                *(CORE_GANET.get(point["dataset"], ()) if point["variant"].startswith("ganet") else ()),
            ),
            pattern="{dataset}_{variant}_seed{seed}",
            record=("variant",),
            tables=reports.core,
        ),
        Study(
            name="gates",
            doc="candidate default gate settings on the tuning datasets, validation only (issue 13)",
            axes={
                "seed": seeds(0, 1, 2),
                "dataset": datasets(*TUNING),
                "setting": {
                    "paper_lam": PAPER_GATES,
                    "rho0.2": ("--target-density", "0.2", *THRESHOLD),
                    "rho0.3": ("--target-density", "0.3", *THRESHOLD),
                    "rho0.5": ("--target-density", "0.5", *THRESHOLD),
                    "rho0.3_hard": ("--target-density", "0.3", *HARD_CONCRETE, *THRESHOLD),
                    "rho0.3_st": ("--target-density", "0.3", "--straight-through", *THRESHOLD),
                    "soft": ("--model", "soft"),
                },
            },
            flags=("--epochs", "10"),
            record=("setting",),
            after=reports.gates_top_k,
            tables=reports.gates,
        ),
        Study(
            name="gate_check",
            doc="GA-Net's default gates on every dataset (issue 13)",
            axes={
                **GATE_GRID,
                "setting": {
                    "default": TOP_K,
                    "soft": ("--model", "soft"),
                    "rho0.1": ("--target-density", "0.1", *TOP_K),
                    "rho0.5": ("--target-density", "0.5", *TOP_K),
                    "anneal": ("--temperature", "1.0", "--final-temperature", "0.1", "--anneal-epochs", "5", *TOP_K),
                },
            },
            keep=_gate_check_keep,
            tables=reports.gate_check,
            **GATE_RUNS,
        ),
        Study(
            name="adaptive_real",
            doc="the relative test rule against top_k, sparsemax, entmax and soft on real data (issue 39)",
            axes={**GATE_GRID, "setting": ADAPTIVE_SETTINGS},
            # gate_check's runs are copied, but for the target-0.3 ones, whose models are rescored.
            reuse=lambda point: () if point["setting"] == "rho0.3" else ("gate_check",),
            after=reports.lazy("adaptive_real", "after_run"),
            tables=reports.folder_tables("adaptive_real", "write_tables"),
            **GATE_RUNS,
        ),
        Study(
            name="reproduce",
            doc="the paper's tables and Figure 5 (TREC, SST, IMDB)",
            axes={"run": _reproduce_runs()},
            pattern="{run}",
            reuse=lambda point: () if point["run"].startswith("imdb") else ("core",),
            resumable=lambda point: point["run"].startswith("imdb"),
            tables=reports.lazy("reproduce", "tables"),
        ),
        Study(
            name="transformer_check",
            doc="GA-Net gates on a Transformer against the dense one, IMDB (issue 17)",
            axes={"run": _transformer_runs()},
            pattern="{run}",
            record=_transformer_record,
            resumable=lambda point: point["run"].startswith("imdb"),
            runs=_transformer_folder,
            tables=reports.lazy("transformer_check", "tables"),
        ),
        Study(
            name="lra_text",
            doc="Long Range Arena's Text task: gated and dense Transformers on IMDB bytes (issue 77)",
            axes={"setting": LRA_SETTINGS, "seed": seeds(0, 1, 2)},
            pattern="imdb-bytes_{setting}_seed{seed}",
            flags=LRA_TEXT,
            extra=lambda point: LRA_LENGTHS.get(point["setting"], ()),
            record=("setting",),
            resumable=lambda point: True,
            tables=reports.lra_text,
        ),
        Study(
            name="nucleus_default",
            folder="adaptive_real/nucleus_default",
            doc="GA-Net's default test rule (nucleus at pi = rho) at target densities 0.1-0.5 (issue 39)",
            axes={
                "dataset": datasets("trec", "sst1"),
                "rho": {0.1: ("--target-density", "0.1"), 0.3: (), 0.5: ("--target-density", "0.5")},
                "seed": seeds(0, 1, 2),
            },
            pattern="{dataset}_nucleus{rho:g}_seed{seed}",
            record=lambda point: {"setting": f"nucleus{point['rho']:g}", "target_density": point["rho"]},
            tables=reports.nucleus_default,
        ),
        Study(
            name="seq2seq",
            doc="the hierarchical-attention report's tables beside our seq2seq runs (README.md)",
            command="seq2seq",
            axes={"run": _seq2seq_runs()},
            pattern="{run}",
            data_flag=lambda point: point["run"].startswith("multi30k"),
            # gated-hc's seed 0 is the seq2seq_recipes run it was chosen by, the same config (checked in its folder)
            reuse=lambda point: ("seq2seq_recipes",) if point["run"].startswith("multi30k-subwords") else (),
            tables=lambda study, root: reports.seq2seq(study, root, SEQ2SEQ_TABLES),
        ),
        Study(
            name="seq2seq_subwords",
            doc="seq2seq's subword tokenizer and vocabulary size, chosen on Multi30k validation BLEU (issue 54)",
            command="seq2seq",
            axes={
                "size": {size: ("--vocabulary-size", str(size)) for size in (8000, 16000)},
                "tokenizer": {name: ("--tokenizer", name) for name in ("unigram", "bpe")},
            },
            flags=("--task", "multi30k", "--attention", "bahdanau", "--seed", "0", "--buckets", "8", "--epochs", "5"),
            pattern="bahdanau_{tokenizer}{size}_seed0",
            tables=reports.subwords,
        ),
        Study(
            name="seq2seq_recipes",
            doc="gated translation recipes on subwords, chosen on Multi30k validation BLEU (issue 63)",
            command="seq2seq",
            axes={
                "recipe": {
                    "gated-st": ("--attention", "gated", "--straight-through", "--target-density", "0.5", *RELAXED),
                    "gated-td0.6": (*GATED_AT_06, *RELAXED),
                    # L0Drop's gates: hard concrete, with exact zeros and ones in training as at test.
                    "gated-td0.6-hc": (*GATED_AT_06, *HARD_CONCRETE),
                },
                "seed": seeds(0),
            },
            flags=("--task", "multi30k", "--epochs", "20", *SUBWORDS, "--patience", "3", "--buckets", "8"),
            pattern="multi30k-subwords_{recipe}_seed{seed}",
        ),
        Study(
            name="tuning",
            doc="KerasTuner searches, GA-Net on TREC (the README is written by hand)",
            command="tune",
            axes={"search": SEARCHES},
            pattern="{search}",
            flags=SEARCH,
            extra=lambda point: ("--project-name", point["name"]),
            runs="",
            models=False,
        ),
    )
}


# Studies run by their own script: `run` calls `python -m experiments.SCRIPT [FLAGS]`. A line: name | script | folder
# (-: the name) | tables: `rebuild` (the script's `rebuild(folder)`) or - (made with the runs); then, indented, what
# it finds.
SCRIPT_STUDIES = """
pooling_gather | bench_pooling_gather | - | rebuild
    sparse against dense inference of GatedAttentionPooling (issue 17)
seq2seq_lengths | bench_seq2seq_lengths | - | rebuild
    decoding cost across source lengths: Bahdanau, gated, hierarchies (issue 40)
serving | bench_serving | - | rebuild
    CPU latency and throughput of an exported TREC GA-Net (SavedModel against Keras)
backends | jax_trec | - | rebuild
    GA-Net under JAX, no TensorFlow, on prepared TREC ids
main_job | main_job | - | rebuild
    the README's main job (TREC, packaged data), seeds 0-2
sparse_attention | bench_sparse_attention | - | rebuild
    gated sparse attention against dense Keras attention, wall-clock (issue 17)
sparse_training | bench_sparse_training | - | rebuild
    training on the open tokens only against dense training, wall-clock (issue 17)
seq2seq_analysis | seq2seq_analysis | seq2seq | -
    levels, gate pieces and test densities of finished seq2seq runs (levels_*, gates_*, test_densities_*)
"""
for _head, _doc in zip(*[iter(SCRIPT_STUDIES.strip().splitlines())] * 2, strict=True):
    _name, _script, _folder, _tables = (field.strip() for field in _head.split("|"))
    _table = None if _tables == "-" else reports.folder_tables(_script, _tables)
    STUDIES[_name] = Study(_name, _folder.strip("-"), _doc.strip(), _table, script=_script, needs_models=not _table)
STUDIES["nucleus_real"] = Study(
    "nucleus_real",
    "adaptive_real/nucleus",
    "the nucleus test rule on real data: the default's choice (issue 39)",
    axes={"run": {}},  # no runs of its own: `run adaptive_real` scores its target-0.3 models under nucleus too
    pattern="{run}",
    tables=reports.folder_tables("adaptive_real", "nucleus_tables"),
)


def find(name):
    """The study called `name`; an unknown name exits with the known ones."""
    if name not in STUDIES:
        raise SystemExit(f"error: unknown study {name!r}; known: {', '.join(STUDIES)}")
    return STUDIES[name]
