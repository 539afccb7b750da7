"""Where a run's component calls run: the executors behind the one call window.

A :class:`CallExecutor` starts a call without blocking and later delivers its record (or
:data:`INTERRUPT`, when the component raised ``KeyboardInterrupt``) through the callback it
was given. The window decides what runs when; an executor only
runs it. Two ship here: :class:`ThreadCalls` (a plain ``invoke_component`` on worker threads)
and :class:`AsyncCalls` (an ``async def`` one on an event loop of its own); a process pool or
a cluster is one more executor, not one more loop.
"""

from __future__ import annotations

import asyncio
import inspect
import queue
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from evalkit._secrets import Redactor
from evalkit.calls._books import Task
from evalkit.calls._call import (
    Call,
    Component,
    SpanCapture,
    call_record,
    invoke,
    no_capture,
    with_fresh_mocks,
)
from evalkit.dataset import Entry

INTERRUPT = object()
"""Delivered instead of a record when a component raised ``KeyboardInterrupt``: a stop."""


@dataclass(frozen=True)
class Crashed:
    """Delivered when evalkit's own code around a call or job raised (a component's failure
    is that call's record): the window fails the run with it instead of waiting forever."""

    error: BaseException


@dataclass(frozen=True)
class Lost:
    """Delivered when what runs the calls went away (a Ray cluster): nothing in flight will
    come back, so the window stops the run at once, as on a second stop request."""

    reason: str


_CLOSING_S = 2.0
"""How long closing waits for cancelled calls to end."""
Deliver = Callable[[Task, Any], None]
"""Takes a finished task and its result (a record, :data:`INTERRUPT`, a :class:`Crashed`, or
``None`` for a follow-up job); reentrant."""


class CallExecutor(Protocol):
    """Runs component calls for a call window."""

    def start(self, task: Task, entry: Entry, call: Call, deliver: Deliver) -> None:
        """Start one call (never blocking); its result goes to ``deliver``."""

    def abandon(self, task: Task) -> None:
        """Give up on a call past its timeout (its result, if any, is ignored)."""

    def close(self) -> None:
        """No more calls: release what is idle (a hung call stays abandoned)."""


class Executor(Protocol):
    """Where a run's calls run: it gives each call window (one per replicate) its
    :class:`CallExecutor`. :class:`InProcess` by default; a
    :class:`~evalkit.calls.RayPool` takes them to a cluster."""

    where: str
    """Where the calls run, in words (the run's ``executor`` tag)."""

    def calls(self, component: Component, adapters: Mapping[str, Callable[[Any], Any]],
              redactor: Redactor, workers: ThreadWorkers,
              capture: SpanCapture = no_capture) -> CallExecutor:
        """The executor of one window; ``workers`` are the window's threads; ``capture``
        records the spans each call makes."""


class InProcess:
    """Calls in this process: on threads, or an event loop for an ``async def`` component.
    ``setup`` (the script's ``setup_component``) runs once, before the first window's calls,
    as it runs once per worker on Ray."""

    where = "in-process"

    def __init__(self, setup: Callable[[], object] | None = None) -> None:
        self._setup = setup

    def calls(self, component: Component, adapters: Mapping[str, Callable[[Any], Any]],
              redactor: Redactor, workers: ThreadWorkers,
              capture: SpanCapture = no_capture) -> CallExecutor:
        setup, self._setup = self._setup, None
        if setup is not None:
            setup()
        return calls_for(component, adapters, redactor, workers, capture)


def is_async(component: Component) -> bool:
    """Whether calling ``component`` returns a coroutine (an ``async def``, or an object with
    an ``async def __call__``)."""
    return inspect.iscoroutinefunction(component) or inspect.iscoroutinefunction(
        type(component).__call__)


class ThreadWorkers:
    """Daemon threads that run jobs, one more whenever every one is busy: a call abandoned
    past its timeout keeps its thread, and a thread that never returns cannot keep the
    process from exiting (``concurrent.futures`` joins its threads at exit)."""

    def __init__(self, name: str = "evalkit-call") -> None:
        self._name = name
        self._work: queue.SimpleQueue[tuple[Task, Callable[[], Any], Deliver] | None] = \
            queue.SimpleQueue()
        self._threads = 0
        self._busy = 0
        self._lock = threading.Lock()

    def run(self, task: Task, job: Callable[[], Any], deliver: Deliver) -> None:
        with self._lock:
            self._busy += 1
            if self._busy > self._threads:
                self._threads += 1
                threading.Thread(target=self._serve, name=self._name, daemon=True).start()
        self._work.put((task, job, deliver))

    def close(self) -> None:
        with self._lock:
            idle = self._threads
        for _ in range(idle):  # idle workers end; a hung one never reads its stop
            self._work.put(None)

    def _serve(self) -> None:
        while (item := self._work.get()) is not None:
            task, job, deliver = item
            try:
                result = job()
            except KeyboardInterrupt:  # raised by the component itself: a stop
                result = INTERRUPT
            except BaseException as err:  # noqa: BLE001 - delivered, never lost with the thread
                result = Crashed(err)
            with self._lock:
                self._busy -= 1
            deliver(task, result)
        with self._lock:
            self._threads -= 1


class ThreadCalls:
    """A plain component, called on :class:`ThreadWorkers` (shared with follow-up jobs)."""

    def __init__(self, component: Component, adapters: Mapping[str, Callable[[Any], Any]],
                 redactor: Redactor, workers: ThreadWorkers,
                 capture: SpanCapture = no_capture) -> None:
        self._call = partial(invoke, component, adapters=adapters, redactor=redactor,
                             capture=capture)
        self._workers = workers

    def start(self, task: Task, entry: Entry, call: Call, deliver: Deliver) -> None:
        self._workers.run(task, partial(self._call, entry=entry, call=call), deliver)

    def abandon(self, task: Task) -> None:
        pass  # its thread stays busy; the workers grow when the next job needs one

    def close(self) -> None:
        pass  # the workers are the window's: it closes them


class AsyncCalls:
    """An ``async def`` component, awaited on one event loop in a thread of its own (the
    caller's thread may run a loop already: a notebook, an async application)."""

    def __init__(self, component: Component, adapters: Mapping[str, Callable[[Any], Any]],
                 redactor: Redactor, capture: SpanCapture = no_capture) -> None:
        self._component = component
        self._adapters = adapters
        self._redactor = redactor
        self._capture = capture
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._futures: dict[Task, Future[Any]] = {}

    def start(self, task: Task, entry: Entry, call: Call, deliver: Deliver) -> None:
        future = asyncio.run_coroutine_threadsafe(self._made(entry, call), self._running())
        self._futures[task] = future
        future.add_done_callback(partial(self._done, task, deliver))

    def abandon(self, task: Task) -> None:
        future = self._futures.pop(task, None)
        if future is not None:
            future.cancel()

    def close(self) -> None:
        """Cancel what is left (abandoned calls) and end the loop; a call that ignores its
        cancellation keeps the loop's thread, abandoned like a hung thread."""
        if self._loop is None or self._thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(_cancel_others(), self._loop).result(_CLOSING_S)
        except Exception:  # noqa: BLE001 - a loop that cannot even cancel is left behind
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=_CLOSING_S)
        if not self._thread.is_alive():
            self._loop.close()

    def _done(self, task: Task, deliver: Deliver, future: Future[Any]) -> None:
        self._futures.pop(task, None)
        if future.cancelled():
            return
        try:
            result = future.result()
        except BaseException as err:  # noqa: BLE001 - delivered, never lost in the loop
            result = Crashed(err)
        deliver(task, result)

    async def _made(self, entry: Entry, call: Call) -> Any:
        """One call, in a task of its own: the capture is entered in the task, so the spans
        the component makes across its awaits are this call's."""
        started = time.perf_counter()
        failure: BaseException | None = None
        output: Any = None
        with self._capture() as spans:
            try:
                output = await self._component(entry,
                                               with_fresh_mocks(call, entry, self._adapters))
            except asyncio.CancelledError:
                raise
            except KeyboardInterrupt:
                return INTERRUPT
            except BaseException as err:  # noqa: BLE001 - a component failure is that call's result
                failure = err
        return call_record(entry, call, started, self._redactor, spans, output, failure)

    def _running(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name="evalkit-loop",
                                            daemon=True)
            self._thread.start()
        return self._loop


async def _cancel_others() -> None:
    others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in others:
        task.cancel()
    if others:
        await asyncio.wait(others, timeout=_CLOSING_S)


def calls_for(component: Component, adapters: Mapping[str, Callable[[Any], Any]],
              redactor: Redactor, workers: ThreadWorkers,
              capture: SpanCapture = no_capture) -> CallExecutor:
    """The executor a component needs: an event loop for an ``async def``, else threads."""
    if is_async(component):
        return AsyncCalls(component, adapters, redactor, capture)
    return ThreadCalls(component, adapters, redactor, workers, capture)
