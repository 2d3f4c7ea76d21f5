import json
import math

import numpy as np
import pytest

from ganet_tf.cli import main
from ganet_tf.interpret import explain_texts
from tests.made_once import made_once
from tests.tiny_runs import train_tiny_runs


@pytest.fixture(scope="module")
def trained(data_dir, tmp_path_factory):
    """`{model: run folder}` of tiny SST-2 runs. GA-Net opens the ceil(T / 2)
    most probable tokens of every text (top_k), so that every text has open
    and closed gates, however little it trained."""
    models = {"ganet": {"inference_mode": "top_k", "inference_density": 0.5}, "soft": {}}
    return made_once(tmp_path_factory, "explain_runs", lambda root: train_tiny_runs(root, data_dir, "sst2", 96, models))


TEXTS = [
    "This is a film well worth seeing, talking and singing heads and all.",
    "Occasionally melodramatic, it's also extremely effective.",
]


def test_explanations_hold_p_g_and_alpha_per_token(trained):
    (first, second) = explain_texts(trained["ganet"], TEXTS)
    assert first["tokens"][:4] == ["this", "is", "a", "film"]
    for item in (first, second):
        count = len(item["tokens"])
        assert len(item["attention"]) == len(item["gates"]) == len(item["gate_probabilities"]) == count
        gates = np.asarray(item["gates"])
        probabilities = np.asarray(item["gate_probabilities"])
        attention = np.asarray(item["attention"])
        assert set(np.unique(gates)) == {0.0, 1.0}
        assert gates.sum() == math.ceil(count / 2)
        assert probabilities[gates == 1].min() >= probabilities[gates == 0].max()
        assert attention.sum() == pytest.approx(1.0, abs=1e-5)
        assert np.all(attention[gates == 0] == 0) and np.all(attention[gates == 1] > 0)
        assert item["label"] in ("negative", "positive")
    soft = explain_texts(trained["soft"], TEXTS[:1])[0]
    assert "gates" not in soft and len(soft["attention"]) == len(first["tokens"])


def test_explain_command_writes_html_png_and_json(trained, tmp_path, capsys):
    out = tmp_path / "report"
    code = main(
        [
            "explain",
            "--model",
            trained["ganet"],
            "--model",
            trained["soft"],
            "--text",
            TEXTS[0],
            "--text",
            TEXTS[1],
            "--out",
            str(out),
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["texts"] == 2 and summary["models"] == 2
    page = (out / "index.html").read_text()
    assert page.count("<h2>") == 2 and "text_1.png" in page
    explanations = json.loads((out / "explanations.json").read_text())
    ganet = explanations[0][0]
    assert sum(ganet["gates"]) == math.ceil(len(ganet["tokens"]) / 2)
    for token, gate in zip(ganet["tokens"], ganet["gates"], strict=True):
        if gate:
            assert f"<b>{token}</b>" in page
    for png in ("text_1.png", "text_2.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_explain_bad_input(tmp_path, capsys):
    assert main(["explain", "--model", str(tmp_path), "--text", "hi", "--out", str(tmp_path / "o")]) == 2
    assert "No model.keras" in capsys.readouterr().err
    assert main(["explain", "--model", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "Nothing to explain" in capsys.readouterr().err


@pytest.mark.parametrize(
    "case, message",
    [
        ("latin1_file", "pass its encoding with --encoding"),
        ("folder_as_file", "is a folder, not a file"),
        ("out_is_file", "--out"),
        ("out_under_file", "is a file, not a folder"),
    ],
)
def test_explain_bad_files_are_one_line(tmp_path, capsys, case, message):
    (tmp_path / "notes.txt").write_text("mine")
    latin = tmp_path / "texts.txt"
    latin.write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    argv = {
        "latin1_file": ["--file", str(latin), "--out", str(tmp_path / "o")],
        "folder_as_file": ["--file", str(tmp_path), "--out", str(tmp_path / "o")],
        "out_is_file": ["--text", "hi", "--out", str(tmp_path / "notes.txt")],
        "out_under_file": ["--text", "hi", "--out", str(tmp_path / "notes.txt" / "o")],
    }[case]
    assert main(["explain", "--model", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ganet_tf: error: ") and err.count("\n") == 1 and message in err
    assert (tmp_path / "notes.txt").read_text() == "mine" and not (tmp_path / "o").exists()


def test_explain_reads_a_latin1_file_with_encoding(trained, tmp_path, capsys):
    path = tmp_path / "texts.txt"
    path.write_bytes("a caf\xe9 film ok\r\nanother one\n".encode("latin-1"))
    code = main(
        [
            "explain",
            "--model",
            trained["soft"],
            "--file",
            str(path),
            "--encoding",
            "latin-1",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert code == 0
    explanations = json.loads((tmp_path / "o" / "explanations.json").read_text())
    assert [item["text"] for item in explanations[0]] == ["a café film ok", "another one"]


def test_explain_under_another_test_gate_rule(trained, tmp_path, capsys):
    rule = {"inference_mode": "nucleus", "inference_mass": 0.6}
    own = explain_texts(trained["ganet"], TEXTS)
    for item, default in zip(explain_texts(trained["ganet"], TEXTS, rule), own, strict=True):
        p = np.asarray(default["gate_probabilities"])
        np.testing.assert_allclose(item["gate_probabilities"], p, atol=1e-6)  # p_t do not depend on the rule
        # NumPy nucleus: the fewest most probable tokens whose p hold 0.6 of sum p.
        order = np.argsort(-p, kind="stable")
        count = int(np.searchsorted(np.cumsum(p[order]) / p.sum(), 0.6 - 1e-6) + 1)
        expected = np.zeros_like(p)
        expected[order[:count]] = 1
        np.testing.assert_array_equal(item["gates"], expected)
        assert item["test_gates"] == rule and "test_gates" not in default
    assert [sum(item["gates"]) for item in explain_texts(trained["ganet"], TEXTS, rule)] != [
        sum(item["gates"]) for item in own
    ]
    # Without its mass, nucleus takes the run's target density (0.3 by default).
    assert explain_texts(trained["ganet"], TEXTS[:1], {"inference_mode": "nucleus"})[0]["test_gates"] == {
        "inference_mode": "nucleus",
        "inference_mass": 0.3,
    }
    out = tmp_path / "report"
    flags = ["--text", TEXTS[0], "--out", str(out), "--inference-mode", "nucleus"]
    assert main(["explain", "--model", trained["ganet"], *flags, "--inference-mass", "0.6"]) == 0
    assert json.loads((out / "explanations.json").read_text())[0][0]["test_gates"] == rule
    capsys.readouterr()
    assert main(["explain", "--model", trained["soft"], *flags[:-2], "--inference-mode", "threshold"]) == 2
    assert "has no gates to serve under --inference-mode" in capsys.readouterr().err
