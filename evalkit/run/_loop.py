"""The eval loop: call the component for every planned entry, keeping each output as it arrives.

Entry-first: an entry is invoked exactly once, and that one output serves every in-scope test
type. The repeatability exception: an entry with repeatability in scope is invoked
``REPEAT_COUNT`` times; the first output serves its other types. Nothing caches or dedupes
calls, and mock adapters are built fresh from the entry's fixtures before every call.

Calls run with a bounded number in flight (``MAX_CONCURRENCY``) on daemon worker threads: a
call that passes ``CALL_TIMEOUT`` is recorded as a timeout and abandoned to its thread (a new
worker takes its place), and a thread that never returns cannot keep the process from
exiting (``concurrent.futures`` joins its threads at exit: a hung call would hang it too).
Each result is appended to the raw-results file (one JSON line, flushed) by the loop the
moment it arrives, so a crash or Ctrl-C loses nothing already paid for; once the calls stop,
the file is put back in dataset order.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from evalkit._secrets import Redactor
from evalkit.dataset import Entry
from evalkit.run._call import Call, CallRecord, Component, invoke, timed_out
from evalkit.run._raw import RawResultsLog
from evalkit.run._selection import PlannedEntry, RunPlan

logger = logging.getLogger("evalkit")

_POLL_SECONDS = 0.2
"""How often the loop looks at the clock while no call finishes (deadlines, signals)."""


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


@dataclass(frozen=True)
class _Started:
    call: Call
    deadline: float


_Task = tuple[int, int]
"""(entry position in the plan, repeat)."""
_Work = tuple[_Task, Entry, Call]
_Finished = tuple[_Task, CallRecord | BaseException]


def run_calls(plan: RunPlan, component: Component,
              adapters: Mapping[str, Callable[[Any], Any]], raw_log: RawResultsLog,
              redactor: Redactor, *, seed: int | None = None, replicate: int | None = None,
              concurrency: int = 1, call_timeout: float = float("inf"),
              on_call: Callable[[CallRecord], None] | None = None,
              recorded: Mapping[tuple[str, int], CallRecord] | None = None
              ) -> list[EntryOutputs]:
    """Invoke the component as the plan says, at most ``concurrency`` calls in flight, and
    return every entry's calls in dataset order.

    Calls in ``recorded`` (entry id, repeat) were made by an earlier, interrupted attempt at
    this run and are reused, not made again. Each new call is logged the moment it finishes;
    one still running after ``call_timeout`` seconds is recorded as a timeout and abandoned.
    On an interrupt no new call starts and those in flight are awaited (a second interrupt
    abandons them); then the raw results are put in dataset order and the interrupt
    propagates.
    """
    records: dict[_Task, CallRecord] = {}
    recorded = recorded or {}
    for index, planned in enumerate(plan.items):
        for repeat in range(planned.calls):
            if (planned.entry.id, repeat) in recorded:
                records[(index, repeat)] = recorded[(planned.entry.id, repeat)]
    # A sliding window rather than everything at once: a stop starts nothing new and only
    # awaits what is in flight.
    tasks = iter([(index, repeat) for index, planned in enumerate(plan.items)
                  for repeat in range(planned.calls) if (index, repeat) not in records])
    finished: queue.SimpleQueue[_Finished] = queue.SimpleQueue()
    work: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
    in_flight: dict[_Task, _Started] = {}
    workers = 0

    def add_worker() -> None:
        nonlocal workers
        workers += 1
        threading.Thread(target=_worker, name="evalkit-call", daemon=True,
                         args=(work, finished, component, adapters, redactor)).start()

    def start_next() -> bool:
        """Hand the next task to the workers; whether there was one."""
        task = next(tasks, None)
        if task is None:
            return False
        index, repeat = task
        planned = plan.items[index]
        call = Call(mocks={}, repeat=repeat, repeats=planned.calls, seed=seed,
                    replicate=replicate)
        in_flight[task] = _Started(call, time.monotonic() + call_timeout)
        work.put((task, planned.entry, call))
        return True

    def keep(task: _Task, record: CallRecord) -> None:
        del in_flight[task]
        records[task] = record
        raw_log.append(record)
        if on_call is not None:
            on_call(record)

    def settle_next() -> None:
        """Keep the next call to finish, then record every call past its deadline."""
        wait = min([_POLL_SECONDS, *(s.deadline - time.monotonic() for s in in_flight.values())])
        try:
            task, result = finished.get(timeout=max(wait, 0.0))
        except queue.Empty:
            pass
        else:
            if task in in_flight:  # else an abandoned call that returned after all
                if not isinstance(result, CallRecord):
                    del in_flight[task]
                    raise result  # only KeyboardInterrupt travels this way
                keep(task, result)
        now = time.monotonic()
        for late, started in list(in_flight.items()):
            if started.deadline <= now:
                keep(late, timed_out(plan.items[late[0]].entry, started.call, call_timeout))
                add_worker()  # the late call keeps its thread

    try:
        for _ in range(concurrency):
            add_worker()
            start_next()
        while in_flight:
            settle_next()
            while len(in_flight) < concurrency and start_next():
                pass
    except KeyboardInterrupt:
        if in_flight:
            logger.warning("stopping: waiting for %d call(s) in flight to finish and be kept "
                           "(Ctrl-C again to abandon them)", len(in_flight))
            try:
                while in_flight:
                    settle_next()
            except KeyboardInterrupt:
                logger.warning("abandoned %d call(s) in flight; they will be made by --resume",
                               len(in_flight))
        raise
    finally:
        for _ in range(workers):  # idle workers end; a hung one stays abandoned
            work.put(None)
        raw_log.put_in_order({p.entry.id: i for i, p in enumerate(plan.items)})
    return [EntryOutputs(planned, tuple(records[(index, r)] for r in range(planned.calls)))
            for index, planned in enumerate(plan.items)]


def _worker(work: queue.SimpleQueue[_Work | None], finished: queue.SimpleQueue[_Finished],
            component: Component, adapters: Mapping[str, Callable[[Any], Any]],
            redactor: Redactor) -> None:
    """Make calls until told to stop (``None``)."""
    while (item := work.get()) is not None:
        task, entry, call = item
        try:
            finished.put((task, invoke(component, entry, call, adapters, redactor)))
        except KeyboardInterrupt as interrupt:  # raised by the component itself: stop the run
            finished.put((task, interrupt))
