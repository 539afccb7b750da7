"""What a Ray worker runs: the eval script loaded once, its setup hook run once, and each call
made exactly as in-process.

One :class:`CallWorker` is one Ray actor, one worker slot of the pool (see
:mod:`evalkit.calls.ray._bridge`). It imports the user's ``eval.py`` from the working directory
Ray shipped, as a module (its ``if __name__ == "__main__"`` block does not run), runs
``setup_component()`` when the script defines one, and makes calls through the same executor
an in-process run uses (threads, or an event loop for an ``async def`` component): mocks built
fresh per call, the call's seed and repeat, its output checked and redacted. Only the record
travels back; the driver keeps the journal, MLflow and scoring.
"""

from __future__ import annotations

import itertools
import os
import pickle
import runpy
import sys
import threading
from collections.abc import Mapping
from typing import Any

from evalkit._errors import WorkerSetupError
from evalkit._secrets import Redactor
from evalkit.calls._books import Task
from evalkit.calls._call import Call, SpanCapture, invoke
from evalkit.calls._executors import INTERRUPT, AsyncCalls, Crashed, is_async
from evalkit.dataset import Entry
from evalkit.records import CallRecord

SETUP_HOOK = "setup_component"
"""The optional function of ``eval.py`` run once per worker before its first call (load a
model there, into a module global the component reads); in-process, once per run."""
INTERRUPTED = "evalkit:interrupted"
"""Sent instead of a record when the component raised ``KeyboardInterrupt``: a stop."""


def setup_failure(text: str) -> str:
    """What a worker's failure to start says (Ray's text of it): our own setup error's
    message, not Ray's traceback around it."""
    ours = f"{WorkerSetupError.__name__}: "
    return text.rsplit(ours, 1)[1].strip() if ours in text else text.splitlines()[0]


class CallWorker:
    """One worker slot: the component loaded from ``script`` (a path in the shipped working
    directory), called by the name ``component_name``."""

    def __init__(self, script: str, component_name: str) -> None:
        folder = os.path.dirname(os.path.abspath(script))
        if folder not in sys.path:  # the script's own modules import as on the driver
            sys.path.insert(0, folder)
        try:
            namespace = runpy.run_path(script, run_name="__evalkit_worker__")
        except BaseException as err:  # noqa: BLE001 - reported to the driver, run never starts
            raise WorkerSetupError(f"loading {script} on a Ray worker raised "
                                   f"{type(err).__name__}: {err}") from None
        component = namespace.get(component_name)
        if not callable(component):
            raise WorkerSetupError(f"{script} loaded on a Ray worker has no function "
                                   f"{component_name}(): the component must be a module-level "
                                   "function of the eval script")
        setup = namespace.get(SETUP_HOOK)
        if callable(setup):
            try:
                setup()
            except BaseException as err:  # noqa: BLE001 - reported to the driver
                raise WorkerSetupError(f"{SETUP_HOOK}() of {script} raised on a Ray worker: "
                                       f"{type(err).__name__}: {err}") from None
        adapters: Mapping[str, Any] = namespace.get("MOCK_ADAPTERS") or {}
        self._redactor = Redactor.from_environment()
        # A plain component runs on the thread Ray makes the call on (one per call the slot
        # makes at once, see RaySettings.calls_per_slot); an async one on an event loop, as
        # in-process, made at the first call (which brings the run's span capture).
        self._component = component
        self._is_async = is_async(component)
        self._adapters = adapters
        self._loop: AsyncCalls | None = None
        self._numbers = itertools.count()

    def ready(self) -> int:
        """Answered once the script is loaded and set up: the worker's process id."""
        return os.getpid()

    def call(self, payload: bytes) -> bytes:
        """One call, ``(entry, repeat, repeats, seed, replicate, capture)`` pickled by the
        run (Ray passes bytes through untouched, the cheapest way); its record pickled, or
        :data:`INTERRUPTED`."""
        entry, repeat, repeats, seed, replicate, capture = pickle.loads(payload)
        call = Call(mocks={}, repeat=repeat, repeats=repeats, seed=seed, replicate=replicate)
        result: CallRecord | str
        try:
            result = (self._awaited(entry, call, capture) if self._is_async else
                      invoke(self._component, entry, call, self._adapters, self._redactor,
                             capture))
        except KeyboardInterrupt:
            result = INTERRUPTED
        return pickle.dumps(result)

    def _awaited(self, entry: Entry, call: Call, capture: SpanCapture) -> CallRecord:
        if self._loop is None:
            self._loop = AsyncCalls(self._component, self._adapters, self._redactor, capture)
        finished = threading.Event()
        results: list[Any] = []

        def deliver(task: Task, result: Any) -> None:
            results.append(result)
            finished.set()

        self._loop.start((next(self._numbers), call.repeat), entry, call, deliver)
        finished.wait()
        (result,) = results
        if result is INTERRUPT:
            raise KeyboardInterrupt
        if isinstance(result, Crashed):
            raise result.error
        record: CallRecord = result
        return record
