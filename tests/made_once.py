"""Fixtures made once per test run, also when pytest-xdist splits it."""

import fcntl
import json
import os
import shutil


def made_once(tmp_path_factory, name, make):
    """What `make(folder)` returns (JSON-ready, e.g. paths), made once per run.

    Under pytest-xdist each worker sets up the session and module fixtures
    its own tests ask for, so a run that tests on both workers read was
    trained twice. The workers share the parent of their temporary folders:
    the first to ask makes `name` there under a file lock, the other waits
    for it and reads the same folder. A test copies what it changes.
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    folder, done = root / f"once-{name}", root / f"once-{name}.json"
    with open(root / f"once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            value = make(folder)
            done.write_text(json.dumps(value), encoding="utf-8")
        return json.loads(done.read_text(encoding="utf-8"))
