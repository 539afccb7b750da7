"""A corpus of hostile component behaviours, each run through the real eval.py in a subprocess.

One run exercises every per-call behaviour (one entry each, selected by the entry's input):
each must be that call's recorded error with its message, or a kept output, while the run
goes on to FINISHED with complete raw results and intact reports. Behaviours that act on the
process (an interrupt raised by the component, stop signals during a hung call, a torn raw
results file, two resumes at once) get runs of their own.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import mlflow
import pytest

from tests.conftest import entry, run_script, script_env, write_dataset, write_eval_script

pytestmark = pytest.mark.slow

SECRET = "tok-" + "9f8e7d6c5b4a" * 2

# Each behaviour is one entry; the component below looks its input up in BEHAVIOURS.
COMPONENT = r'''
import math, os, threading, time

class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no")

class NotAString(Exception):
    def __str__(self):
        return 42

class Fatal(BaseException):
    pass

class BadRepr:
    def __repr__(self):
        raise RuntimeError("no repr")

def nested(depth):
    value = "x"
    for _ in range(depth):
        value = [value]
    return value

def circular():
    value = []
    value.append(value)
    return value

def recurse(n):
    return recurse(n + 1)

def raise_(error):
    raise error

def generator():
    yield 1

def never_returns():
    threading.Event().wait()

def hang_unless_resumed():
    if os.path.exists("hang.flag"):
        never_returns()
    return "a"

BEHAVIOURS = {
    "ok": lambda: "a",
    "returns-none": lambda: None,
    "value-error": lambda: raise_(ValueError("plain failure")),
    "system-exit-int": lambda: raise_(SystemExit(3)),
    "system-exit-text": lambda: raise_(SystemExit("bye from the component")),
    "generator-exit": lambda: raise_(GeneratorExit()),
    "stop-iteration": lambda: raise_(StopIteration()),
    "base-exception": lambda: raise_(Fatal("fatal fault")),
    "exception-group": lambda: raise_(ExceptionGroup("two at once", [ValueError("one"),
                                                                     KeyError("two")])),
    "str-raises": lambda: raise_(Unprintable()),
    "str-not-text": lambda: raise_(NotAString()),
    "surrogate-message": lambda: raise_(ValueError("bad \udcff byte")),
    "huge-message": lambda: raise_(ValueError("m" * 1_000_000)),
    "secret-message": lambda: raise_(PermissionError("key " + os.environ["HOSTILE_TOKEN"])),
    "control-message": lambda: raise_(ValueError("nul\x00 esc\x1b[31m bell\x07")),
    "recursion": lambda: recurse(0),
    "memory-error": lambda: raise_(MemoryError("simulated")),
    "nested-5000": lambda: nested(5000),
    "nested-150": lambda: nested(150),
    "surrogate-output": lambda: "half \ud800 pair",
    "surrogate-key": lambda: {"\udfff": 1},
    "nan": lambda: math.nan,
    "inf": lambda: {"score": math.inf},
    "minus-inf-list": lambda: [1, -math.inf],
    "set": lambda: {1, 2},
    "bytes": lambda: b"raw bytes",
    "generator": generator,
    "object": lambda: object(),
    "bad-repr": lambda: BadRepr(),
    "circular": circular,
    "huge-output": lambda: "x" * 2_000_000,
    "huge-int": lambda: 10 ** 5000,
    "tuple-key": lambda: {(1, 2): "a"},
    "callable": lambda: print,
    "timeout-sleep": lambda: time.sleep(60),
    "timeout-forever": never_returns,
    "json-deep-string": lambda: "[" * 100_000 + "]" * 100_000,
    "json-huge-number": lambda: "1" * 5000,
}

def invoke_component(entry, call):
    if entry.input.startswith("ok"):
        return "a"
    if entry.input == "hang-unless-resumed":
        return hang_unless_resumed()
    if entry.input == "zz-interrupt":  # last in dataset order
        raise KeyboardInterrupt
    return BEHAVIOURS[entry.input]()
'''

# behaviour -> what its raw-results record must hold: an error matching the pattern, or the
# kept output (a failed, not errored, verdict for the JSON strings the exact scorer rejects).
ERRORS = {
    "value-error": r"^ValueError: plain failure$",
    "system-exit-int": r"^SystemExit: 3$",
    "system-exit-text": r"^SystemExit: bye from the component$",
    "generator-exit": r"^GeneratorExit$",
    "stop-iteration": r"^StopIteration$",
    "base-exception": r"^Fatal: fatal fault$",
    "exception-group": r"^ExceptionGroup: two at once \(2 sub-exceptions\)$",
    "str-raises": r"^Unprintable: <the message could not be rendered: RuntimeError>$",
    "str-not-text": r"^NotAString: <the message could not be rendered: TypeError>$",
    "surrogate-message": r"^ValueError: bad \\udcff byte$",
    "huge-message": r"^ValueError: m{3980,}\.\.\. \(99\d{4} more characters cut\)$",
    "secret-message": r"^PermissionError: key \[REDACTED:HOSTILE_TOKEN\]$",
    "control-message": "^ValueError: nul\x00 esc\x1b\\[31m bell\x07$",
    "recursion": r"^RecursionError: maximum recursion depth exceeded",
    "memory-error": r"^MemoryError: simulated$",
    "nested-5000": r"^OutputNotKept: the component returned list: nested deeper than 100",
    "nested-150": r"^OutputNotKept: the component returned list: nested deeper than 100",
    "surrogate-output": r"^OutputNotKept: the component returned str: text with unpaired "
                        r"surrogates",
    "surrogate-key": r"^OutputNotKept: the component returned dict: text with unpaired",
    "nan": r"^OutputNotKept: the component returned float: Out of range float values",
    "inf": r"^OutputNotKept: the component returned dict: Out of range float values",
    "minus-inf-list": r"^OutputNotKept: the component returned list: Out of range float",
    "set": r"^OutputNotKept: the component returned set: Object of type set is not JSON",
    "bytes": r"^OutputNotKept: the component returned bytes: Object of type bytes is not",
    "generator": r"^OutputNotKept: the component returned generator: Object of type "
                 r"generator",
    "object": r"^OutputNotKept: the component returned object: Object of type object",
    "bad-repr": r"^OutputNotKept: the component returned BadRepr: Object of type BadRepr",
    "circular": r"^OutputNotKept: the component returned list: Circular reference detected",
    "huge-output": r"^OutputNotKept: the component returned str: 2,000,002 characters of "
                   r"JSON; at most 1,000,000",
    "huge-int": r"^OutputNotKept: the component returned int: Exceeds the limit \(4300 "
                r"digits\)",
    "tuple-key": r"^OutputNotKept: the component returned dict: keys must be str, int",
    "callable": r"^OutputNotKept: the component returned builtin_function_or_method: Object "
                r"of type builtin_function_or_method",
    "timeout-sleep": r"^CallTimeout: no result within CALL_TIMEOUT = 2 s; the call was "
                     r"abandoned",
    "timeout-forever": r"^CallTimeout: no result within CALL_TIMEOUT = 2 s",
}
KEPT = {"ok": "a", "returns-none": None, "json-deep-string": "[" * 100_000 + "]" * 100_000,
        "json-huge-number": "1" * 5000}
CONSTANTS = {"EXPERIMENT_NAME": "hostile/components", "DATASET_PATH": "ds",
             "EVAL_MIN_ACCURACY": 0.0, "MAX_CONCURRENCY": 8, "CALL_TIMEOUT": 2}


def test_the_corpus_has_at_least_thirty_hostile_behaviours() -> None:
    assert len(ERRORS) + len(KEPT) - 2 >= 30  # "ok" and "returns-none" are not hostile


def expected_for(behaviour: str) -> Any:
    # The pathological JSON strings are scored against an object: exact must parse, fail
    # cleanly, and move on.
    return {"a": 1} if behaviour.startswith("json-") else "a"


def project(folder: Path, behaviours: list[str], **constants: Any) -> Path:
    write_dataset(folder / "ds", {b: entry("functional", input=b, expected=expected_for(b))
                                  for b in behaviours})
    write_eval_script(folder, {**CONSTANTS, **constants}, COMPONENT)
    return folder


def raw_results(folder: Path) -> dict[str, dict[str, Any]]:
    (path,) = (folder / ".evalkit" / "runs").glob("*/raw-results.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    return {record["entry_id"]: record for record in map(json.loads, lines)}


def the_run(folder: Path) -> Any:
    client = mlflow.MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name(
        CONSTANTS["EXPERIMENT_NAME"]).experiment_id])
    return run


def assert_report_intact(report: str) -> None:
    """Every table row has its header's columns; every mermaid block is closed."""
    table: list[str] = []
    for line in [*report.splitlines(), ""]:
        if line.startswith("|"):
            table.append(line)
            continue
        if table:
            columns = {len(re.findall(r"(?<!\\)\|", row)) for row in table}
            assert len(columns) == 1, table
            table = []
    assert report.count("```mermaid\n") >= 1
    for block in report.split("```mermaid\n")[1:]:
        assert "\n```\n" in block


def test_every_hostile_behaviour_is_that_calls_error_and_the_run_finishes(
        tmp_path: Path) -> None:
    behaviours = [*ERRORS, *KEPT]
    folder = project(tmp_path, behaviours)
    started = time.monotonic()
    done = run_script(folder, "--type=functional", env={"HOSTILE_TOKEN": SECRET})
    assert time.monotonic() - started < 120
    assert done.returncode == 0, done.stderr  # EVAL_MIN_ACCURACY is 0: nothing else fails it
    assert "Traceback" not in done.stderr + done.stdout
    assert SECRET not in done.stderr + done.stdout

    records = raw_results(folder)
    assert sorted(records) == sorted(behaviours)  # complete: one line per call
    for behaviour, pattern in ERRORS.items():
        record = records[behaviour]
        assert record["output"] is None
        assert re.search(pattern, record["error"], re.DOTALL), (behaviour, record["error"][:200])
    for behaviour, output in KEPT.items():
        assert records[behaviour]["error"] is None and records[behaviour]["output"] == output

    run = the_run(folder)
    assert run.info.status == "FINISHED"
    assert run.data.metrics["component_errors"] == len(ERRORS)
    assert run.data.metrics["functional_correct"] == 1  # only "ok" matches its expected output
    report = (folder / "reports" / "report-functional.md").read_text(encoding="utf-8")
    assert_report_intact(report)
    assert SECRET not in report
    uploaded = Path(mlflow.MlflowClient(f"sqlite:///{folder / 'mlflow.db'}").download_artifacts(
        run.info.run_id, "raw/raw-results.jsonl", str(tmp_path / "dl")))
    assert len(uploaded.read_text(encoding="utf-8").splitlines()) == len(behaviours)


def start(folder: Path, *args: str) -> tuple[subprocess.Popen[str], Path]:
    """eval.py in the background, its stderr going to a file that can be read while it runs."""
    log = folder / f"stderr-{time.monotonic_ns()}.log"
    process = subprocess.Popen([sys.executable, "eval.py", *args], cwd=folder,
                               env=script_env(folder), stdout=subprocess.DEVNULL,
                               stderr=log.open("w"), text=True)
    return process, log


def wait_for(condition: Any, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def stop_twice(process: subprocess.Popen[str], log: Path) -> float:
    """SIGTERM, then SIGTERM again once the first is acknowledged; seconds from the second
    signal to the process's exit."""
    process.send_signal(signal.SIGTERM)
    wait_for(lambda: "Ctrl-C again to abandon" in log.read_text(), "the first stop")
    assert process.poll() is None  # still waiting for the hung call, as it says
    second = time.monotonic()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    return time.monotonic() - second


def test_a_hung_call_two_sigterms_a_torn_line_and_two_resumes(tmp_path: Path) -> None:
    oks = [f"ok{i}" for i in range(4)]
    folder = project(tmp_path, [*oks, "hang-unless-resumed"], CALL_TIMEOUT=600)
    (folder / "hang.flag").touch()
    process, log = start(folder, "--type=functional")
    runs = folder / ".evalkit" / "runs"
    wait_for(lambda: any(len(p.read_text().splitlines()) == 4
                         for p in runs.glob("*/raw-results.jsonl")), "the four quick calls")
    (run_dir,) = runs.iterdir()
    run_id = run_dir.name

    assert stop_twice(process, log) < 2
    assert process.returncode == 130
    stderr = log.read_text()
    assert "Traceback" not in stderr and f"--resume {run_id}" in stderr
    client = mlflow.MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    assert client.get_run(run_id).info.status == "KILLED"
    uploaded = Path(client.download_artifacts(run_id, "raw/raw-results.jsonl",
                                              str(tmp_path / "dl")))
    assert len(uploaded.read_text().splitlines()) == 4  # every finished call kept

    # Killed mid-write: the last line is cut in half.
    raw = run_dir / "raw-results.jsonl"
    text = raw.read_text()
    raw.write_text(text[:len(text) - len(text.splitlines()[-1]) // 2 - 1])

    first, first_log = start(folder, "--resume", run_id)  # the call still hangs
    wait_for(lambda: "calls recorded, 2 to make" in first_log.read_text(), "the resume")
    assert "was cut mid-write" in first_log.read_text()
    second = run_script(folder, "--resume", run_id)
    assert second.returncode == 2
    assert f"run {run_id} is being worked on by another process" in second.stderr
    assert "Traceback" not in second.stderr
    assert stop_twice(first, first_log) < 2 and first.returncode == 130

    (folder / "hang.flag").unlink()
    resumed = run_script(folder, "--resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags["resume_calls_made"] == "1"  # the torn call was re-made by the first
    assert sorted(raw_results(folder)) == sorted([*oks, "hang-unless-resumed"])


def test_an_interrupt_raised_by_the_component_stays_an_interrupt(tmp_path: Path) -> None:
    folder = project(tmp_path, ["ok-a", "ok-b", "zz-interrupt"], MAX_CONCURRENCY=1)
    done = run_script(folder, "--type=functional")
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert the_run(folder).info.status == "KILLED"
    assert sorted(raw_results(folder)) == ["ok-a", "ok-b"]


def test_a_job_started_with_sigint_ignored_still_stops_on_ctrl_c(tmp_path: Path) -> None:
    """A shell starts a background job with SIGINT ignored; evalkit installs its own handler."""
    folder = project(tmp_path, ["ok0", "hang-unless-resumed"], CALL_TIMEOUT=600)
    (folder / "hang.flag").touch()
    log = folder / "stderr.log"
    process = subprocess.Popen(
        [sys.executable, "eval.py", "--type=functional"], cwd=folder, env=script_env(folder),
        stdout=subprocess.DEVNULL, stderr=log.open("w"),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    wait_for(lambda: "calls 1/2" in log.read_text(), "the quick call")
    process.send_signal(signal.SIGINT)
    wait_for(lambda: "Ctrl-C again to abandon" in log.read_text(), "the first Ctrl-C")
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 130
    assert the_run(folder).info.status == "KILLED"
