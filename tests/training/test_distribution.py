import json
import os
import socket
import subprocess
import sys

import pytest

from ganet_tf.errors import GANetInputError
from ganet_tf.training import TrainConfig
from ganet_tf.training import train_and_evaluate
from tests.conftest import REPO

# No subprocess may outlive this many seconds.
PROCESS_TIMEOUT = 240
TINY = dict(
    dataset="trec",
    limit=48,
    epochs=1,
    hidden=4,
    auxiliary_hidden_dim=4,
    glove_vocabulary=0,
    buckets=0,
    batch_size=16,
    dropout=0.0,
    verbose=0,
)

# One process, its CPU split in two: GA-Net trains on one device (default
# strategy) and on both (mirrored), on the same data and seed, with a large
# gate penalty (lambda = 1). The one-device reference takes eager steps
# (`tests.eager`; its history is the traced one's to 5 digits, and it costs
# half the time); the mirrored run is traced, as it trains.
MIRRORED_VS_ONE_DEVICE = """
import contextlib, json, sys
from ganet_tf.training import TrainConfig, train_and_evaluate
from tests.eager import functions_run_eagerly
tiny = json.loads(sys.argv[1])
out = {}
for strategy in ("default", "mirrored"):
    config = TrainConfig(strategy=strategy, cpu_devices=2, penalty=1.0, **tiny)
    with functions_run_eagerly() if strategy == "default" else contextlib.nullcontext():
        out[strategy] = {k: v[0] for k, v in train_and_evaluate(config)["history"].items()}
print(json.dumps(out))
"""


def _run(args, env=None, **kwargs):
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        timeout=PROCESS_TIMEOUT,
        **kwargs,
    )


def test_mirrored_on_two_cpu_devices_matches_one_device(data_dir):
    done = _run(["-c", MIRRORED_VS_ONE_DEVICE, json.dumps({**TINY, "data_dir": data_dir})])
    assert done.returncode == 0, done.stderr[-3000:]
    runs = json.loads(done.stdout.strip().splitlines()[-1])
    one, two = runs["default"], runs["mirrored"]
    # The penalty, an `add_loss`, counts once, not once per replica (that
    # would add ~0.4); the replicas draw other gate noise than one device,
    # hence the tolerance.
    assert 0.2 < one["density"] < 0.8
    for key in ("loss", "val_loss", "density", "val_density"):
        assert two[key] == pytest.approx(one[key], abs=0.05), key
    for key in ("accuracy", "val_accuracy"):
        assert two[key] == pytest.approx(one[key], abs=0.1), key


# Issue 41: a `ganet_transformer` that drops the closed tokens while training
# takes its fit steps on two mirrored replicas (two logical CPU devices).
MIRRORED_SPARSE_TRAINING = """
import json, sys
from ganet_tf.training import TrainConfig, train_and_evaluate
tiny = json.loads(sys.argv[1])
config = TrainConfig(
    strategy="mirrored", cpu_devices=2, model="ganet_transformer", auxiliary="fnn", target_density=0.25,
    sparse_training=True, **tiny,
)
result = train_and_evaluate(config)
print(json.dumps({"history": {k: v[0] for k, v in result["history"].items()}, "test": result["test_density"]}))
"""


@pytest.mark.large
def test_sparse_training_fit_step_on_two_mirrored_replicas(data_dir):
    tiny = {**TINY, "hidden": 8, "sequence_length": 12, "data_dir": data_dir}
    done = _run(["-c", MIRRORED_SPARSE_TRAINING, json.dumps(tiny)])
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    history = out["history"]
    assert all(v == v and abs(v) < 1e6 for v in history.values()), history
    # top_k opens round(0.25 T) of every question's real tokens at test.
    assert 0.1 < out["test"] < 0.5


def test_validation_of_the_strategy_flags(monkeypatch):
    with pytest.raises(GANetInputError, match="--strategy"):
        TrainConfig(strategy="tpu").validate()
    with pytest.raises(GANetInputError, match="--cpu-devices"):
        TrainConfig(cpu_devices=0).validate()
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(GANetInputError, match="TF_CONFIG"):
        train_and_evaluate(TrainConfig(strategy="multi_worker"))


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.large
def test_two_workers_train_together(data_dir, tmp_path):
    workers = [f"127.0.0.1:{port}" for port in _free_ports(2)]
    processes = []
    for index in range(2):
        tf_config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        processes.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "ganet_tf",
                    "train",
                    "--strategy",
                    "multi_worker",
                    "--data-dir",
                    data_dir,
                    "--out",
                    str(tmp_path / f"out{index}"),
                    *[f"--{k.replace('_', '-')}={v}" for k, v in TINY.items()],
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=REPO,
                env={**os.environ, "TF_CONFIG": json.dumps(tf_config)},
            )
        )
    try:
        outputs = [process.communicate(timeout=PROCESS_TIMEOUT) for process in processes]
    finally:
        for process in processes:
            process.kill()
    for process, (_, stderr) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, stderr[-3000:]
    results = [json.loads(stdout.strip().splitlines()[-1]) for stdout, _ in outputs]
    # Both workers hold the same (all-reduced) model: the same test scores.
    assert results[0]["test_accuracy"] == results[1]["test_accuracy"]
    assert results[0]["history"]["loss"] == results[1]["history"]["loss"]
    # Only the chief (worker 0) writes the run folder.
    assert {"metrics.json", "model.keras", "preprocessing.json"} <= set(os.listdir(tmp_path / "out0"))
    assert not os.path.exists(tmp_path / "out1" / "model.keras")
