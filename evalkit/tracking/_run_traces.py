"""A run's traces: one per entry, streamed while the calls run, verdicts added once scored:
:meth:`RunTraces.begin` before the calls, :meth:`~RunTraces.call` as each ends,
:meth:`~RunTraces.calls_done` when they stop, :meth:`~RunTraces.finish` once scored.

:class:`RunTraces` is what a run with ``TRACE_CALLS`` gets; :class:`NoTraces` (the same
methods, doing nothing) is what a run without it gets, so the evaluation never asks which.

Streaming: each call is handed over as it finishes; once its entry's calls are all in, the
entry's trace is queued, and every :data:`STREAM_BATCH` queued traces are written on a
background thread, in the time the calls spend waiting. While the writer keeps up the
requests stay small; when it falls behind they grow (each request has a fixed cost). A
resumed run streams nothing: its traces are written at the end, skipping those the store
holds already.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from evalkit.records import CallRecord, MetricPoint, ScoredRun, names
from evalkit.tracking._backend import Backend
from evalkit.tracking._traces import (
    Assessment,
    EntryTrace,
    TraceContext,
    build_traces,
    trace_id_for,
)

if TYPE_CHECKING:
    from evalkit.tracking._run import TrackedRun

logger = logging.getLogger("evalkit")

STREAM_BATCH = 10
"""Complete entries per background write while the calls run."""


class NoTraces:
    """The traces of a run that traces nothing."""

    def begin(self, entries: Mapping[str, tuple[Any, Any]],
              calls_per_entry: Mapping[str, int]) -> None:
        pass

    def call(self, record: CallRecord) -> None:
        pass

    def calls_done(self, calls: Sequence[CallRecord]) -> None:
        pass

    def finish(self, scored: ScoredRun) -> int:
        return 0

    def add_assessments(self, by_entry: Mapping[str, Sequence[Assessment]]) -> None:
        pass

    def write_series(self, entries: Mapping[str, tuple[Any, Any]],
                     by_entry: Mapping[str, Sequence[Assessment]]) -> None:
        pass

    def close(self, wait: bool) -> None:
        pass


class RunTraces:
    """The traces of one run (see the module docstring)."""

    def __init__(self, run: TrackedRun, backend: Backend, *, resumed: bool) -> None:
        self._run = run
        self._backend = backend
        self._store = backend.trace_store()
        self._stream = not resumed
        self._resumed = resumed
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="evalkit-traces")
        self._last: Future[None] | None = None
        """The last write queued: the writer runs its jobs in order."""
        self._entries: Mapping[str, tuple[Any, Any]] = {}
        self._expected: Mapping[str, int] = {}
        self._pending: dict[str, list[Mapping[str, Any]]] = {}
        """Calls of entries not complete yet."""
        self._ready: list[Mapping[str, Any]] = []
        self._waiting: deque[list[EntryTrace]] = deque()
        self._streamed: set[str] = set()
        self._calls: list[Mapping[str, Any]] = []
        """Every call of the run, once they are done."""

    def begin(self, entries: Mapping[str, tuple[Any, Any]],
              calls_per_entry: Mapping[str, int]) -> None:
        """Before the calls, in the background: get the store ready for this many calls (a
        worker process for a large run on a local store) and register the dataset (entry id
        -> input and expected output, as the traces show them) as an evaluation dataset."""
        self._run.journal.tags[names.TRACES_TAG] = "true"
        self._entries = entries
        self._expected = calls_per_entry
        self._writer.submit(self._store.prepare, sum(calls_per_entry.values()))
        self._writer.submit(self._register_dataset)

    def call(self, record: CallRecord) -> None:
        """One call, as it finishes; its entry's trace is queued once all its calls are in."""
        if not self._stream:
            return
        pending = self._pending.setdefault(record.entry_id, [])
        pending.append(self._traced(record))
        if len(pending) < self._expected[record.entry_id]:
            return
        self._ready += self._pending.pop(record.entry_id)
        if len({c["entry_id"] for c in self._ready}) >= STREAM_BATCH:
            self._waiting.append(self._traces_of(self._ready))
            self._ready = []
            self._submit(self._write_waiting)

    def calls_done(self, calls: Sequence[CallRecord]) -> None:
        """Once the calls end: queue the traces not streamed yet (every trace of a resumed
        run, skipping those the store holds), written while the calls are scored."""
        self._stream = False
        self._calls = [self._traced(c) for c in calls]
        rest = self._traces_of([c for c in self._calls if c["entry_id"] not in self._streamed])
        self._submit(lambda: self._store.write_calls(self._context(), rest,
                                                     check_held=self._resumed))

    def finish(self, scored: ScoredRun) -> int:
        """Once scored: add every verdict to the traces, then check the store's count. A
        shortfall is a warning and the ``traces_missing`` metric; returns it."""
        traces = build_traces(self._context(), scored, self._calls)
        try:
            if self._last is not None:
                self._last.result()
            self._run.write(lambda: self._store.write_verdicts(self._context(), traces))
        except Exception as err:  # a store refusing traces does not sink the run
            logger.warning("writing the traces of run %s failed: %s", self._run.id, err)
        if self._run.offline:
            return 0
        held = self._store.assessment_names(self._context())
        missing = sum(t.trace_id not in held or (not held[t.trace_id] and bool(t.assessments))
                      for t in traces)
        if missing:
            logger.warning("run %s: %d of %d traces (or their assessments) are missing from %s",
                           self._run.id, missing, len(traces), self._backend.tracking_uri)
            self._run.log([MetricPoint(names.TRACES_MISSING_METRIC, missing)])
        return missing

    def add_assessments(self, by_entry: Mapping[str, Sequence[Assessment]]) -> None:
        """Assessments (entry id -> assessments) added to traces written earlier: the
        stability of each item of a replicate series, on its last replicate. Journaled too,
        so a bundle carries them to ``evalkit sync``."""
        self._run.journal.assessments.update({entry_id: [asdict(a) for a in items]
                                              for entry_id, items in by_entry.items()})
        self._run.write(lambda: self._store.add_assessments(self._context(), [
            (trace_id_for(self._run.id, entry_id), a)
            for entry_id, items in by_entry.items() for a in items]))

    def write_series(self, entries: Mapping[str, tuple[Any, Any]],
                     by_entry: Mapping[str, Sequence[Assessment]]) -> None:
        """A series parent's own traces, one per entry (entry id -> its input and each
        replicate's answer as the response) with its stability (``by_entry``): where the
        series' page shows which entries flipped. Written at once: the parent makes no calls."""
        traces = [EntryTrace(entry_id, trace_id_for(self._run.id, entry_id), given,
                             assessments=list(by_entry.get(entry_id, ())), response=answers)
                  for entry_id, (given, answers) in entries.items()]
        context = self._context()
        self._run.write(lambda: self._store.write_calls(context, traces, check_held=True))
        self._run.write(lambda: self._store.write_verdicts(context, traces))

    def close(self, wait: bool) -> None:
        """Stop the background writer: after what it was given (``wait``), or at once."""
        self._writer.shutdown(wait=wait, cancel_futures=not wait)

    def _submit(self, write: Any) -> None:
        self._last = self._writer.submit(self._run.write, write)

    def _write_waiting(self) -> None:
        """Every streamed trace waiting for the writer, in one request."""
        traces: list[EntryTrace] = []
        while self._waiting:
            traces += self._waiting.popleft()
        if traces:
            self._store.write_calls(self._context(), traces, check_held=False)

    def _traces_of(self, calls: Sequence[Mapping[str, Any]]) -> list[EntryTrace]:
        traces = build_traces(self._context(), ScoredRun(()), calls)
        self._streamed.update(t.entry_id for t in traces)
        return traces

    def _traced(self, record: CallRecord) -> dict[str, Any]:
        given, expected = self._entries.get(record.entry_id, (None, None))
        return {**record.to_json(), "input": given, "expected": expected}

    def _context(self) -> TraceContext:
        journal = self._run.journal
        return TraceContext(journal.run_id, journal.experiment_id, journal.start_time_ms,
                          dict(journal.params), dict(journal.tags))

    def _register_dataset(self) -> None:
        if self._run.offline:
            return
        try:
            self._backend.register_dataset(self._run.experiment_id, self._run.journal.params,
                                           self._entries)
        except Exception as err:  # a store without GenAI datasets: the run input is enough
            logger.info("the dataset was not registered as an MLflow evaluation dataset: %s",
                        err)
