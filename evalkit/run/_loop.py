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

Work that follows an entry (its judge calls) shares the window: once the entry's last call is
in, its follow-ups are queued and take the slots that no call is left to fill, so judging
fills the tail of the calls instead of starting after the last of them, and calls plus judge
requests in flight never exceed the bound. Calls go first: a follow-up can start only after
its entry's calls end, so the run is shortest when the calls end as early as possible.
"""

from __future__ import annotations

import itertools
import logging
import math
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from evalkit._secrets import Redactor
from evalkit.dataset import Entry
from evalkit.run._call import Call, CallRecord, Component, invoke, timed_out
from evalkit.run._raw import RawResultsLog
from evalkit.run._selection import PlannedEntry, RunPlan
from evalkit.run._signals import DeferredStops

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


FollowUps = Callable[[EntryOutputs], Sequence[Callable[[], None]]]
"""Jobs to run once an entry's calls are all in (the judge calls of its verdicts)."""

_Task = tuple[int, int]
"""(entry position in the plan, repeat); a follow-up job is (-1, its number)."""
_Work = tuple[_Task, Callable[[], CallRecord | None]]
_Finished = tuple[_Task, CallRecord | None | BaseException]


def run_calls(plan: RunPlan, component: Component,
              adapters: Mapping[str, Callable[[Any], Any]], raw_log: RawResultsLog,
              redactor: Redactor, *, seed: int | None = None, replicate: int | None = None,
              concurrency: int = 1, call_timeout: float = float("inf"),
              on_call: Callable[[CallRecord], None] | None = None,
              recorded: Mapping[tuple[str, int], CallRecord] | None = None,
              follow_ups: FollowUps | None = None) -> list[EntryOutputs]:
    """Invoke the component as the plan says, at most ``concurrency`` calls (and follow-up
    jobs) in flight, and return every entry's calls in dataset order.

    Calls in ``recorded`` (entry id, repeat) were made by an earlier, interrupted attempt at
    this run and are reused, not made again. Each new call is logged the moment it finishes;
    one still running after ``call_timeout`` seconds is recorded as a timeout and abandoned.
    On an interrupt no new call starts and those in flight are awaited (a second interrupt
    abandons them); then the raw results are put in dataset order and the interrupt
    propagates.
    """
    # A sliding window rather than everything at once: a stop starts nothing new and only
    # awaits what is in flight.
    records, pending = reused_calls(plan, recorded or {})
    tasks = iter(pending)
    entry_done = EntryCompletion(plan, pending, follow_ups)
    jobs: deque[Callable[[], None]] = deque()
    job_numbers = itertools.count()
    finished: queue.SimpleQueue[_Finished] = queue.SimpleQueue()
    work: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
    in_flight: dict[_Task, Call | None] = {}
    """Each call in flight, or ``None`` for a follow-up job (which has no deadline)."""
    deadlines: deque[tuple[float, _Task]] = deque()
    """Calls by start time: every call has the same timeout, so the first one still in
    flight is the next to pass its deadline."""
    workers = 0

    def add_worker() -> None:
        nonlocal workers
        workers += 1
        threading.Thread(target=_worker, name="evalkit-call", daemon=True,
                         args=(work, finished)).start()

    def start_next() -> bool:
        """Hand the next call, else the next follow-up job, to the workers; whether there
        was one."""
        task = next(tasks, None)
        if task is None:
            if not jobs:
                return False
            job = (-1, next(job_numbers))
            in_flight[job] = None
            work.put((job, partial(run_follow_up, jobs.popleft())))
            return True
        index, repeat = task
        planned = plan.items[index]
        call = Call(mocks={}, repeat=repeat, repeats=planned.calls, seed=seed,
                    replicate=replicate)
        in_flight[task] = call
        deadlines.append((time.monotonic() + call_timeout, task))
        work.put((task, partial(invoke, component, planned.entry, call, adapters, redactor)))
        return True

    def keep(task: _Task, record: CallRecord) -> None:
        del in_flight[task]
        records[task] = record
        raw_log.append(record)
        if on_call is not None:
            on_call(record)
        jobs.extend(entry_done.call_in(task[0], records))

    def settle_next() -> None:
        """Keep the next call to finish, then record every call past its deadline."""
        wait = min(_POLL_SECONDS, next_deadline() - time.monotonic())
        try:
            task, result = finished.get(timeout=max(wait, 0.0))
        except queue.Empty:
            pass
        else:
            if task in in_flight:  # else an abandoned call that returned after all
                if isinstance(result, CallRecord):
                    keep(task, result)
                else:
                    del in_flight[task]
                    if result is not None:
                        raise result  # only KeyboardInterrupt travels this way
        now = time.monotonic()
        while next_deadline() <= now:
            _, late = deadlines.popleft()
            call = in_flight[late]
            assert call is not None  # only calls have deadlines
            keep(late, timed_out(plan.items[late[0]].entry, call, call_timeout))
            add_worker()  # the late call keeps its thread

    def next_deadline() -> float:
        while deadlines and deadlines[0][1] not in in_flight:
            deadlines.popleft()
        return deadlines[0][0] if deadlines else math.inf

    # Each step (a result kept, new calls handed out) runs whole: a stop signal waits for
    # the end of the step, at most one poll interval.
    with DeferredStops() as stops:
        try:
            with stops.section():
                for _ in range(concurrency):
                    add_worker()
                    start_next()
            while in_flight:
                with stops.section():
                    settle_next()
                    while len(in_flight) < concurrency and start_next():
                        pass
        except KeyboardInterrupt:
            if in_flight:
                logger.warning("stopping: waiting for %d call(s) in flight to finish and be "
                               "kept (Ctrl-C again to abandon them)", len(in_flight))
                try:
                    while in_flight:
                        with stops.section():
                            settle_next()
                except KeyboardInterrupt:
                    logger.warning("abandoned %d call(s) in flight; they will be made by "
                                   "--resume", len(in_flight))
            raise
        finally:
            for _ in range(workers):  # idle workers end; a hung one stays abandoned
                work.put(None)
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


class EntryCompletion:
    """Counts each entry's outstanding calls and hands out its follow-up jobs once the last
    one is in (an entry all of whose calls were reused has none: it is scored afterwards)."""

    def __init__(self, plan: RunPlan, pending: Sequence[_Task],
                 follow_ups: FollowUps | None) -> None:
        self._plan = plan
        self._follow_ups = follow_ups
        self._outstanding: dict[int, int] = {}
        for index, _ in pending:
            self._outstanding[index] = self._outstanding.get(index, 0) + 1

    def call_in(self, index: int, records: Mapping[_Task, CallRecord]
                ) -> Sequence[Callable[[], None]]:
        """The follow-up jobs due now that one more call of entry ``index`` is in."""
        self._outstanding[index] -= 1
        if self._outstanding[index] or self._follow_ups is None:
            return ()
        planned = self._plan.items[index]
        return self._follow_ups(EntryOutputs(planned, tuple(
            records[(index, r)] for r in range(planned.calls))))


def entry_outputs(plan: RunPlan, records: Mapping[tuple[int, int], CallRecord]
                  ) -> list[EntryOutputs]:
    return [EntryOutputs(planned, tuple(records[(index, r)] for r in range(planned.calls)))
            for index, planned in enumerate(plan.items)]


def _worker(work: queue.SimpleQueue[_Work | None],
            finished: queue.SimpleQueue[_Finished]) -> None:
    """Make calls and run follow-up jobs until told to stop (``None``)."""
    while (item := work.get()) is not None:
        task, run = item
        try:
            finished.put((task, run()))
        except KeyboardInterrupt as interrupt:  # raised by the component itself: stop the run
            finished.put((task, interrupt))


def run_follow_up(job: Callable[[], None]) -> None:
    """Run one follow-up job; one that fails costs nothing but time: its entry is scored after
    the calls, as it would have been without it."""
    try:
        job()
    except Exception:
        logger.exception("a follow-up job failed; its entry is scored after the calls")
