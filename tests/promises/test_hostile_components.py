"""A corpus of hostile component behaviours.

Every per-call behaviour (one entry each, selected by the entry's input) runs in-process in one
evaluation tracked in memory: each must be that call's recorded error with its message, or a
kept output, while the run goes on to FINISHED with complete raw results and intact reports; so
must a component that raises KeyboardInterrupt itself (an interrupt, never a call error). What
acts on the process runs in one, in test_hostile_components_processes.py (slow): a job started
with SIGINT ignored stopped by two Ctrl-C during a hung call, a torn raw-results line, two
resumes at once, two SIGTERMs.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, Entry, RunContext, RunInterrupted, Selection, evaluate
from evalkit.cli._exit import exit_status_of
from evalkit.records import names
from evalkit.tracking import Tracker
from tests.support.builders import config_for, entry, write_dataset

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
    outcome = evaluate(config, hostile, Selection("functional"),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
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
        evaluate(config, hostile, Selection("functional"),
                 RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert exit_status_of(raised.value) == 130
    (run,) = tracker.reader.runs(config.experiment_name)
    assert run.status == "KILLED"
    assert f"--resume {run.run_id}" in str(raised.value)
    raw = tracker.reader.read_text(run.run_id, names.RAW_RESULTS_ARTIFACT).splitlines()
    assert [json.loads(line)["entry_id"] for line in raw] == ["ok-a", "ok-b"]  # no call error
    assert not (tmp_path / "reports").exists()
