"""The GenAI side of a run in MLflow: a trace per entry with its verdicts as assessments, the
golden dataset as an evaluation dataset, and the judge's prompts in the prompt registry."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from evalkit.records import ScoredRun
from evalkit.tracking._bundle import BUNDLES_DIR
from evalkit.tracking._dataset import register_evaluation_dataset
from evalkit.tracking._prompts import register_prompts
from evalkit.tracking._span_process import SpanWriting
from evalkit.tracking._store import TrackingStore
from evalkit.tracking._trace_writer import TraceWriter, verdicts_on
from evalkit.tracking._traces import (
    TRACES_TAG,
    EntryTrace,
    RunContext,
    Verdict,
    build_traces,
    trace_id_for,
)

logger = logging.getLogger("evalkit")

STREAM_BATCH = 10
"""Entries per background write while the calls run."""


class TraceLog(TrackingStore):
    """The tracing side of :class:`Tracker`."""

    def __init__(self, tracking_uri: str | None = None, bundles_dir: Path = BUNDLES_DIR) -> None:
        super().__init__(tracking_uri, bundles_dir)
        self._trace_pool = ThreadPoolExecutor(1, thread_name_prefix="evalkit-traces")
        self._spans = SpanWriting(self._uri)
        self._trace_jobs: dict[str, tuple[RunContext, Sequence[Mapping[str, Any]],
                                          Future[None]]] = {}
        """Per run: its context, every call, and the last background job (the pool runs its
        jobs in order: when it is done, every trace of the run is written)."""
        self._trace_pending: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
        """Calls of entries not complete yet, streamed by :meth:`trace_call`."""
        self._trace_ready: dict[str, list[Mapping[str, Any]]] = {}
        self._trace_waiting: dict[str, deque[list[EntryTrace]]] = {}
        """Streamed traces queued for the writer thread (deque: appended and taken from two
        threads)."""
        self._trace_streamed: dict[str, set[str]] = {}

    def begin_traces(self, run_id: str, calls: int,
                     entries: Mapping[str, tuple[Any, Any]]) -> None:
        """Before the calls, in the background: for a run of ``calls`` calls on a local store,
        start the span writer's process if it pays; register the dataset (entry id -> input,
        expected output) as an MLflow evaluation dataset."""
        self._trace_pool.submit(self._spans.start, calls)
        self._trace_pool.submit(self._register_dataset, self._run_context(run_id), entries)

    def trace_call(self, run_id: str, call: Mapping[str, Any], calls_of_entry: int) -> None:
        """Stream one call record (with its entry's ``input`` and ``expected`` output) while
        the calls run: once its entry's ``calls_of_entry`` calls are in, the entry's trace is
        queued, and every :data:`STREAM_BATCH` queued traces are written in the background,
        in the time the calls spend waiting."""
        pending = self._trace_pending.setdefault(run_id, {})
        pending.setdefault(call["entry_id"], []).append(call)
        if len(pending[call["entry_id"]]) < calls_of_entry:
            return
        ready = self._trace_ready.setdefault(run_id, [])
        ready += pending.pop(call["entry_id"])
        if len({c["entry_id"] for c in ready}) >= STREAM_BATCH:
            self._trace_ready[run_id] = []
            context, traces = self._traces_of(run_id, ready)
            self._trace_waiting.setdefault(run_id, deque()).append(traces)
            self._trace_pool.submit(self._write, run_id,
                                    lambda: self._write_waiting(run_id, context))

    def _write_waiting(self, run_id: str, context: RunContext) -> None:
        """Write every streamed trace waiting for the writer in one go: while the writer keeps
        up, small batches; when it falls behind, fewer and larger ones (each request to
        MLflow has a fixed cost of its own)."""
        waiting, traces = self._trace_waiting.get(run_id, deque()), []
        while waiting:
            traces += waiting.popleft()
        if traces:
            self._spans.write_calls(context, traces, check_held=False)

    def start_traces(self, run_id: str, calls: Sequence[Mapping[str, Any]]) -> None:
        """Once the calls are done: queue the traces not streamed by :meth:`trace_call` (all of
        them for a resumed run, without the ones it holds); :meth:`log_traces` adds the
        verdicts. Offline, the bundle holds what ``evalkit sync`` needs to write the traces."""
        streamed = self._trace_streamed.pop(run_id, set())
        self._trace_pending.pop(run_id, None)
        self._trace_ready.pop(run_id, None)
        context, job = self._submit_traces(
            run_id, [c for c in calls if c["entry_id"] not in streamed], check_held=True)
        # The pool runs jobs in order: after this one, no streamed trace is waiting.
        job.add_done_callback(lambda _: self._trace_waiting.pop(run_id, None))
        self._trace_jobs[run_id] = (context, calls, job)

    def _submit_traces(self, run_id: str, calls: Sequence[Mapping[str, Any]],
                       check_held: bool) -> tuple[RunContext, Future[None]]:
        """Queue the traces of ``calls``; their context, and the job (the last one queued)."""
        context, traces = self._traces_of(run_id, calls)
        return context, self._trace_pool.submit(
            self._write, run_id, lambda: self._spans.write_calls(context, traces, check_held))

    def _traces_of(self, run_id: str, calls: Sequence[Mapping[str, Any]]
                   ) -> tuple[RunContext, list[EntryTrace]]:
        """The run's context and the traces of ``calls`` (their entries counted as streamed)."""
        context = self._run_context(run_id)
        traces = build_traces(context, ScoredRun(()), calls)
        self._trace_streamed.setdefault(run_id, set()).update(t.entry_id for t in traces)
        return context, traces

    def _run_context(self, run_id: str) -> RunContext:
        journal = self._journals[run_id]
        journal.tags[TRACES_TAG] = "true"
        return RunContext(run_id, journal.experiment_id, journal.start_time_ms,
                          dict(journal.params), dict(journal.tags))

    def log_traces(self, run_id: str, evaluation: ScoredRun) -> int:
        """Add every verdict to the traces begun by :meth:`start_traces`, then check the
        store's count: a shortfall is a warning and the ``traces_missing`` metric."""
        context, calls, job = self._trace_jobs.pop(run_id)
        traces = build_traces(context, evaluation, calls)
        writer = TraceWriter(self._client, context)

        def verdicts() -> None:
            job.result()
            self._spans.write_verdicts(context, traces)

        try:
            self._write(run_id, verdicts)
        except Exception as err:  # a local store refusing traces does not sink the run
            logger.warning("writing the traces of run %s failed: %s", run_id, err)
        return 0 if run_id in self._offline else self._check_traces(writer, traces)

    def _register_dataset(self, context: RunContext,
                          entries: Mapping[str, tuple[Any, Any]]) -> None:
        if context.run_id in self._offline:
            return
        try:
            register_evaluation_dataset(self._client, context.experiment_id, context.params,
                                        entries)
        except Exception as err:  # a store without GenAI datasets: the run input is enough
            logger.info("the dataset was not registered as an MLflow evaluation dataset: %s",
                        err)

    def log_stability(self, run_id: str, verdicts: Mapping[str, Sequence[Verdict]]) -> None:
        """Add assessments (entry id -> verdicts) to the traces of a run written earlier: the
        stability of each item of a replicate series, on its last replicate."""
        journal = self._journals[run_id]
        if TRACES_TAG not in journal.tags:
            return
        writer = TraceWriter(self._client, self._run_context(run_id))
        self._write(run_id, lambda: writer.log_assessments([
            a for entry_id, items in verdicts.items()
            for a in verdicts_on(trace_id_for(run_id, entry_id), items, run_id)]))

    def _check_traces(self, writer: TraceWriter, traces: Sequence[EntryTrace]) -> int:
        held = writer.stored()
        missing = sum(t.trace_id not in held or (held[t.trace_id] == 0 and bool(t.verdicts))
                      for t in traces)
        if missing:
            logger.warning("run %s: %d of %d traces (or their assessments) are missing from %s",
                           writer.context.run_id, missing, len(traces), self.tracking_uri)
        return missing

    def log_prompts(self, run_id: str,
                    prompts: Mapping[str, Sequence[Mapping[str, str]]]) -> None:
        """The judge's prompts (registry name -> chat template) registered and linked to the
        run; a store without a prompt registry is skipped with a warning."""
        if not prompts or run_id in self._offline:
            return
        try:
            register_prompts(self._client, run_id, prompts)
        except Exception as err:
            if self.is_remote and not self._answers():
                self._offline.add(run_id)
                return
            logger.warning("the judge's prompts were not registered in MLflow (%s); they "
                           "stay in the run's params", err)
