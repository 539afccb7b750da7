"""A corpus of hostile component behaviours.

Every per-call behaviour (one entry each, selected by the entry's input) runs in-process in one
evaluation tracked in memory: each must be that call's recorded error with its message, or a
kept output, while the run goes on to FINISHED with complete raw results and intact reports;
so must a component that raises KeyboardInterrupt itself (an interrupt, never a call error).
What acts on the process runs in one (slow): a job started with SIGINT ignored stopped by two
Ctrl-C during a hung call, a torn raw-results line, two resumes at once, two SIGTERMs.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, Entry, RunInterrupted, Selection, evaluate
from evalkit.records import names
from evalkit.tracking import Tracker
from tests.support.builders import config_for, entry, write_dataset, write_eval_script
from tests.support.processes import run_eval, start_eval, wait_for

SECRET = "tok-" + "9f8e7d6c5b4a" * 2
RELEASE = threading.Event()
"""Set when a test ends: what a call that never returns waits for (its thread then ends)."""


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no")


class NotAString(Exception):
    def __str__(self) -> Any:
        return 42


class Fatal(BaseException):
    pass


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def circular() -> list[Any]:
    value: list[Any] = []
    value.append(value)
    return value


def recurse(n: int) -> Any:
    return recurse(n + 1)


def raise_(error: BaseException) -> Any:
    raise error


def generator() -> Iterator[int]:
    yield 1


BEHAVIOURS: dict[str, Callable[[], Any]] = {
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
    "timeout-sleep": lambda: time.sleep(30),
    "timeout-forever": RELEASE.wait,
    "json-deep-string": lambda: "[" * 100_000 + "]" * 100_000,
    "json-huge-number": lambda: "1" * 5000,
}


def hostile(item: Entry, call: Call) -> Any:
    if item.input.startswith("ok"):
        return "a"
    if item.input == "zz-interrupt":
        raise KeyboardInterrupt
    return BEHAVIOURS[item.input]()


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


def test_the_corpus_has_at_least_thirty_hostile_behaviours() -> None:
    assert len(ERRORS) + len(KEPT) - 2 >= 30  # "ok" and "returns-none" are not hostile
    assert sorted(BEHAVIOURS) == sorted([*ERRORS, *KEPT])  # each one checked


def expected_for(behaviour: str) -> Any:
    # The pathological JSON strings are scored against an object: exact must parse, fail
    # cleanly, and move on.
    return {"a": 1} if behaviour.startswith("json-") else "a"


def corpus_dataset(folder: Path, behaviours: list[str]) -> Path:
    return write_dataset(folder / "ds", {b: entry("functional", input=b,
                                                  expected=expected_for(b))
                                         for b in behaviours})


@pytest.fixture
def release_hung_calls() -> Iterator[None]:
    RELEASE.clear()
    yield
    RELEASE.set()


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
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, release_hung_calls: None) -> None:
    caplog.set_level(logging.INFO, logger="evalkit")
    monkeypatch.setenv("HOSTILE_TOKEN", SECRET)
    behaviours = [*ERRORS, *KEPT]
    config = config_for(tmp_path, corpus_dataset(tmp_path, behaviours), EVAL_MIN_ACCURACY=0.0,
                        MAX_CONCURRENCY=8, CALL_TIMEOUT=2)
    outcome = evaluate(config, hostile, Selection("functional"), tracker=tracker,
                       runs_dir=tmp_path / "runs")
    assert outcome.passed  # EVAL_MIN_ACCURACY is 0: nothing else fails it
    assert "Traceback" not in caplog.text and SECRET not in caplog.text

    lines = outcome.raw_results.read_text(encoding="utf-8").splitlines()
    records = {record["entry_id"]: record for record in map(json.loads, lines)}
    assert len(lines) == len(behaviours) and sorted(records) == sorted(behaviours)
    for behaviour, pattern in ERRORS.items():
        record = records[behaviour]
        assert record["output"] is None
        assert re.search(pattern, record["error"], re.DOTALL), (behaviour, record["error"][:200])
    for behaviour, output in KEPT.items():
        assert records[behaviour]["error"] is None and records[behaviour]["output"] == output

    stored = tracker.reader.stored(outcome.run_id)
    assert stored.status == "FINISHED"
    assert stored.metrics["component_errors"] == len(ERRORS)
    assert stored.metrics["functional_correct"] == 1  # only "ok" matches its expected output
    report = (tmp_path / "reports" / "report-functional.md").read_text(encoding="utf-8")
    assert_report_intact(report)
    uploaded = tracker.reader.read_text(outcome.run_id, names.RAW_RESULTS_ARTIFACT)
    assert uploaded.splitlines() == lines
    journal = tracker.backend.journals[outcome.run_id]
    texts = [tracker.backend.artifact(outcome.run_id, path).decode("utf-8", "replace")
             for path in journal.artifacts]
    assert [t[:80] for t in texts if SECRET in t] == []
    assert any("[REDACTED:HOSTILE_TOKEN]" in t for t in texts)


def test_an_interrupt_raised_by_the_component_stays_an_interrupt(
        tmp_path: Path, tracker: Tracker) -> None:
    config = config_for(tmp_path, corpus_dataset(tmp_path, ["ok-a", "ok-b", "zz-interrupt"]),
                        EVAL_MIN_ACCURACY=0.0, MAX_CONCURRENCY=1)
    with pytest.raises(RunInterrupted) as raised:
        evaluate(config, hostile, Selection("functional"), tracker=tracker,
                 runs_dir=tmp_path / "runs")
    assert raised.value.exit_status == 130
    (run,) = tracker.reader.runs(config.experiment_name)
    assert run.status == "KILLED"
    assert f"--resume {run.run_id}" in str(raised.value)
    raw = tracker.reader.read_text(run.run_id, names.RAW_RESULTS_ARTIFACT).splitlines()
    assert [json.loads(line)["entry_id"] for line in raw] == ["ok-a", "ok-b"]  # no call error
    assert not (tmp_path / "reports").exists()


# --- what acts on the process: eval.py in processes of its own --------------------------------

COMPONENT = """
import os, threading

def invoke_component(entry, call):
    if entry.input == "hang-unless-resumed" and os.path.exists("hang.flag"):
        threading.Event().wait()  # never returns
    return "a"
"""


def hostile_project(folder: Path, behaviours: list[str], **constants: Any) -> None:
    write_dataset(folder / "ds", {b: entry("functional", input=b) for b in behaviours})
    write_eval_script(folder, {"EXPERIMENT_NAME": "hostile/components", "DATASET_PATH": "ds",
                               "EVAL_MIN_ACCURACY": 0.0, "MAX_CONCURRENCY": 8, **constants},
                      COMPONENT)


@pytest.mark.slow
def test_a_call_that_never_returns_times_out_and_the_process_still_exits(
        tmp_path: Path) -> None:
    """Its thread can never be stopped: the run records the timeout and finishes, and the
    process ends all the same (were it to wait for that thread, run_eval would time out)."""
    hostile_project(tmp_path, ["ok0", "hang-unless-resumed"], CALL_TIMEOUT=1)
    (tmp_path / "hang.flag").touch()
    done = run_eval(tmp_path, "--type=functional", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    (raw,) = (tmp_path / ".evalkit" / "runs").glob("*/raw-results.jsonl")
    records = {r["entry_id"]: r for r in map(json.loads, raw.read_text().splitlines())}
    assert records["ok0"]["output"] == "a"
    assert records["hang-unless-resumed"]["error"].startswith(
        "CallTimeout: no result within CALL_TIMEOUT = 1 s; the call was abandoned")
    stored = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}").reader.stored(raw.parent.name)
    assert stored.status == "FINISHED" and stored.metrics["component_errors"] == 1


def stop_twice(process: Any, log: Path, stop_signal: signal.Signals) -> None:
    """Stop, then stop again once the first is acknowledged; the process then ends although
    its hung call never returns: the call was abandoned."""
    process.send_signal(stop_signal)
    wait_for(lambda: "stopping: waiting for 1 call(s) in flight to finish and be kept (stop "
             "again, e.g. Ctrl-C, to abandon them)" in log.read_text(), "the first stop")
    assert process.poll() is None  # still waiting for the hung call, as it says
    process.send_signal(stop_signal)
    process.wait(timeout=120)
    assert "abandoned 1 call(s) in flight; a resume makes them again" in log.read_text()


@pytest.mark.slow
def test_a_hung_call_two_stops_a_torn_line_and_two_resumes(tmp_path: Path) -> None:
    """A job started with SIGINT ignored (``make eval &``) stopped by Ctrl-C twice while a
    call hangs; its last raw-results line torn; one resume while another works on the run;
    that resume stopped by SIGTERM twice; a last resume finishes the run."""
    oks = [f"ok{i}" for i in range(4)]
    hostile_project(tmp_path, [*oks, "hang-unless-resumed"])
    (tmp_path / "hang.flag").touch()
    log = tmp_path / "eval.log"
    process = start_eval(tmp_path, "--type=functional", log=log,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    runs = tmp_path / ".evalkit" / "runs"
    try:
        wait_for(lambda: any(len(p.read_text().splitlines()) == 4
                             for p in runs.glob("*/raw-results.jsonl")), "the four quick calls")
        stop_twice(process, log, signal.SIGINT)
    finally:
        process.kill()
    assert process.returncode == 130
    (run_dir,) = runs.iterdir()
    run_id = run_dir.name
    text = log.read_text()
    assert "Traceback" not in text and f"--resume {run_id}" in text
    reader = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}").reader
    assert reader.stored(run_id).status == "KILLED"
    uploaded = reader.read_text(run_id, names.RAW_RESULTS_ARTIFACT).splitlines()
    assert sorted(json.loads(line)["entry_id"] for line in uploaded) == oks  # all kept

    # Killed mid-write: the last line is cut in half.
    raw = run_dir / "raw-results.jsonl"
    text = raw.read_text()
    raw.write_text(text[:len(text) - len(text.splitlines()[-1]) // 2 - 1])

    first_log = tmp_path / "resume.log"
    first = start_eval(tmp_path, "--resume", run_id, log=first_log)  # the call still hangs
    try:
        wait_for(lambda: f"resuming run {run_id}: 3 of 5 calls recorded, 2 to make"
                 in first_log.read_text(), "the resume")
        assert "was cut mid-write" in first_log.read_text()
        second = run_eval(tmp_path, "--resume", run_id)
        assert second.returncode == 2
        assert f"run {run_id} is being worked on by another process" in second.stderr
        assert f"holds .evalkit/runs/{run_id}/run.lock" in second.stderr  # names the lock
        assert "Traceback" not in second.stderr
        stop_twice(first, first_log, signal.SIGTERM)
    finally:
        first.kill()
    assert first.returncode == 130

    (tmp_path / "hang.flag").unlink()
    resumed = run_eval(tmp_path, "--resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    stored = reader.stored(run_id)
    assert stored.status == "FINISHED"
    assert stored.tags["resume_calls_made"] == "1"  # the torn call was re-made by the first
    lines = raw.read_text().splitlines()
    assert [json.loads(line)["entry_id"] for line in lines] == [
        "hang-unless-resumed", *oks]  # each call once, in dataset order
