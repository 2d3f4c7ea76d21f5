"""KerasTuner's own distributed tuning: one chief (the oracle) and two workers."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from ganet_tf.data import load_dataset
from tests.conftest import REPO
from tests.run_scores import rescore_run

# Seconds: the chief's start, and the whole search. Nothing outlives them.
START_TIMEOUT = 90
SEARCH_TIMEOUT = 240
TRIALS = 2
# Examples a split: a few batches a trial.
LIMIT = 40


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listening(port):
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _start(tuner_id, port, command, log):
    env = {
        **os.environ,
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "KERASTUNER_TUNER_ID": tuner_id,
        "KERASTUNER_ORACLE_IP": "127.0.0.1",
        "KERASTUNER_ORACLE_PORT": str(port),
    }
    return subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _last_json(log):
    with open(log) as handle:
        return json.loads(handle.read().strip().splitlines()[-1])


def test_one_chief_and_two_workers_share_the_trials(data_dir, tmp_path):
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "ganet_tf.tuning.search",
        "--dataset",
        "trec",
        "--data-dir",
        data_dir,
        "--model",
        "bilstm",
        "--tuner",
        "random",
        "--max-trials",
        str(TRIALS),
        "--epochs",
        "1",
        "--limit",
        str(LIMIT),
        "--hidden",
        "4",
        # One padded length: fewer, equal batches, and no GloVe words beyond
        # the training texts' (the tiny searches of test_search_cli keep both).
        "--buckets",
        "0",
        "--glove-vocabulary",
        "0",
        "--verbose",
        "2",
        "--directory",
        str(tmp_path),
        "--project-name",
        "shared",
        "--overwrite",
        "--run-eagerly",
    ]
    logs = {name: tmp_path / f"{name}.log" for name in ("chief", "tuner0", "tuner1")}
    processes = {}
    deadline = time.monotonic() + START_TIMEOUT + SEARCH_TIMEOUT
    try:
        processes["chief"] = _start("chief", port, command, logs["chief"])
        start_deadline = time.monotonic() + START_TIMEOUT
        while not _listening(port):
            assert processes["chief"].poll() is None, logs["chief"].read_text()[-3000:]
            assert time.monotonic() < start_deadline, "the chief did not start serving"
            time.sleep(0.5)
        for worker in ("tuner0", "tuner1"):
            processes[worker] = _start(worker, port, command, logs[worker])
        for name in ("tuner0", "tuner1", "chief"):
            remaining = max(1.0, deadline - time.monotonic())
            code = processes[name].wait(timeout=remaining)
            assert code == 0, f"{name} failed:\n{logs[name].read_text()[-3000:]}"
    finally:
        for process in processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    ran = {worker: _last_json(logs[worker]) for worker in ("tuner0", "tuner1")}
    assert {result["tuner_id"] for result in ran.values()} == {"tuner0", "tuner1"}
    trials = {worker: result["ran_trials"] for worker, result in ran.items()}
    # None run twice, every trial run. How the trials split depends on which
    # worker asks the chief first: on a loaded machine the first worker up
    # may run them all before the second has imported TensorFlow.
    every = trials["tuner0"] + trials["tuner1"]
    assert len(every) == len(set(every)) == TRIALS
    on_disk = {name[len("trial_") :] for name in os.listdir(tmp_path / "shared") if name.startswith("trial_")}
    assert set(every) == on_disk

    chief = _last_json(logs["chief"])
    assert (chief["trials"], chief["new_trials"]) == (TRIALS, 0)
    assert chief["best_trial"] in every
    # The accuracy is that of the saved model on the first LIMIT test questions.
    test = load_dataset("trec", data_dir).subset(LIMIT)
    accuracy, density = rescore_run(chief["out"], test.test_texts, test.test_labels)
    assert chief["test_examples"] == LIMIT and density is None
    assert chief["test_accuracy"] == pytest.approx(accuracy, abs=1e-6)
    assert chief["test_density"] is None
