"""``async def invoke_component``: one event loop with MAX_CONCURRENCY calls in flight, the
same guarantees as a plain component (exact counts, raw results as they arrive, a stop keeps
every finished call, resume makes only the missing calls). In-process, tracked in memory: how
Ctrl-C and SIGTERM become a stop is the command line's, tested in ``tests/promises/test_cli.py``."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evalkit import (
    Call,
    Entry,
    EvalConfig,
    Progress,
    RunContext,
    RunInterrupted,
    Selection,
    Stop,
    evaluate,
)
from evalkit import resume as resume_run
from evalkit.tracking import Tracker
from tests.support.builders import config_for, entry, write_dataset


class AsyncComponent:
    """Counts calls and the most in flight at once; records the thread of every call."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, int]] = Counter()
        self.in_flight = self.most_in_flight = 0
        self.threads: set[int] = set()
        self.raw_lines_seen: list[int] = []

    async def __call__(self, item: Entry, call: Call) -> Any:
        self.calls[(item.id, call.repeat)] += 1
        self.threads.add(threading.get_ident())
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(0.01)
        self.in_flight -= 1
        if item.id == "boom":
            raise ValueError("component failed")
        return item.expected_output if item.expected_output is not None else "same"


def test_async_calls_exact_counts_bounded_on_one_thread(tmp_path: Path,
                                                        tracker: Tracker) -> None:
    entries = {f"f{i:02d}": entry("functional") for i in range(30)}
    entries.update({"r": entry("repeatability"), "boom": entry("functional")})
    dataset = write_dataset(tmp_path / "ds", entries)
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": f"async/{uuid.uuid4().hex[:8]}", "DATASET_PATH": str(dataset),
        "EVAL_MIN_ACCURACY": 0.5, "REPEAT_COUNT": 4, "EVAL_MIN_ACCURACY_REPEATABILITY": 0.5,
        "MAX_CONCURRENCY": 5}, "eval.py")
    component = AsyncComponent()
    outcome = evaluate(config, component, Selection("all"),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))

    expected_calls = {(f"f{i:02d}", 0) for i in range(30)} | {("boom", 0)} | {
        ("r", k) for k in range(4)}
    assert set(component.calls) == expected_calls and set(component.calls.values()) == {1}
    assert component.most_in_flight == 5
    assert len(component.threads) == 1  # one event loop, no thread per call
    raw = [json.loads(line) for line in outcome.raw_results.read_text().splitlines()]
    assert len(raw) == 35
    assert [r["error"] for r in raw if r["entry_id"] == "boom"] == [
        "ValueError: component failed"]
    by_type = {m.test_type: m for m in outcome.metrics}
    assert (by_type["functional"].samples, by_type["functional"].correct) == (31, 30)
    assert by_type["repeatability"].correct == 1
    metrics = tracker.reader.stored(outcome.run_id).metrics
    assert (metrics["calls"], metrics["component_errors"]) == (35, 1)


def test_async_component_inside_a_running_event_loop(tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {f"f{i}": entry("functional") for i in range(6)})
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": f"async/{uuid.uuid4().hex[:8]}", "DATASET_PATH": str(dataset),
        "EVAL_MIN_ACCURACY": 1.0, "MAX_CONCURRENCY": 3}, "eval.py")
    component = AsyncComponent()

    async def notebook() -> Any:  # evaluate() called from code that already runs a loop
        return evaluate(config, component, Selection("functional"),
                        RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))

    outcome = asyncio.run(notebook())
    assert outcome.passed and sum(component.calls.values()) == 6
    assert tracker.reader.stored(outcome.run_id).status == "FINISHED"


class SlowAsync:
    """An async component whose calls take a moment, counted per (entry, repeat)."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, int]] = Counter()

    async def __call__(self, item: Entry, call: Call) -> Any:
        self.calls[(item.id, call.repeat)] += 1
        await asyncio.sleep(0.05)
        return item.expected_output if item.expected_output is not None else "same"


def test_async_stop_keeps_every_finished_call_and_resume_makes_the_rest(
        tmp_path: Path, tracker: Tracker, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="evalkit")
    dataset = write_dataset(tmp_path / "ds", {**{f"e{i:02d}": entry("functional")
                                                 for i in range(24)},
                                              "rep": entry("repeatability")})
    config = config_for(tmp_path, dataset, REPEAT_COUNT=3, MAX_CONCURRENCY=4)
    everything = [(f"e{i:02d}", 0) for i in range(24)] + [("rep", r) for r in range(3)]
    stop = Stop()

    def stop_after_four(progress: Progress) -> None:  # as a Ctrl-C once 4 calls are kept
        if progress.calls_done == 4:
            stop.request()

    first = SlowAsync()
    with pytest.raises(RunInterrupted, match=r"marked KILLED.*--resume") as raised:
        evaluate(config, first, Selection("all"),
                 RunContext(tracker=tracker, runs_dir=tmp_path / "runs", stop=stop,
                            progress=stop_after_four))
    (run,) = tracker.reader.runs(config.experiment_name)
    assert run.status == "KILLED" and run.run_id in str(raised.value)
    # At the stop 4 calls were kept and 3 were in flight (the 4th's place was not refilled):
    # those were awaited and kept; no new call started.
    assert "stopping: waiting for 3 call(s) in flight to finish and be kept" in caplog.text
    raw = tmp_path / "runs" / run.run_id / "raw-results.jsonl"
    before = [(r["entry_id"], r["repeat"]) for r in map(json.loads, raw.read_text().splitlines())]
    assert before == everything[:7] and sum(first.calls.values()) == 7
    uploaded = tracker.reader.read_text(run.run_id, "raw/raw-results.jsonl")
    assert uploaded == raw.read_text()

    second = SlowAsync()
    outcome = resume_run(config, second, run.run_id,
                         RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert set(second.calls) == set(everything[7:]) and set(second.calls.values()) == {1}
    after = [(r["entry_id"], r["repeat"]) for r in map(json.loads, raw.read_text().splitlines())]
    assert after == everything  # each call exactly once over both attempts, in dataset order
    resumed = tracker.reader.stored(run.run_id)
    assert resumed.status == "FINISHED"
    assert (resumed.tags["resume_calls_saved"], resumed.tags["resume_calls_made"]) == ("7", "20")
    assert outcome.passed and resumed.metrics["calls"] == 27
