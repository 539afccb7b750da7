"""The call window on its own: calls in flight at once, finishing out of order, kept in order;
timeouts; follow-up jobs in the same bound; the stop rule; the same for an async component.

Fast (no MLflow, no model): these are among the tests ``make mutation`` runs.
"""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import contextvars
import json
import logging
import signal
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, Entry, RunInterrupted
from evalkit._secrets import Redactor
from evalkit.calls import CallWindow, EntryOutputs, Stop
from evalkit.calls._books import Task
from evalkit.calls._executors import Deliver, Lost
from evalkit.records import CallRecord, SpanRecord
from evalkit.tracking import RawResultsLog, read_raw_results
from tests.support.builders import entry, plan_of
from tests.support.clock import FakeClock


def raw_order(path: Path) -> list[tuple[str, int]]:
    return [(r["entry_id"], r["repeat"]) for r in map(json.loads, path.open())]


def finished_within(seconds: float, run: Any) -> list[Any]:
    """``run()``'s outcome (what it returned or raised), failing the test if it is still
    running after ``seconds``: a window that waits forever fails here, not at the timeout."""
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append(run())
        except BaseException as err:  # noqa: BLE001 - the outcome under test
            outcome.append(err)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    return outcome


def window(component: Any, *, adapters: dict[str, Any] | None = None,
           redactor: Redactor | None = None, **settings: Any) -> CallWindow:
    return CallWindow.of(component, adapters or {}, redactor or Redactor(), **settings)


def test_repeats_finishing_out_of_order_come_back_in_dataset_then_repeat_order(
        tmp_path: Path) -> None:
    # Entry "a" (first in the dataset) has three repeats; repeat 0 is held back until every
    # other call has finished, so it is the last line appended to the raw results.
    plan = plan_of(tmp_path, {"a": entry("repeatability"), "b": entry("functional"),
                              "c": entry("functional")})
    others_done = threading.Event()
    finished: list[CallRecord] = []
    appended: list[list[tuple[str, int]]] = []
    raw = tmp_path / "raw.jsonl"

    def component(item: Entry, call: Call) -> str:
        if (item.id, call.repeat) == ("a", 0):
            assert others_done.wait(timeout=30), "the other calls never finished"
        return f"{item.id}-{call.repeat}"

    def on_call(record: CallRecord) -> None:
        finished.append(record)
        appended.append(raw_order(raw))
        if len(finished) == plan.total_calls - 1:
            others_done.set()

    with RawResultsLog(raw) as log:
        outputs = window(component, concurrency=5).run(plan, log, on_call=on_call)

    assert [(r.entry_id, r.repeat) for r in finished][-1] == ("a", 0)
    assert appended[-1][-1] == ("a", 0)  # the file really was written out of order
    assert raw_order(raw) == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("c", 0)]
    assert [[c.output for c in o.calls] for o in outputs] == [
        ["a-0", "a-1", "a-2"], ["b-0"], ["c-0"]]


def test_every_call_gets_its_context_and_fresh_mocks(tmp_path: Path) -> None:
    def crm(fixture: Any) -> tuple[str, Any]:
        return ("crm", fixture)

    plan = plan_of(tmp_path, {"r": entry("repeatability", mock_fixtures={"crm": {"n": 1}}),
                              "f": entry("functional")}, repeats=2, MOCK_ADAPTERS={"crm": crm})
    seen: list[tuple[str, int, int, int | None, int | None, Any]] = []
    lock = threading.Lock()

    def component(item: Entry, call: Call) -> str:
        with lock:
            seen.append((item.id, call.repeat, call.repeats, call.seed, call.replicate,
                         call.mocks))
        return "café"  # kept as written in the raw results, not \\u-escaped

    raw = tmp_path / "nested" / "run" / "raw.jsonl"  # folders are created
    with RawResultsLog(raw) as log:
        window(component, adapters={"crm": crm}, concurrency=2).run(plan, log, seed=42,
                                                                     replicate=1)
    assert sorted(seen, key=str) == sorted([
        ("f", 0, 1, 42, 1, {}),
        ("r", 0, 2, 42, 1, {"crm": ("crm", {"n": 1})}),
        ("r", 1, 2, 42, 1, {"crm": ("crm", {"n": 1})})], key=str)
    assert all(calls[5] is not seen[0][5] for calls in seen[1:])  # a fresh mock every call
    assert raw.read_text(encoding="utf-8").count('"café"') == 3


def test_recorded_calls_are_reused_not_made_again(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {"a": entry("repeatability"), "b": entry("functional")})
    kept = CallRecord("a", 1, "from before", None, 5.0)
    made: list[tuple[str, int]] = []

    def component(item: Entry, call: Call) -> str:
        made.append((item.id, call.repeat))
        return "new"

    with RawResultsLog(tmp_path / "raw.jsonl") as log:
        outputs = window(component).run(plan, log, recorded={("a", 1): kept})
    assert sorted(made) == [("a", 0), ("a", 2), ("b", 0)]
    assert outputs[0].calls[1] is kept
    assert [c.output for c in outputs[0].calls] == ["new", "from before", "new"]


def test_at_most_concurrency_calls_are_in_flight(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {f"e{i}": entry("functional") for i in range(8)})
    in_flight, peak = 0, 0
    lock = threading.Lock()
    both_started = threading.Barrier(2, timeout=30)

    def component(item: Entry, call: Call) -> str:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        if item.id in ("e0", "e1"):
            both_started.wait()  # the first two calls overlap for certain
        with lock:
            in_flight -= 1
        return "a"

    with RawResultsLog(tmp_path / "raw.jsonl") as log:
        window(component, concurrency=2).run(plan, log)
    assert peak == 2


def test_failures_are_results_with_their_latency_and_secrets_redacted(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {"boom": entry("functional"), "obj": entry("functional"),
                              "leak": entry("functional")})
    redactor = Redactor((("API_KEY", "sk-very-secret-value"),))

    def component(item: Entry, call: Call) -> Any:
        time.sleep(0.02)
        if item.id == "boom":
            raise RuntimeError("denied for sk-very-secret-value")
        if item.id == "obj":
            return object()
        return {"echo": "sk-very-secret-value"}

    with RawResultsLog(tmp_path / "raw.jsonl") as log:
        boom, leak, obj = (o.first for o in window(component, redactor=redactor).run(plan, log))
    assert (boom.entry_id, boom.repeat, boom.output) == ("boom", 0, None)
    assert boom.error == "RuntimeError: denied for [REDACTED:API_KEY]"
    assert (obj.entry_id, obj.output) == ("obj", None)
    assert obj.error == ("OutputNotKept: the component returned object: Object of type object "
                         "is not JSON serializable; return a string, number, boolean, list or "
                         "dict of them (finite numbers only)")
    assert (leak.output, leak.error) == ({"echo": "[REDACTED:API_KEY]"}, None)
    for record in (boom, obj, leak):  # milliseconds: at least the 20 ms slept
        assert record.latency_ms >= 15


def test_a_stop_starts_no_new_call_and_keeps_those_in_flight(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plan = plan_of(tmp_path, {f"e{i}": entry("functional") for i in range(6)})
    slow_started, stopped = threading.Event(), threading.Event()
    stop = Stop()

    def component(item: Entry, call: Call) -> str:
        if item.id == "e0":
            slow_started.set()
            assert stopped.wait(timeout=30)  # still in flight when the run is stopped
            return "slow"
        assert slow_started.wait(timeout=30)
        return "fast"

    def on_call(record: CallRecord) -> None:
        if record.entry_id != "e0":
            stop.request()  # the stop arrives as e1 is kept
            stopped.set()

    raw = tmp_path / "raw.jsonl"
    with RawResultsLog(raw) as log, pytest.raises(RunInterrupted):
        window(component, concurrency=2, stop=stop).run(plan, log, on_call=on_call)
    assert raw_order(raw) == [("e0", 0), ("e1", 0)]  # the call in flight finished, was kept
    assert "stopping: waiting for 1 call(s) in flight to finish and be kept" in caplog.text


def test_a_stop_is_spent_once_the_run_it_stopped_has_ended() -> None:
    stop = Stop()
    stop.request()  # before the run opens (a service shutting down while it prepares)
    with stop.open_run():
        assert stop.requested and stop.run_open
        with stop.open_run():  # a replicate inside its series
            stop.request()
        assert stop.abandons and stop.run_open  # the series is still open: still its
    assert not stop.requested and not stop.run_open  # clear for the next run


def test_a_stop_before_the_window_starts_nothing(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {f"e{i}": entry("functional") for i in range(3)})
    stop = Stop()
    stop.request()
    made: list[str] = []
    with RawResultsLog(tmp_path / "raw.jsonl") as log, pytest.raises(RunInterrupted):
        window(lambda item, call: made.append(item.id), stop=stop).run(plan, log)
    assert made == []


def test_a_second_stop_abandons_the_call_in_flight_and_says_so(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plan = plan_of(tmp_path, {"hangs": entry("functional"), "quick": entry("functional")})
    release = threading.Event()
    stop = Stop()

    def component(item: Entry, call: Call) -> str:
        if item.id == "hangs":
            release.wait(60)
        return "a"

    def on_call(record: CallRecord) -> None:  # "quick" is in: stop, then stop again
        stop.request()
        threading.Timer(0.3, stop.request).start()

    try:
        with RawResultsLog(tmp_path / "raw.jsonl") as log, caplog.at_level(logging.WARNING), \
                pytest.raises(RunInterrupted):
            window(component, concurrency=2, stop=stop).run(plan, log, on_call=on_call)
    finally:
        release.set()
    assert caplog.messages == [
        "stopping: waiting for 1 call(s) in flight to finish and be kept (stop again, e.g. "
        "Ctrl-C, to abandon them)",
        "abandoned 1 call(s) in flight; a resume makes them again"]
    assert raw_order(tmp_path / "raw.jsonl") == [("quick", 0)]


def test_an_interrupt_of_the_waiting_thread_is_a_stop_and_tears_nothing(
        tmp_path: Path) -> None:
    # Ctrl-C in a notebook raises KeyboardInterrupt in the thread that waits for the calls:
    # it becomes a stop request, the call in flight is kept, and no new call starts. Python's
    # own handler for the duration, even in a job started with SIGINT ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    plan = plan_of(tmp_path, {f"e{i}": entry("functional") for i in range(5)})
    made: list[str] = []

    def component(item: Entry, call: Call) -> str:
        made.append(item.id)
        if item.id == "e1":
            _thread.interrupt_main()  # as a kernel interrupt lands in the waiting thread
            time.sleep(0.3)
        return "a"

    raw = tmp_path / "raw.jsonl"
    try:
        with RawResultsLog(raw) as log, pytest.raises(RunInterrupted):
            window(component).run(plan, log)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert made == ["e0", "e1"]
    assert raw_order(raw) == [("e0", 0), ("e1", 0)]


class InterruptedStart(threading.Thread):
    """A thread whose start is interrupted (a kernel interrupt landing in ``start``) before
    it is launched, after, or only once it has made every call."""

    interrupted = "after the launch"

    def start(self) -> None:
        if self.interrupted != "before the launch":
            super().start()
        if self.interrupted == "after the calls":
            self.join()
        raise KeyboardInterrupt


@pytest.mark.parametrize("interrupted", ["before the launch", "after the launch",
                                         "after the calls"])
def test_an_interrupt_while_the_window_starts_is_a_stop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interrupted: str) -> None:
    monkeypatch.setattr(InterruptedStart, "interrupted", interrupted)
    monkeypatch.setattr("evalkit.calls._window.threading",  # the window's alone
                        types.SimpleNamespace(Thread=InterruptedStart, Event=threading.Event))
    monkeypatch.setattr("evalkit.calls._window._START_GRACE_S", 0.5)
    made: list[str] = []

    def component(item: Entry, call: Call) -> str:
        made.append(item.id)
        return "a"

    def run() -> list[EntryOutputs]:
        with RawResultsLog(tmp_path / "raw.jsonl") as log:
            return window(component).run(plan_of(tmp_path, {"e0": entry("functional")}), log)

    [outcome] = finished_within(30, run)
    assert isinstance(outcome, RunInterrupted)  # never a bare KeyboardInterrupt
    # launched, the window may have made its call before hearing the stop: it is kept
    assert [e for e, _ in raw_order(tmp_path / "raw.jsonl")] == made
    if interrupted == "before the launch":
        assert made == []
        assert str(outcome) == "interrupted as the calls began; none was made"


def test_an_entry_gets_its_follow_ups_once_when_its_last_call_is_in(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {"a": entry("repeatability"), "b": entry("functional")},
                   repeats=3, selection="all")
    seen: list[tuple[str, int]] = []
    ran: list[str] = []

    def follow_ups(outputs: EntryOutputs) -> list:
        seen.append((outputs.entry.id, len(outputs.calls)))
        return [lambda: ran.append(outputs.entry.id)]

    with RawResultsLog(tmp_path / "raw.jsonl") as log:
        window(lambda item, call: "x", concurrency=2).run(plan, log, follow_ups=follow_ups)
    assert sorted(seen) == [("a", 3), ("b", 1)]
    assert sorted(ran) == ["a", "b"]


def test_a_stop_warning_counts_the_calls_and_the_follow_ups_in_flight_apart(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # "a" is in and its follow-up is running while "b"'s call is still out: a stop then
    # waits for one call and one early judging job, and says which is which.
    plan = plan_of(tmp_path, {"a": entry("functional"), "b": entry("functional")})
    judging, release = threading.Event(), threading.Event()
    stop = Stop()

    def component(item: Entry, call: Call) -> str:
        if item.id == "b":
            assert judging.wait(timeout=30)
            stop.request()
            assert release.wait(timeout=30)
        return "x"

    def judge() -> None:
        judging.set()
        assert release.wait(timeout=30)

    def run() -> list[EntryOutputs]:
        with RawResultsLog(tmp_path / "raw.jsonl") as log:
            return window(component, concurrency=2, stop=stop).run(
                plan, log, follow_ups=lambda outputs: [judge] if outputs.entry.id == "a" else [])

    threading.Timer(1.0, release.set).start()
    with caplog.at_level(logging.WARNING):
        [outcome] = finished_within(30, run)
    assert isinstance(outcome, RunInterrupted)
    assert caplog.messages[0] == (
        "stopping: waiting for 1 call(s) and 1 early judging job(s) in flight to finish and be "
        "kept (stop again, e.g. Ctrl-C, to abandon them)")


class ProviderGaveUp(BaseException):
    """What a provider's SDK may raise: neither an Exception nor a KeyboardInterrupt."""


@pytest.mark.parametrize("error", [RuntimeError("judge exploded"), SystemExit(3),
                                   ProviderGaveUp("no more")])
def test_a_failing_follow_up_neither_stops_the_run_nor_hangs_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, error: BaseException) -> None:
    plan = plan_of(tmp_path, {f"e{i}": entry("functional") for i in range(4)})

    def boom() -> None:
        raise error

    def run() -> list[EntryOutputs]:
        with RawResultsLog(tmp_path / "raw.jsonl") as log:
            return window(lambda item, call: "x", concurrency=2).run(
                plan, log, follow_ups=lambda outputs: [boom])

    with caplog.at_level(logging.ERROR):
        [outputs] = finished_within(30, run)
    assert [o.first.output for o in outputs] == ["x"] * 4
    assert caplog.messages == ["a follow-up job failed; its entry is scored after the calls"] * 4


def test_a_failure_of_evalkit_itself_around_a_call_fails_the_run_instead_of_hanging_it(
        tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {"a": entry("functional")})
    calls = window(lambda item, call: "x")

    def broken_invoke(**kwargs: Any) -> Any:
        raise SystemExit("a bug around the call")

    calls._calls._call = broken_invoke  # type: ignore[attr-defined]

    def run() -> list[EntryOutputs]:
        with RawResultsLog(tmp_path / "raw.jsonl") as log:
            return calls.run(plan, log)

    outcome = finished_within(30, run)
    assert [type(e) for e in outcome] == [SystemExit]
    assert str(outcome[0]) == "a bug around the call"


def test_a_failure_whose_message_raises_even_a_base_exception_is_a_placeholder(
        tmp_path: Path) -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise SystemExit("no message")

    def component(item: Entry, call: Call) -> str:
        raise Unprintable

    def run() -> list[EntryOutputs]:
        with RawResultsLog(tmp_path / "raw.jsonl") as log:
            return window(component).run(plan_of(tmp_path, {"a": entry("functional")}), log)

    [[outputs]] = finished_within(30, run)
    assert outputs.first.error == "Unprintable: <the message could not be rendered: SystemExit>"


def test_the_workers_end_with_the_window(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {f"e{i}": entry("functional") for i in range(6)})
    before = set(threading.enumerate())

    def started_by_the_window() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t not in before]

    with RawResultsLog(tmp_path / "raw.jsonl") as log:
        window(lambda item, call: "a", concurrency=3).run(plan, log)
    deadline = time.monotonic() + 5
    while started_by_the_window() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert started_by_the_window() == []  # every idle worker was told to stop


def test_follow_ups_never_take_the_place_of_a_call_in_flight(tmp_path: Path) -> None:
    # "a" ends at once and its follow-up starts while "b"'s three calls are still out: the two
    # must be told apart (b's calls are all kept, the follow-up runs once).
    plan = plan_of(tmp_path, {"a": entry("functional"), "b": entry("repeatability")},
                   repeats=3)
    ran: list[str] = []

    def component(item: Entry, call: Call) -> str:
        if item.id == "b":
            time.sleep(0.3)
        return f"{item.id}{call.repeat}"

    def follow_ups(outputs: EntryOutputs) -> list:
        return [lambda: ran.append(outputs.entry.id)] if outputs.entry.id == "a" else []

    with RawResultsLog(tmp_path / "raw.jsonl") as log:
        outputs = window(component, concurrency=4).run(plan, log, follow_ups=follow_ups)
    assert [c.output for c in outputs[1].calls] == ["b0", "b1", "b2"]
    assert ran == ["a"]


def test_follow_ups_due_together_run_side_by_side_and_are_all_awaited(
        tmp_path: Path) -> None:
    # One call completes an entry with three follow-ups: all start at once (each waits for
    # the others), and the window returns only when the slowest of them has ended.
    plan = plan_of(tmp_path, {"a": entry("functional")})
    together = threading.Barrier(3, timeout=5)
    ended: list[int] = []

    def job(number: int) -> None:
        together.wait()
        time.sleep(0.1 * number)
        ended.append(number)

    def follow_ups(outputs: EntryOutputs) -> list:
        return [lambda n=n: job(n) for n in range(3)]

    with RawResultsLog(tmp_path / "raw.jsonl") as log:
        window(lambda item, call: "a", concurrency=3).run(plan, log, follow_ups=follow_ups)
    assert sorted(ended) == [0, 1, 2]  # every one of them ended before the window returned


def test_a_call_past_its_timeout_is_recorded_and_the_window_goes_on(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {"slow": entry("functional"), "quick": entry("functional")})
    release, clock = threading.Event(), FakeClock()

    def component(item: Entry, call: Call) -> str:
        if item.id == "slow":
            clock.advance(0.3)  # past its 0.2 s
            release.wait(30)
        return "a"

    try:
        with RawResultsLog(tmp_path / "raw.jsonl") as log:
            outputs = window(component, concurrency=2, call_timeout=0.2, clock=clock).run(
                plan, log)
    finally:
        release.set()
    by_id = {o.entry.id: o.first for o in outputs}
    slow, quick = by_id["slow"], by_id["quick"]
    assert slow.entry_id == "slow" and slow.error is not None
    assert slow.error.startswith("CallTimeout: no result within CALL_TIMEOUT = 0.2 s")
    assert quick.output == "a" and quick.error is None


def test_a_lone_hung_call_is_timed_out_with_nothing_else_to_wake_the_window(
        tmp_path: Path) -> None:
    # The only call in flight has run exactly its CALL_TIMEOUT and then hangs: no result will
    # arrive, so the window must look at the clock on its own to record it.
    plan = plan_of(tmp_path, {"hangs": entry("functional")})
    release, clock = threading.Event(), FakeClock()

    def component(item: Entry, call: Call) -> str:
        clock.advance(0.2)
        release.wait(120)
        return "late"

    try:
        with RawResultsLog(tmp_path / "raw.jsonl") as log:
            outputs = window(component, call_timeout=0.2, clock=clock).run(plan, log)
    finally:
        release.set()
    error = outputs[0].first.error
    assert error is not None and error.startswith("CallTimeout")


def test_a_call_waits_for_a_free_place_before_its_timeout_starts(tmp_path: Path) -> None:
    # One place: the second call starts when the first ends; its CALL_TIMEOUT counts from then.
    # Counted from the window's start, b would end past its deadline: 1.6 s > 1.1 s.
    plan = plan_of(tmp_path, {"a": entry("functional"), "b": entry("functional")})
    clock = FakeClock()

    def component(item: Entry, call: Call) -> str:
        clock.advance(0.8)
        return "done"

    with RawResultsLog(tmp_path / "raw.jsonl") as log:
        outputs = window(component, call_timeout=1.1, clock=clock).run(plan, log)
    assert [(o.first.output, o.first.error) for o in outputs] == [("done", None)] * 2


def test_a_component_raising_keyboard_interrupt_stops_the_window(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {"a": entry("functional"), "b": entry("functional"),
                              "c": entry("functional")})
    made: list[str] = []

    def component(item: Entry, call: Call) -> str:
        made.append(item.id)
        if item.id == "b":
            raise KeyboardInterrupt
        return "a"

    with RawResultsLog(tmp_path / "raw.jsonl") as log, pytest.raises(RunInterrupted):
        window(component).run(plan, log)
    assert made == ["a", "b"]  # an interrupt, never a call error: nothing after it


def test_calls_run_on_daemon_threads_named_for_the_window(tmp_path: Path) -> None:
    # Daemon: a call that never returns cannot keep the process from exiting; nor can the
    # window's own thread, where each result is kept.
    plan = plan_of(tmp_path, {f"e{i}": entry("functional") for i in range(3)})
    seen: set[tuple[str, bool]] = set()
    keeping: set[tuple[str, bool]] = set()

    def component(item: Entry, call: Call) -> str:
        seen.add((threading.current_thread().name, threading.current_thread().daemon))
        return "a"

    def on_call(record: CallRecord) -> None:
        keeping.add((threading.current_thread().name, threading.current_thread().daemon))

    with RawResultsLog(tmp_path / "raw.jsonl") as log:
        window(component, concurrency=2).run(plan, log, on_call=on_call)
    assert seen == {("evalkit-call", True)}
    assert keeping == {("evalkit-window", True)}


# --- the same window for an async def component -------------------------------------------


def test_async_calls_overlap_up_to_the_bound_and_come_back_in_order(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {f"e{i}": entry("functional") for i in range(6)})
    in_flight, peak = 0, 0

    async def component(item: Entry, call: Call) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.05 if item.id == "e0" else 0.01)
        in_flight -= 1
        return item.id

    raw = tmp_path / "raw.jsonl"
    with RawResultsLog(raw) as log:
        outputs = window(component, concurrency=3).run(plan, log)
    assert peak == 3
    assert [o.first.output for o in outputs] == [f"e{i}" for i in range(6)]
    assert raw_order(raw) == [(f"e{i}", 0) for i in range(6)]


def test_an_async_call_past_its_timeout_is_cancelled_and_recorded(tmp_path: Path) -> None:
    # One place: "late" starts only once "hangs" was given up, and by then it was cancelled.
    plan = plan_of(tmp_path, {"hangs": entry("functional"), "late": entry("functional")})
    cancelled, clock = threading.Event(), FakeClock()

    async def component(item: Entry, call: Call) -> Any:
        if item.id == "hangs":
            clock.advance(0.3)
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise
        await asyncio.sleep(0)
        return {"hangs was cancelled": cancelled.is_set()}

    with RawResultsLog(tmp_path / "raw.jsonl") as log:
        outputs = window(component, call_timeout=0.2, clock=clock).run(plan, log)
    hangs, late = (o.first for o in outputs)
    assert hangs.error is not None and hangs.error.startswith("CallTimeout")
    assert late.output == {"hangs was cancelled": True}


def test_an_async_stop_keeps_the_calls_in_flight_and_starts_none(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {f"e{i}": entry("functional") for i in range(6)})
    stop = Stop()

    async def component(item: Entry, call: Call) -> str:
        if item.id == "e1":
            stop.request()
        await asyncio.sleep(0.1)
        return "a"

    raw = tmp_path / "raw.jsonl"
    with RawResultsLog(raw) as log, pytest.raises(RunInterrupted):
        window(component, concurrency=2, stop=stop).run(plan, log)
    assert raw_order(raw) == [("e0", 0), ("e1", 0)]


def test_an_async_component_raising_keyboard_interrupt_is_a_stop(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {"a": entry("functional"), "b": entry("functional")})

    async def component(item: Entry, call: Call) -> str:
        if item.id == "a":
            raise KeyboardInterrupt
        return "b"

    with RawResultsLog(tmp_path / "raw.jsonl") as log, pytest.raises(RunInterrupted):
        window(component).run(plan, log)


class LosingCalls:
    """An executor whose place to run goes away after ``keep`` calls: the first ``keep``
    calls are answered, every later one is delivered :class:`Lost`, as a cluster that went
    away delivers them."""

    def __init__(self, keep: int) -> None:
        self.keep, self.started = keep, 0
        self.abandoned: list[Task] = []

    def calls(self, component: Any, adapters: Any, redactor: Any, workers: Any,
              capture: Any) -> Any:
        return self

    def start(self, task: Task, entry: Entry, call: Call, deliver: Deliver) -> None:
        self.started += 1
        if self.started > self.keep:
            threading.Thread(target=deliver, args=(task, Lost("the cluster went away"))).start()
            return
        deliver(task, CallRecord(entry.id, call.repeat, "a", None, 1.0))

    def abandon(self, task: Task) -> None:
        self.abandoned.append(task)

    def close(self) -> None:
        pass


def test_a_lost_executor_stops_the_run_at_once_with_every_kept_call_kept(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plan = plan_of(tmp_path, {f"e{i}": entry("functional") for i in range(6)})
    executor = LosingCalls(keep=2)
    with pytest.raises(RunInterrupted), RawResultsLog(tmp_path / "raw.jsonl") as log:
        window(lambda e, c: "a", executor=executor, concurrency=1).run(plan, log)
    kept = read_raw_results(tmp_path / "raw.jsonl").records
    assert [(r.entry_id, r.output) for r in kept] == [("e0", "a"), ("e1", "a")]
    assert executor.started == 3  # no call started after the loss
    assert "the cluster went away: stopping the run" in [r.getMessage() for r in caplog.records]


def test_calls_and_follow_ups_each_run_under_the_windows_span_capture(tmp_path: Path) -> None:
    capturing: contextvars.ContextVar[bool] = contextvars.ContextVar("capturing", default=False)
    entered: list[str] = []

    @contextlib.contextmanager
    def capture() -> Iterator[list[SpanRecord]]:
        token = capturing.set(True)
        try:
            yield []
        finally:
            capturing.reset(token)

    def component(item: Entry, call: Call) -> str:
        entered.append(f"call {item.id}: {capturing.get()}")
        return "a"

    def follow_ups(outputs: EntryOutputs) -> list[Any]:
        return [lambda: entered.append(f"follow-up {outputs.entry.id}: {capturing.get()}")]

    plan = plan_of(tmp_path, {"a": entry("functional"), "b": entry("functional")})
    with RawResultsLog(tmp_path / "raw.jsonl") as log:
        window(component, capture=capture, concurrency=2).run(plan, log, follow_ups=follow_ups)
    assert sorted(entered) == ["call a: True", "call b: True", "follow-up a: True",
                               "follow-up b: True"]
