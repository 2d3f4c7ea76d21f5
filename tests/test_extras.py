"""`ganet_tf` on its declared dependencies alone (issue 76).

A machine where only `pip install ganet_tf` ran is simulated in one
interpreter (`tests.one_interpreter`) on the TensorFlow backend: a
`sys.meta_path` finder makes every package of the extras (`ganet_tf.extras`)
unimportable. `import ganet_tf` and the core (`train`, `predict`, `prepare`,
`tune --help`) must run; each command of an optional part must stop in one
line naming its extra, before any work. `.ci/wheel` checks the same from
the built wheel.
"""

import os

import pytest

from ganet_tf import extras
from ganet_tf.errors import GANetInputError
from ganet_tf.errors import MissingExtraError
from tests.conftest import REPO
from tests.made_once import made_once
from tests.one_interpreter import case_result
from tests.one_interpreter import run_cases

# The top-level modules of every extra, blocked (the union of `extras.EXTRAS`).
EXTRA_MODULES = ("sacrebleu", "keras_hub", "tensorflow_text", "sentencepiece", "tensorflow_serving", "matplotlib")
BLOCKER = f"from tests import tensorflow_blocker\ntensorflow_blocker.block({EXTRA_MODULES!r})\n"
CLI = BLOCKER + "import runpy\nrunpy.run_module('ganet_tf', run_name='__main__', alter_sys=True)\n"
IMPORTS = BLOCKER + (
    "import ganet_tf, ganet_tf.layers, ganet_tf.models, ganet_tf.training, ganet_tf.inference\n"
    "import ganet_tf.export, ganet_tf.seq2seq, ganet_tf.interpret\n"
    "from ganet_tf import load_classifier, build_ganet, GatedAttentionPooling\n"
    "print('imported')\n"
)
# A tiny `train`: one epoch of 60 TREC questions.
TINY = ["--limit", "60", "--epochs", "1", "--hidden", "4", "--auxiliary-hidden-dim", "3", "--glove-vocabulary", "0"]
TINY += ["--verbose", "0"]
# The commands of an optional part, the extra each needs and its arguments
# (`R` is the trained run).
OPTIONAL_COMMANDS = {
    "seq2seq": ["--task", "copy", "--out", "S"],
    "translate": ["--model", "S", "--text", "a b"],
    "export": ["--model", "R", "--name", "m", "--base", "E"],
    "explain": ["--model", "R", "--text", "what is it ?", "--out", "X"],
}


def test_blocked_modules_are_the_extras():
    assert sorted(EXTRA_MODULES) == sorted(module for packages in extras.EXTRAS.values() for module in packages)


@pytest.fixture(scope="module")
def without_extras(tmp_path_factory):
    """The results of the runs behind the blocker, by case name: first the
    imports, then `train` of a tiny TREC run in a folder where the other
    commands then run."""

    def make(root):
        run = root / "run"
        run.mkdir()
        commands = {
            "train": ["train", "--dataset", "trec", *TINY, "--out", "R"],
            "predict": ["predict", "--model", "R", "--text", "who is it ?"],
            "prepare": ["prepare", "--dataset", "trec", "--limit", "60", "--glove-vocabulary", "0", "--out", "P.npz"],
            "tune-help": ["tune", "--help"],
            **{command: [command, *args] for command, args in OPTIONAL_COMMANDS.items()},
        }
        cases = [{"name": "import", "code": IMPORTS, "args": [], "cwd": REPO}]
        cases += [{"name": name, "code": CLI, "args": args, "cwd": str(run)} for name, args in commands.items()]
        env = {**os.environ, "KERAS_BACKEND": "tensorflow", "PYTHONPATH": REPO}
        env.pop("GANET_DATA_DIR", None)  # TREC from the package, as a user has it
        results = run_cases(cases, env, timeout=600)
        results["folder"] = sorted(path.name for path in run.iterdir())
        return results

    return made_once(tmp_path_factory, "extras_blocked", make)


def test_import_without_extras(without_extras):
    done = case_result(without_extras, "import")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "imported"


def test_core_commands_without_extras(without_extras):
    for name in ("train", "predict", "prepare", "tune-help"):
        done = case_result(without_extras, name)
        assert done.returncode == 0, (name, done.stderr[-3000:])
    assert '"test_accuracy"' in case_result(without_extras, "train").stdout.splitlines()[-1]
    assert '"label"' in case_result(without_extras, "predict").stdout


@pytest.mark.parametrize("command", OPTIONAL_COMMANDS)
def test_optional_command_without_its_extra_is_one_line(without_extras, command):
    done = case_result(without_extras, command)
    extra = {"seq2seq": "seq2seq", "translate": "seq2seq", "export": "serving", "explain": "plots"}[command]
    packages = ", ".join(extras.EXTRAS[extra].values())
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"ganet_tf: error: {command} needs {packages}: pip install 'ganet_tf[{extra}]'."
    ], done.stderr[-2000:]
    # Nothing written: only the trained run and the prepared file are in the folder.
    assert without_extras["folder"] == ["P.npz", "R"]


def test_missing_extra_error_names_the_installed_packages_that_fail(monkeypatch):
    # Installed but broken (an import error of its own): the line says why.
    monkeypatch.setattr(extras, "installed", lambda module: True)
    with pytest.raises(MissingExtraError) as raised:
        extras.import_extra("plots", "explain's figures", "no_such_module_of_ganet_tf")
    assert isinstance(raised.value, ImportError) and isinstance(raised.value, GANetInputError)
    message = str(raised.value)
    assert message.startswith("explain's figures needs matplotlib (No module named 'no_such_module_of_ganet_tf')")
    assert message.endswith(": pip install 'ganet_tf[plots]'.") and "\n" not in message


def test_require_extra_names_only_the_missing_packages(monkeypatch):
    monkeypatch.setattr(extras, "installed", lambda module: module != "sacrebleu")
    with pytest.raises(MissingExtraError, match=r"^BLEU needs sacrebleu: pip install 'ganet_tf\[seq2seq\]'\.$"):
        extras.require_extra("seq2seq", "BLEU")
    monkeypatch.setattr(extras, "installed", lambda module: True)
    extras.require_extra("seq2seq", "BLEU")
