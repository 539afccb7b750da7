"""The call window: the one scheduler of a run's calls, whatever runs them.

At most ``MAX_CONCURRENCY`` calls and follow-up jobs are in flight at once; a new one starts as
each finishes. Calls go first: an entry's follow-ups (its judge calls) start once its calls are
in, and take the places no call is left to fill. Each call's record is appended to the
caller's :class:`~evalkit.calls._log.CallLog` (a run's raw results) the moment it arrives (a
crash or a stop loses nothing already paid for), and put back in dataset order at the end. A
call still running ``CALL_TIMEOUT`` seconds after it got its place is recorded as a timeout
and abandoned to its executor.

One stop rule for every executor: on the first :meth:`Stop.request` no new call starts and
those in flight are kept; on the second, or when the executor is :class:`Lost`, they are
abandoned (``--resume`` makes them). Either way :class:`RunInterrupted` ends the run.

The window runs on a thread of its own; an interrupt in the waiting caller's thread (Ctrl-C in
a notebook) becomes a stop request, never a tear between two halves of the window's books.
"""
from __future__ import annotations

import itertools
import logging
import math
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from evalkit._errors import RunInterrupted
from evalkit._secrets import Redactor
from evalkit.calls._books import (
    EntryCompletion,
    EntryOutputs,
    FollowUps,
    Sampling,
    Task,
    entry_outputs,
    reused_calls,
    run_follow_up,
)
from evalkit.calls._call import Call, Component, SpanCapture, no_capture, timed_out
from evalkit.calls._executors import (
    INTERRUPT,
    CallExecutor,
    Crashed,
    Executor,
    InProcess,
    Lost,
    ThreadWorkers,
)
from evalkit.calls._log import CallLog
from evalkit.calls._selection import RunPlan
from evalkit.calls._stop import Stop
from evalkit.records import CallRecord

logger = logging.getLogger("evalkit")

_POLL_SECONDS = 0.2  # how often the clock is read while nothing finishes (deadlines)
_START_GRACE_S = 5.0  # how long an interrupted start waits to learn whether its thread began
# Put in the window's queue by a stop request to wake it: no task has this key (follow-up
# jobs count up from (-1, 0)).
_WAKE: tuple[Task, Any] = ((-1, -1), None)


class CallWindow:
    """Makes a plan's calls through an executor (see the module docstring)."""

    def __init__(self, calls: CallExecutor, workers: ThreadWorkers, *, concurrency: int = 1,
                 call_timeout: float = math.inf, stop: Stop | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 capture: SpanCapture = no_capture) -> None:
        self._calls = calls
        self._workers = workers
        """Where follow-up jobs run (with a plain component's calls)."""
        self._capture = capture
        """What follow-up jobs run under: the spans they make go nowhere else."""
        self.concurrency = concurrency
        self.call_timeout = call_timeout
        self.stop = stop or Stop()
        self.clock = clock
        """What calls' deadlines are measured on (seconds)."""

    @classmethod
    def of(cls, component: Component, adapters: Mapping[str, Callable[[Any], Any]],
           redactor: Redactor, executor: Executor | None = None,
           capture: SpanCapture = no_capture, **settings: Any) -> CallWindow:
        """The window for a component, its calls where ``executor`` puts them (by default
        :class:`InProcess`), the spans each makes recorded by ``capture``; ``settings``:
        ``concurrency``, ``call_timeout``, ``stop``, ``clock``."""
        workers = ThreadWorkers()
        calls = (executor or InProcess()).calls(component, adapters, redactor, workers,
                                                capture)
        return cls(calls, workers, capture=capture, **settings)

    # Each argument is one of a pass's separate inputs (no two travel together elsewhere).
    def run(self, plan: RunPlan, raw: CallLog, *, seed: int | None = None,  # noqa: PLR0913
            replicate: int | None = None,
            recorded: Mapping[tuple[str, int], CallRecord] | None = None,
            on_call: Callable[[CallRecord], None] | None = None,
            follow_ups: FollowUps | None = None,
            sampling: Sampling | None = None) -> list[EntryOutputs]:
        """Every call of the plan, each entry's calls in order, in dataset order. Calls in
        ``recorded`` (entry id, repeat) were made by an earlier attempt at this run and are
        reused, not made again; ``on_call`` hears of each new one as it is kept. A
        ``sampling`` (a sequential run) orders the entries and says which are called: those
        it does not take are left out. A window makes one pass: its executors are closed at
        the end."""
        window_pass = _WindowPass(self, plan, raw, recorded or {}, follow_ups, on_call,
                       partial(Call, seed=seed, replicate=replicate), sampling)
        failure: list[BaseException] = []
        done = threading.Event()
        driver = threading.Thread(target=window_pass.drive, args=(failure, done),
                                  name="evalkit-window", daemon=True)
        try:
            driver.start()
        except KeyboardInterrupt:  # mid-start: a stop request, as while waiting below
            self.stop.request()
            if not window_pass.began.wait(_START_GRACE_S):  # the interrupt came before the launch
                raise RunInterrupted("interrupted as the calls began; none was made") from None
        # Waited for on an event, with a timeout, not with Thread.join: an interrupt inside
        # join can mark a thread that still runs as ended (CPython 3.11, bpo-45274).
        while True:
            try:
                if done.wait(_POLL_SECONDS):
                    break
            except KeyboardInterrupt:  # the caller's interrupt: a stop request, never a tear
                self.stop.request()
        if failure:
            raise failure[0]
        self.stop.raise_if_requested()  # whenever it came: before the end, or as it ended
        return entry_outputs(plan, window_pass.records)


class _WindowPass:
    """One pass of a window over a plan: what is in flight, what is due, what is kept."""

    def __init__(self, window: CallWindow, plan: RunPlan, raw: CallLog,  # noqa: PLR0913
                 recorded: Mapping[tuple[str, int], CallRecord], follow_ups: FollowUps | None,
                 on_call: Callable[[CallRecord], None] | None,
                 call_of: Callable[..., Call], sampling: Sampling | None = None) -> None:
        self._window = window
        self._plan = plan
        self._raw = raw
        self._on_call = on_call
        self._call_of = call_of
        self.records, pending = reused_calls(plan, recorded)
        self._sampling = sampling
        self._taken: set[int] = set()
        """Entries whose calls have begun (a sequential run makes all of a taken entry's)."""
        if sampling is not None:
            position = {index: p for p, index in enumerate(sampling.order())}
            pending.sort(key=lambda task: (position[task[0]], task[1]))
        self._tasks = iter(pending)
        self._completion = EntryCompletion(plan, pending, follow_ups, sampling, self.records)
        self._jobs: deque[Callable[[], None]] = deque()
        self._job_numbers = itertools.count()
        self._finished: queue.SimpleQueue[tuple[Task, Any]] = queue.SimpleQueue()
        self._in_flight: dict[Task, Call | None] = {}
        """Each call in flight, or ``None`` for a follow-up job (which has no deadline)."""
        self._deadlines: deque[tuple[float, Task]] = deque()
        """Calls by start time (one timeout for all: the first in flight is the next due)."""
        self.began = threading.Event()
        """Set by the window's thread first thing: it runs, and will end."""

    def drive(self, failure: list[BaseException], done: threading.Event) -> None:
        """The window's work, on its own thread: what it raises goes to ``failure``."""
        self.began.set()
        window = self._window
        stop = window.stop
        try:
            try:
                with stop.waking(lambda: self._finished.put(_WAKE)):
                    self._drive(stop)
            finally:
                window._calls.close()
                window._workers.close()
                self._raw.put_in_order({p.entry.id: i for i, p in enumerate(self._plan.items)})
        except BaseException as err:  # noqa: BLE001 - handed to the waiting caller
            failure.append(err)
        finally:
            done.set()

    def _drive(self, stop: Stop) -> None:
        warned = False
        self._fill(stop)
        while self._in_flight:
            self._settle_next()
            if stop.abandons:
                logger.warning("abandoned %s in flight; a resume makes them again",
                               self._in_flight_text())
                return
            if stop.requested:
                if not warned and self._in_flight:
                    logger.warning("stopping: waiting for %s in flight to finish and be kept "
                                   "(stop again, e.g. Ctrl-C, to abandon them)",
                                   self._in_flight_text())
                    warned = True
                continue
            self._fill(stop)

    def _fill(self, stop: Stop) -> None:
        """Hand out calls, else follow-up jobs, while places are free."""
        while len(self._in_flight) < self._window.concurrency and not stop.requested:
            task = self._next_task()
            if task is not None:
                self._start_call(task)
            elif self._jobs:
                job = (-1, next(self._job_numbers))
                self._in_flight[job] = None
                follow_up = partial(run_follow_up, self._jobs.popleft(), self._window._capture)
                self._window._workers.run(job, follow_up, self._deliver)
            else:
                return

    def _next_task(self) -> Task | None:
        """The next call to make: a sequential run's entries it no longer takes are passed."""
        for task in self._tasks:
            index = task[0]
            if self._sampling is None or index in self._taken or self._sampling.take(index):
                self._taken.add(index)
                return task
        return None

    def _start_call(self, task: Task) -> None:
        index, repeat = task
        planned = self._plan.items[index]
        call = self._call_of(mocks={}, repeat=repeat, repeats=planned.calls)
        self._in_flight[task] = call
        self._deadlines.append((self._window.clock() + self._window.call_timeout, task))
        self._window._calls.start(task, planned.entry, call, self._deliver)

    def _deliver(self, task: Task, result: Any) -> None:
        self._finished.put((task, result))

    def _settle_next(self) -> None:
        """Keep the next result to arrive, then record every call past its deadline."""
        wait = min(_POLL_SECONDS, self._next_deadline() - self._window.clock())
        try:
            task, result = self._finished.get(timeout=max(wait, 0.0))
        except queue.Empty:
            pass
        else:
            if task in self._in_flight:  # else a wake-up, or an abandoned call that returned
                call = self._in_flight.pop(task)
                if result is INTERRUPT:  # the component raised KeyboardInterrupt: a stop
                    self._window.stop.request()
                elif isinstance(result, Crashed):
                    raise result.error
                elif isinstance(result, Lost):  # nothing else in flight will come back
                    logger.warning("%s: stopping the run", result.reason)
                    self._window.stop.abandon()
                elif call is not None:
                    self._keep(task, result)
        now = self._window.clock()
        while self._next_deadline() <= now:
            _, late = self._deadlines.popleft()
            call = self._in_flight.pop(late)
            assert call is not None  # only calls have deadlines
            self._window._calls.abandon(late)
            self._keep(late, timed_out(self._plan.items[late[0]].entry, call,
                                       self._window.call_timeout))

    def _keep(self, task: Task, record: CallRecord) -> None:
        self.records[task] = record
        self._raw.append(record)
        if self._on_call is not None:
            self._on_call(record)
        self._jobs.extend(self._completion.call_in(task[0], self.records))

    def _in_flight_text(self) -> str:
        jobs = sum(call is None for call in self._in_flight.values())
        calls = len(self._in_flight) - jobs
        return f"{calls} call(s)" + (f" and {jobs} early judging job(s)" if jobs else "")

    def _next_deadline(self) -> float:
        while self._deadlines and self._deadlines[0][1] not in self._in_flight:
            self._deadlines.popleft()
        return self._deadlines[0][0] if self._deadlines else math.inf
