"""The eval loop for an ``async def invoke_component``: one event loop, no thread per call.

The guarantees are those of :func:`evalkit.run._loop.run_calls`: every planned call is made
exactly once (calls recorded by an interrupted attempt are reused), at most
``MAX_CONCURRENCY`` are in flight, each is appended to the raw-results file the moment it
finishes, and an interrupt (Ctrl-C or SIGTERM) starts nothing new, awaits the calls in flight
(a second Ctrl-C abandons them) and propagates as :class:`KeyboardInterrupt`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import math
import signal
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from evalkit._secrets import Redactor
from evalkit.run._call import (
    Call,
    CallRecord,
    Component,
    failed_call,
    settled_call,
    timed_out,
    with_fresh_mocks,
)
from evalkit.run._loop import (
    EntryCompletion,
    EntryOutputs,
    FollowUps,
    entry_outputs,
    reused_calls,
    run_calls,
    run_follow_up,
)
from evalkit.run._raw import RawResultsLog
from evalkit.run._selection import RunPlan

logger = logging.getLogger("evalkit")


def is_async(component: Component) -> bool:
    """Whether calling ``component`` returns a coroutine (an ``async def``, or an object with
    an ``async def __call__``)."""
    return inspect.iscoroutinefunction(component) or inspect.iscoroutinefunction(
        type(component).__call__)


def run_component_calls(plan: RunPlan, component: Component,
                        adapters: Mapping[str, Callable[[Any], Any]], raw_log: RawResultsLog,
                        redactor: Redactor, *, seed: int | None = None,
                        replicate: int | None = None, concurrency: int = 1,
                        call_timeout: float = math.inf,
                        on_call: Callable[[CallRecord], None] | None = None,
                        recorded: Mapping[tuple[str, int], CallRecord] | None = None,
                        follow_ups: FollowUps | None = None) -> list[EntryOutputs]:
    """Every call of the plan, on threads for a plain component or on one event loop for an
    ``async def`` one; see :func:`evalkit.run._loop.run_calls`. Follow-up jobs (plain
    functions: the judge) run on worker threads, inside the same bound."""
    if not is_async(component):
        return run_calls(plan, component, adapters, raw_log, redactor, seed=seed,
                         replicate=replicate, concurrency=concurrency,
                         call_timeout=call_timeout, on_call=on_call, recorded=recorded,
                         follow_ups=follow_ups)
    records, pending = reused_calls(plan, recorded or {})
    entry_done = EntryCompletion(plan, pending, follow_ups)
    jobs: deque[Callable[[], None]] = deque()

    async def call(index: int, repeat: int) -> CallRecord:
        planned = plan.items[index]
        entry = planned.entry
        base = Call(mocks={}, repeat=repeat, repeats=planned.calls, seed=seed,
                    replicate=replicate)
        started = time.perf_counter()
        try:
            async with asyncio.timeout(None if math.isinf(call_timeout) else call_timeout) \
                    as deadline:
                output = await component(entry, with_fresh_mocks(base, entry, adapters))
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except BaseException as err:  # noqa: BLE001 - any component failure is that call's result
            record = (timed_out(entry, base, call_timeout) if deadline.expired()
                      else failed_call(entry, base, err, started, redactor))
        else:
            record = settled_call(entry, base, output, started, redactor)
        raw_log.append(record)
        return record

    def finished(key: tuple[int, int], record: CallRecord) -> None:
        records[key] = record
        if on_call is not None:
            on_call(record)
        jobs.extend(entry_done.call_in(key[0], records))

    try:
        _run_on_a_loop(_window(iter(pending), call, finished, jobs, concurrency))
    except asyncio.CancelledError:  # SIGTERM cancelled the loop's main task
        raise KeyboardInterrupt from None
    finally:
        raw_log.put_in_order({p.entry.id: i for i, p in enumerate(plan.items)})
    return entry_outputs(plan, records)


async def _window(pending: Iterator[tuple[int, int]],
                  call: Callable[[int, int], Awaitable[CallRecord]],
                  finished: Callable[[tuple[int, int], CallRecord], None],
                  jobs: deque[Callable[[], None]], concurrency: int) -> None:
    """At most ``concurrency`` calls and jobs in flight, a new one started as each finishes
    (calls first, as in :func:`evalkit.run._loop.run_calls`)."""
    in_flight: dict[asyncio.Future[Any], tuple[int, int] | None] = {}
    # Each finished future queues itself: one wake-up per completion, where asyncio.wait
    # would hook and unhook a callback on every future in flight each time.
    finished_queue: asyncio.Queue[asyncio.Future[Any]] = asyncio.Queue()
    loop = asyncio.get_running_loop()
    job_threads = ThreadPoolExecutor(concurrency, thread_name_prefix="evalkit-follow-up")

    def start_next() -> None:
        future: asyncio.Future[Any]
        if (key := next(pending, None)) is not None:
            future = asyncio.ensure_future(call(*key))
        elif jobs:
            future = loop.run_in_executor(job_threads, run_follow_up, jobs.popleft())
        else:
            return
        in_flight[future] = key
        future.add_done_callback(finished_queue.put_nowait)

    with _stops_cancel(asyncio.current_task()), job_threads:
        try:
            for _ in range(concurrency):
                start_next()
            while in_flight:
                future = await finished_queue.get()
                key = in_flight.pop(future)
                if key is not None:
                    finished(key, future.result())
                start_next()
        except BaseException:
            if in_flight:
                logger.warning("stopping: waiting for %d call(s) in flight to finish and be "
                               "kept (Ctrl-C again to abandon them)", len(in_flight))
                await asyncio.wait(in_flight)
            raise


@contextlib.contextmanager
def _stops_cancel(task: asyncio.Task[Any] | None) -> Iterator[None]:
    """Ctrl-C and SIGTERM cancel the main task, so the calls in flight are awaited (and a
    second one abandons them); the handlers in place before (the run's own stop handling) are
    put back afterwards."""
    if task is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    stops = (signal.SIGINT, signal.SIGTERM)
    previous = {stop: signal.getsignal(stop) for stop in stops}
    for stop in stops:
        loop.add_signal_handler(stop, task.cancel)
    try:
        yield
    finally:
        for stop in stops:
            loop.remove_signal_handler(stop)
            signal.signal(stop, previous[stop])


def _run_on_a_loop(work: Awaitable[None]) -> None:
    """``asyncio.run``, or, when this thread already runs a loop (a notebook, an async
    application), the same on one helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(_as_coroutine(work))
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalkit-loop") as helper:
        helper.submit(asyncio.run, _as_coroutine(work)).result()


async def _as_coroutine(work: Awaitable[None]) -> None:
    await work
