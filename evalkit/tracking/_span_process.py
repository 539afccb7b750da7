"""Where a run's spans and assessments are written: a process of their own for a large run on a
local SQL store.

On a local store (``sqlite:///mlflow.db``, the default) MLflow's SQL store does all its work
(ORM objects, SQL, commits) in the process that writes: about 2.5 ms of CPU per call, taken
under the GIL from the very threads that wait on the component's calls. A worker process
(``python -m evalkit.tracking._span_worker``, fed pickled batches on a pipe) does it on
another core instead. Starting one costs about 2 s of CPU (it imports MLflow), which pays
only from a few hundred calls on (:data:`WORKER_MIN_CALLS`); smaller runs, and a tracking
server (whose own process does the SQL), write in this process, on the run's trace-writer
thread (:mod:`evalkit.tracking._run_traces`).

A plain interpreter, not ``multiprocessing``: its workers import the user's ``eval.py`` as
their main module, which would run an evaluation without a ``__main__`` guard. The worker runs
in a session of its own, so a Ctrl-C at the terminal reaches the run (whose own stop handling
decides) and not the worker, which ends when its pipe closes. A worker that dies loses nothing
silently: the write raises and the run's count check reports every trace the store lacks.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import threading
import weakref
from collections.abc import Sequence
from typing import Any

from evalkit._errors import TrackingError
from evalkit.tracking._trace_writer import TraceWriter
from evalkit.tracking._traces import EntryTrace, TraceContext

WORKER_MIN_CALLS = 400
"""Traced calls from which a run on a local SQL store writes its spans in a worker process."""
_SQL_SCHEMES = ("sqlite:", "postgresql", "mysql", "mssql")


class SpanWriting:
    """Writes a run's traces with :class:`TraceWriter`, in a worker process once
    :meth:`start` has started one, on the calling thread otherwise."""

    def __init__(self, uri: str) -> None:
        self._uri = uri
        self._worker: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def start(self, calls: int) -> None:
        """Start the worker for a run of ``calls`` traced calls, if it pays (once)."""
        if self._worker is not None or calls < WORKER_MIN_CALLS \
                or not self._uri.startswith(_SQL_SCHEMES):
            return
        self._worker = subprocess.Popen(
            [sys.executable, "-m", "evalkit.tracking._span_worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=os.getcwd(),
            start_new_session=True)
        weakref.finalize(self, _stop, self._worker)

    @property
    def worker_pid(self) -> int | None:
        """The worker process, once started."""
        return None if self._worker is None else self._worker.pid

    def write_calls(self, context: TraceContext, traces: Sequence[EntryTrace],
                    check_held: bool) -> None:
        self._run("calls", context, traces, check_held)

    def write_verdicts(self, context: TraceContext, traces: Sequence[EntryTrace]) -> None:
        self._run("verdicts", context, traces)

    def _run(self, phase: str, *args: Any) -> None:
        worker = self._worker
        if worker is None:
            write_spans(phase, self._uri, *args)
            return
        assert worker.stdin is not None and worker.stdout is not None
        with self._lock:
            try:
                pickle.dump((phase, self._uri, args), worker.stdin)
                worker.stdin.flush()
                status, message = pickle.load(worker.stdout)
            except (OSError, EOFError, pickle.UnpicklingError) as err:
                raise TrackingError(f"the span writer process stopped (exit status "
                                    f"{worker.poll()}): {err}") from None
        if status != "ok":
            raise TrackingError(f"writing spans failed: {message}")


def _stop(worker: subprocess.Popen[bytes]) -> None:
    """End the worker once its writer is gone: its pipe closes, it finishes and exits."""
    if worker.stdin is not None:
        with contextlib.suppress(OSError):  # a worker that died leaves a broken pipe
            worker.stdin.close()
    try:
        worker.wait(timeout=60)
    except subprocess.TimeoutExpired:
        worker.kill()
    if worker.stdout is not None:
        worker.stdout.close()


def write_spans(phase: str, uri: str, context: TraceContext, traces: Sequence[EntryTrace],
                *options: Any) -> None:
    """Write one phase of a run's traces (``calls`` or ``verdicts``)."""
    import mlflow

    writer = TraceWriter(mlflow.MlflowClient(uri), context)  # MLflow caches the store per URI
    if phase == "calls":
        writer.write_calls(traces, *options)
    else:
        writer.write_verdicts(traces)
