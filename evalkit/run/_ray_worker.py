"""What a Ray worker runs: the eval script loaded once, its setup hook run once, and each call
made exactly as in-process.

One :class:`CallWorker` is one Ray actor, one worker slot of the pool (see
:mod:`evalkit.run._ray_bridge`). It imports the user's ``eval.py`` from the working directory
Ray shipped, as a module (its ``if __name__ == "__main__"`` block does not run), runs
``setup_component()`` when the script defines one, and makes calls through the same executor
an in-process run uses (threads, or an event loop for an ``async def`` component): mocks built
fresh per call, the call's seed and repeat, its output checked and redacted. Only the record
travels back; the driver keeps the journal, MLflow and scoring.
"""

from __future__ import annotations

import itertools
import os
import runpy
import sys
import threading
from collections.abc import Mapping
from typing import Any

from evalkit._secrets import Redactor
from evalkit.dataset import Entry
from evalkit.records import CallRecord
from evalkit.run._books import Task
from evalkit.run._call import Call
from evalkit.run._executors import INTERRUPT, Crashed, ThreadWorkers, calls_for

SETUP_HOOK = "setup_component"
"""The optional function of ``eval.py`` run once per worker before its first call (load a
model there, into a module global the component reads); in-process, once per run."""
INTERRUPTED = "evalkit:interrupted"
"""Returned instead of a record when the component raised ``KeyboardInterrupt``: a stop."""


class WorkerSetupError(Exception):
    """The eval script could not be loaded on a worker, or its setup hook raised."""


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
        self._calls = calls_for(component, adapters, Redactor.from_environment(),
                                ThreadWorkers("evalkit-ray-call"))
        self._numbers = itertools.count()

    def ready(self) -> int:
        """Answered once the script is loaded and set up: the worker's process id."""
        return os.getpid()

    def call(self, entry: Entry, repeat: int, repeats: int, seed: int | None,
             replicate: int | None) -> CallRecord | str:
        """One call; its record, or :data:`INTERRUPTED`."""
        finished = threading.Event()
        results: list[Any] = []

        def deliver(task: Task, result: Any) -> None:
            results.append(result)
            finished.set()

        call = Call(mocks={}, repeat=repeat, repeats=repeats, seed=seed, replicate=replicate)
        self._calls.start((next(self._numbers), repeat), entry, call, deliver)
        finished.wait()
        (result,) = results
        if result is INTERRUPT:
            return INTERRUPTED
        if isinstance(result, Crashed):
            raise result.error
        record: CallRecord = result
        return record
