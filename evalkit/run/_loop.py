"""The eval loop: call the component for every planned entry, keeping each output as it arrives.

Entry-first: an entry is invoked exactly once, and that one output serves every in-scope test
type. The repeatability exception: an entry with repeatability in scope is invoked
``REPEAT_COUNT`` times; the first output serves its other types. Nothing caches or dedupes
calls, and mock adapters are built fresh from the entry's fixtures before every call.

Calls run with a bounded number in flight (``MAX_CONCURRENCY``). Each is appended to the
raw-results file (one JSON line, flushed) the moment it finishes, so a crash or Ctrl-C loses
nothing already paid for; once the calls stop, the file is put back in dataset order.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from evalkit._secrets import Redactor
from evalkit.dataset import Entry
from evalkit.run._selection import PlannedEntry, RunPlan

logger = logging.getLogger("evalkit")


@dataclass(frozen=True)
class Call:
    """What the component receives besides the entry: fresh mocks and which repeat this is."""

    mocks: Mapping[str, Any]
    """Adapter name -> adapter built from this entry's ``mock_fixtures`` for this call only."""
    repeat: int
    """0-based index of this call among the entry's calls."""
    repeats: int
    """How many calls the entry gets in this run (1, or ``REPEAT_COUNT``)."""
    seed: int | None = None
    """The replicate's seed in replicate mode (derive per-call randomness from it together
    with the entry id and ``repeat``); ``None`` in an ordinary run."""
    replicate: int | None = None
    """0-based replicate index in replicate mode; ``None`` in an ordinary run."""


Component = Callable[[Entry, Call], Any]


@dataclass(frozen=True)
class CallRecord:
    """One component call: its output (a JSON value) or the error it raised."""

    entry_id: str
    repeat: int
    output: Any
    error: str | None
    latency_ms: float

    def to_json(self) -> dict[str, Any]:
        return {"entry_id": self.entry_id, "repeat": self.repeat, "output": self.output,
                "error": self.error, "latency_ms": round(self.latency_ms, 3)}


@dataclass(frozen=True)
class EntryOutputs:
    """Every call made for one planned entry, in call order."""

    planned: PlannedEntry
    calls: tuple[CallRecord, ...]

    @property
    def entry(self) -> Entry:
        return self.planned.entry

    @property
    def first(self) -> CallRecord:
        return self.calls[0]


def read_raw_results(path: Path) -> list[CallRecord]:
    """Every call recorded in a raw-results file, in the order made."""
    with path.open(encoding="utf-8") as lines:
        return [CallRecord(**record)
                for record in map(json.loads, lines)]


class RawResultsLog:
    """Append-only JSON-lines file of every call, written by whichever thread made the call,
    one flushed line at a time; put back in dataset order once the calls stop."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: TextIO = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def append(self, record: CallRecord) -> None:
        line = json.dumps(record.to_json(), ensure_ascii=False) + "\n"
        with self._lock:
            self._file.write(line)
            # Flushed to the OS per line: a killed process keeps every completed call.
            self._file.flush()

    def put_in_order(self, order: Mapping[str, int]) -> None:
        """Rewrite the file sorted by (entry position, repeat); calls finish out of order when
        several are in flight. The rewrite is atomic: a crash leaves the old file whole."""
        with self._lock:
            self._file.close()
            records = read_raw_results(self.path)
            records.sort(key=lambda r: (order.get(r.entry_id, len(order)), r.repeat))
            scratch = self.path.with_suffix(".sorting")
            scratch.write_text("".join(json.dumps(r.to_json(), ensure_ascii=False) + "\n"
                                       for r in records), encoding="utf-8")
            os.replace(scratch, self.path)
            self._file = self.path.open("a", encoding="utf-8")

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> RawResultsLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_calls(plan: RunPlan, component: Component,
              adapters: Mapping[str, Callable[[Any], Any]], raw_log: RawResultsLog,
              redactor: Redactor, *, seed: int | None = None, replicate: int | None = None,
              concurrency: int = 1,
              on_call: Callable[[CallRecord], None] | None = None,
              recorded: Mapping[tuple[str, int], CallRecord] | None = None
              ) -> list[EntryOutputs]:
    """Invoke the component as the plan says, at most ``concurrency`` calls in flight, and
    return every entry's calls in dataset order.

    Calls in ``recorded`` (entry id, repeat) were made by an earlier, interrupted attempt at
    this run and are reused, not made again. Each new call is logged the moment it finishes.
    On an interrupt (or a crash escaping a call) no new call starts, those in flight are
    awaited (a second Ctrl-C abandons them), the raw results are put in dataset order, and
    the interrupt propagates.
    """
    def work(index: int, repeat: int) -> CallRecord:
        planned = plan.items[index]
        call = Call(mocks={}, repeat=repeat, repeats=planned.calls, seed=seed,
                    replicate=replicate)
        record = _invoke(component, planned.entry, call, adapters, redactor)
        raw_log.append(record)
        return record

    # A sliding window rather than submitting everything: at most `concurrency` calls exist
    # beyond those finished, so a stop starts nothing new and only awaits what is in flight.
    records, pending = reused_calls(plan, recorded or {})
    tasks = iter(pending)
    in_flight: dict[Future[CallRecord], tuple[int, int]] = {}
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="evalkit-call")

    def submit_next() -> None:
        task = next(tasks, None)
        if task is not None:
            in_flight[pool.submit(work, *task)] = task

    try:
        for _ in range(concurrency):
            submit_next()
        while in_flight:
            finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in finished:
                key = in_flight.pop(future)
                records[key] = record = future.result()
                if on_call is not None:
                    on_call(record)
                submit_next()
    except BaseException:
        if in_flight:
            logger.warning("stopping: waiting for %d call(s) in flight to finish and be kept "
                           "(Ctrl-C again to abandon them)", len(in_flight))
            wait(in_flight)
        raise
    finally:
        pool.shutdown(wait=False)
        raw_log.put_in_order({p.entry.id: i for i, p in enumerate(plan.items)})
    return entry_outputs(plan, records)


def reused_calls(plan: RunPlan, recorded: Mapping[tuple[str, int], CallRecord]
                 ) -> tuple[dict[tuple[int, int], CallRecord], list[tuple[int, int]]]:
    """The calls an earlier attempt recorded, by (entry index, repeat), and those to make."""
    records = {(index, repeat): recorded[(planned.entry.id, repeat)]
               for index, planned in enumerate(plan.items) for repeat in range(planned.calls)
               if (planned.entry.id, repeat) in recorded}
    pending = [(index, repeat) for index, planned in enumerate(plan.items)
               for repeat in range(planned.calls) if (index, repeat) not in records]
    return records, pending


def entry_outputs(plan: RunPlan, records: Mapping[tuple[int, int], CallRecord]
                  ) -> list[EntryOutputs]:
    return [EntryOutputs(planned, tuple(records[(index, r)] for r in range(planned.calls)))
            for index, planned in enumerate(plan.items)]


def _invoke(component: Component, entry: Entry, call: Call,
            adapters: Mapping[str, Callable[[Any], Any]], redactor: Redactor) -> CallRecord:
    """One call, given everything of ``call`` but its mocks, which are built fresh here."""
    repeat = call.repeat
    started = time.perf_counter()
    try:
        output = component(entry, with_fresh_mocks(call, entry, adapters))
    except Exception as err:  # a component failure is a result, not a crash of the run
        return failed_call(entry.id, repeat, err, started, redactor)
    return settled_call(entry.id, repeat, output, started, redactor)


def with_fresh_mocks(call: Call, entry: Entry,
                     adapters: Mapping[str, Callable[[Any], Any]]) -> Call:
    mocks = {name: adapters[name](fixture) for name, fixture in entry.mock_fixtures.items()}
    return replace(call, mocks=mocks)


def failed_call(entry_id: str, repeat: int, err: Exception, started: float,
                redactor: Redactor) -> CallRecord:
    latency = (time.perf_counter() - started) * 1000
    message = redactor.text(f"{type(err).__name__}: {err}")
    return CallRecord(entry_id, repeat, None, message, latency)


def settled_call(entry_id: str, repeat: int, output: Any, started: float,
                 redactor: Redactor) -> CallRecord:
    """The record of a call that returned ``output``: a JSON value, redacted."""
    latency = (time.perf_counter() - started) * 1000
    try:
        output = json.loads(json.dumps(output, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as err:
        return CallRecord(entry_id, repeat, None, redactor.text(
            f"OutputNotJSON: the component returned {type(output).__name__} ({err}); return a "
            "string, number, boolean, list or dict"), latency)
    return CallRecord(entry_id, repeat, redactor.value(output), None, latency)
