"""``async def invoke_component``: one event loop with MAX_CONCURRENCY calls in flight, the
same guarantees as a plain component (exact counts, raw results as they arrive, interrupts keep
every finished call, resume makes only the missing calls)."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import mlflow
import pytest

from evalkit import Call, Entry, EvalConfig, Selection, evaluate
from evalkit.tracking import Tracker
from tests.conftest import entry, run_script, script_env, write_dataset, write_eval_script


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
                                                        tracking_uri: str) -> None:
    entries = {f"f{i:02d}": entry("functional") for i in range(30)}
    entries.update({"r": entry("repeatability"), "boom": entry("functional")})
    dataset = write_dataset(tmp_path / "ds", entries)
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": f"async/{uuid.uuid4().hex[:8]}", "DATASET_PATH": str(dataset),
        "EVAL_MIN_ACCURACY": 0.5, "REPEAT_COUNT": 4, "EVAL_MIN_ACCURACY_REPEATABILITY": 0.5,
        "MAX_CONCURRENCY": 5}, "eval.py")
    component = AsyncComponent()
    outcome = evaluate(config, component, Selection("all"), tracker=Tracker(tracking_uri),
                       runs_dir=tmp_path / "runs")

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
    metrics = mlflow.MlflowClient(tracking_uri).get_run(outcome.run_id).data.metrics
    assert (metrics["calls"], metrics["component_errors"]) == (35, 1)


def test_async_component_inside_a_running_event_loop(tmp_path: Path, tracking_uri: str) -> None:
    dataset = write_dataset(tmp_path / "ds", {f"f{i}": entry("functional") for i in range(6)})
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": f"async/{uuid.uuid4().hex[:8]}", "DATASET_PATH": str(dataset),
        "EVAL_MIN_ACCURACY": 1.0, "MAX_CONCURRENCY": 3}, "eval.py")
    component = AsyncComponent()

    async def notebook() -> Any:  # evaluate() called from code that already runs a loop
        return evaluate(config, component, Selection("functional"),
                        tracker=Tracker(tracking_uri), runs_dir=tmp_path / "runs")

    outcome = asyncio.run(notebook())
    assert outcome.passed and sum(component.calls.values()) == 6


SLOW_ASYNC = """
import asyncio
async def invoke_component(entry, call):
    await asyncio.sleep(DELAY)
    return entry.expected_output if entry.expected_output is not None else "same"
"""


def _project(folder: Path, delay: float) -> Path:
    folder.mkdir(parents=True)
    write_dataset(folder / "ds", {**{f"e{i:02d}": entry("functional") for i in range(24)},
                                  "rep": entry("repeatability")})
    write_eval_script(folder, {"EXPERIMENT_NAME": "async/resume", "DATASET_PATH": "ds",
                               "EVAL_MIN_ACCURACY": 0.5, "REPEAT_COUNT": 3,
                               "EVAL_MIN_ACCURACY_REPEATABILITY": 0.5, "MAX_CONCURRENCY": 4,
                               "DELAY": delay}, SLOW_ASYNC)
    return folder


def _calls_made(folder: Path) -> list[tuple[str, int]]:
    found = list((folder / ".evalkit" / "runs").glob("*/raw-results.jsonl"))
    if not found:
        return []
    lines = found[0].read_text().splitlines()
    return [(r["entry_id"], r["repeat"]) for r in map(json.loads, lines)]


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_async_interrupt_keeps_every_finished_call_and_resume_makes_the_rest(
        tmp_path: Path, stop_signal: signal.Signals) -> None:
    folder = _project(tmp_path / "p", delay=0.3)
    process = subprocess.Popen([sys.executable, "eval.py", "--type=all"], cwd=folder,
                               env=script_env(folder), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(_calls_made(folder)) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)  # raw results appear as the calls finish
    process.send_signal(stop_signal)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "marked KILLED" in stderr
    before = _calls_made(folder)
    # At the signal 4 calls had finished and 4 more were in flight: those were awaited, kept.
    assert 8 <= len(before) < 27
    run_id = re.search(r"--resume (\w+)", stderr).group(1)
    client = mlflow.MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    assert client.get_run(run_id).info.status == "KILLED"

    done = run_script(folder, "--resume", run_id)
    assert done.returncode == 0, done.stderr
    after = _calls_made(folder)
    everything = [(f"e{i:02d}", 0) for i in range(24)] + [("rep", r) for r in range(3)]
    assert sorted(after) == sorted(everything)  # each call exactly once, over both attempts
    resumed = client.get_run(run_id)
    assert resumed.info.status == "FINISHED"
    assert resumed.data.tags["resume_calls_saved"] == str(len(before))
    assert resumed.data.tags["resume_calls_made"] == str(27 - len(before))
