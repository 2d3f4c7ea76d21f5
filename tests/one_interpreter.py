"""Several `python -c CODE ARGS` runs in one interpreter, each with its own
exit status, stdout and stderr: Keras is imported once for all of them
(some 5-10 s on 2 cores) instead of once a run.

Run as `python -m tests.one_interpreter CASES RESULTS` (JSON files; the
fixture side is `run_cases`). Each case runs in order, as `python -c` runs
its code: in a fresh `__main__` namespace, with `sys.argv` `["-c", *args]`,
in its own working directory, with file descriptors 1 and 2 sent to files
of its own (so also what C++ code or a subprocess writes is its own), and
an uncaught exception or `SystemExit` turned into the exit status and
traceback the interpreter would give. What one case imports stays imported
for the next: a check that an import is the first (TensorFlow not imported,
nothing printed at import) comes first in its list.
"""

import json
import os
import subprocess
import sys
import tempfile
import traceback
import types

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_cases(cases, env, timeout):
    """`{name: namespace(returncode, stdout, stderr, cwd)}` for `cases`, a
    list of `{"name", "code", "args", "cwd"}` run in one interpreter under
    `env` (JSON-ready as `vars` of each, for `tests.made_once`)."""
    with tempfile.TemporaryDirectory() as folder:
        cases_path, results_path = os.path.join(folder, "cases.json"), os.path.join(folder, "results.json")
        with open(cases_path, "w", encoding="utf-8") as file:
            json.dump(cases, file)
        done = subprocess.run(
            [sys.executable, "-m", "tests.one_interpreter", cases_path, results_path],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=timeout,
        )
        assert done.returncode == 0 and os.path.exists(results_path), (done.stdout + done.stderr)[-4000:]
        with open(results_path, encoding="utf-8") as file:
            return json.load(file)


def case_result(results, name):
    """The result of case `name` of `run_cases`, read as a `CompletedProcess` is."""
    return types.SimpleNamespace(**results[name])


def _exit_status(exit):
    """The exit status and stderr text of `SystemExit` as the interpreter gives them."""
    if exit.code is None:
        return 0, ""
    if isinstance(exit.code, int):
        return exit.code, ""
    return 1, f"{exit.code}\n"


def _run_case(case):
    """Runs one case; returns its `{"returncode", "stdout", "stderr", "cwd"}`."""
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    sys.argv = ["-c", *case["args"]]
    os.chdir(case["cwd"])
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        saved_fds = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            try:
                exec(compile(case["code"], "<string>", "exec"), {"__name__": "__main__"})
                returncode = 0
            except SystemExit as exit:
                returncode, message = _exit_status(exit)
                sys.stderr.write(message)
            except BaseException:
                traceback.print_exc()
                returncode = 1
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os.dup2(saved_fds[0], 1)
            os.dup2(saved_fds[1], 2)
            os.close(saved_fds[0])
            os.close(saved_fds[1])
            sys.argv = saved_argv
            os.chdir(saved_cwd)
        texts = []
        for file in (out, err):
            file.seek(0)
            texts.append(file.read().decode("utf-8", errors="replace"))
    return {"returncode": returncode, "stdout": texts[0], "stderr": texts[1], "cwd": case["cwd"]}


def main(cases_path, results_path):
    with open(cases_path, encoding="utf-8") as file:
        cases = json.load(file)
    results = {case["name"]: _run_case(case) for case in cases}
    with open(results_path, "w", encoding="utf-8") as file:
        json.dump(results, file)


if __name__ == "__main__":
    main(*sys.argv[1:])
