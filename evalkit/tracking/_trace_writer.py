"""Writing a run's traces to MLflow in a few batched calls, and counting what the store holds.

The path (measured in README's MLflow section), in two phases so that the first overlaps the
calls:

1. *calls*, as entries complete (in the background while the calls run): finished spans (the
   entry and its calls) are built in memory and written with one ``log_spans`` per batch of
   up to 100 traces, which
   creates the trace rows too (name and tags travel as root-span attributes); one
   ``link_traces_to_run`` per batch links them to the run;
2. *verdicts*, once scored: the judge's spans, then every assessment. On a local SQL store
   the assessments go in one transaction (each commit costs an fsync, ~25 ms: one per
   assessment would cost seconds); on a tracking server, one request each, several at once.

Nothing goes through MLflow's asynchronous export queue, which drops traces when it fills.
Where this runs (a worker process for a large run on a local store, else a background
thread) is :mod:`evalkit.tracking._span_process`'s choice.
Raw results keep each call's latency, not its clock time: every trace starts at the run's
start, and each call span lasts its measured latency.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from evalkit.tracking._traces import EntryTrace, RunContext, Verdict, dumps, response_of

logger = logging.getLogger("evalkit")

BATCH = 100
"""Traces per ``log_spans`` request (``link_traces_to_run`` takes at most 100 ids)."""
WRITERS = 8
"""Assessment requests in flight at once against a tracking server."""


class TraceWriter:
    """Writes one run's traces; ids already in the store are skipped (resume, second sync)."""

    def __init__(self, client: Any, context: RunContext) -> None:
        from mlflow.tracing.client import TracingClient

        self._client = client
        self._tracing = TracingClient(client.tracking_uri)
        self.context = context

    def write_calls(self, traces: Sequence[EntryTrace], check_held: bool = True) -> None:
        """Phase 1: each entry's root span and call spans, linked to the run (skipping the
        traces the store holds, unless the caller knows they are new)."""
        held = self.stored() if check_held else {}
        fresh = [t for t in traces if t.trace_id not in held]
        for start in range(0, len(fresh), BATCH):
            batch = fresh[start:start + BATCH]
            self._log_spans([span for entry in batch
                             for span in _spans(self.context, entry, judge=False)])
            self._client.link_traces_to_run([t.trace_id for t in batch], self.context.run_id)

    def write_verdicts(self, traces: Sequence[EntryTrace]) -> None:
        """Phase 2: the judge's spans and the assessments of traces that hold none yet."""
        held = self.stored()
        fresh = [t for t in traces if held.get(t.trace_id) == 0]
        judged = [span for entry in fresh for span in _spans(self.context, entry, judge=True)]
        for start in range(0, len(judged), BATCH):
            self._log_spans(judged[start:start + BATCH])
        self.log_assessments([_assessment(t.trace_id, v, self.context.run_id)
                              for t in fresh for v in t.verdicts])

    def _log_spans(self, spans: list[Any]) -> None:
        try:
            self._tracing.log_spans(self.context.experiment_id, spans)
        except NotImplementedError as err:
            if "could not identify MLflow server version" not in str(err):
                raise
            # MLflow remembers a failed lookup of the server's version for the life of the
            # process: one made during an outage would refuse every later write (a sync
            # after the server is back). Forget it and ask again; still down, it raises.
            from mlflow.store.tracking.rest_store import RestStore

            RestStore._get_server_version.cache_clear()
            self._tracing.log_spans(self.context.experiment_id, spans)

    def log_assessments(self, assessments: Sequence[Any]) -> None:
        store = self._tracing.store
        if _is_sql_store(store):
            _insert_assessments(store, self.context, assessments)
            return
        with ThreadPoolExecutor(WRITERS, thread_name_prefix="evalkit-assess") as pool:
            list(pool.map(lambda a: self._tracing.log_assessment(a.trace_id, a), assessments))

    def stored(self) -> dict[str, int]:
        """trace id -> number of assessments, for every trace the store holds for the run."""
        return {trace_id: len(names) for trace_id, names in self.assessment_names().items()}

    def assessment_names(self) -> dict[str, list[str]]:
        """trace id -> the names of its assessments, for every trace the store holds for the
        run."""
        held: dict[str, list[str]] = {}
        token = None
        while True:
            page = self._client.search_traces(
                locations=[self.context.experiment_id], run_id=self.context.run_id,
                max_results=500, page_token=token, include_spans=False)
            held.update({t.info.trace_id: [a.name for a in t.info.assessments] for t in page})
            token = page.token
            if not token:
                return held


def verdicts_on(trace_id: str, verdicts: Sequence[Verdict], run_id: str) -> list[Any]:
    """MLflow assessments of ``verdicts`` for a trace written earlier."""
    return [_assessment(trace_id, v, run_id) for v in verdicts]


def _is_sql_store(store: Any) -> bool:
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    return isinstance(store, SqlAlchemyStore)


def _insert_assessments(store: Any, context: RunContext, assessments: Sequence[Any]) -> None:
    """Every assessment in one transaction of MLflow's own SQL store: the rows its
    ``create_assessment`` writes, for traces this writer created (so none overrides another,
    and each trace's timestamp is the run's start)."""
    from mlflow.store.tracking.dbmodels.models import SqlAssessments

    if not assessments:
        return
    with store.ManagedSessionMaker(read_only=False) as session:
        for assessment in assessments:
            row = SqlAssessments.from_mlflow_entity(assessment)
            row.experiment_id = int(context.experiment_id)
            row.trace_timestamp_ms = context.start_time_ms
            session.add(row)


def _assessment(trace_id: str, verdict: Verdict, run_id: str | None = None) -> Any:
    from mlflow.entities import AssessmentSource, Expectation, Feedback

    source = AssessmentSource(source_type=verdict.source_type, source_id=verdict.source_id)
    metadata = {"mlflow.assessment.sourceRunId": run_id} if run_id else None
    if verdict.expectation:
        return Expectation(name=verdict.name, value=verdict.value, source=source,
                           trace_id=trace_id, metadata=metadata)
    return Feedback(name=verdict.name, value=verdict.value, rationale=verdict.rationale,
                    source=source, trace_id=trace_id, metadata=metadata)


def _spans(context: RunContext, entry: EntryTrace, judge: bool) -> list[Any]:
    """The entry's finished spans: the root and one per component call, or (``judge``) one
    per judge call."""
    from mlflow.entities import Span
    from mlflow.tracing.constant import SpanAttributeKey
    from mlflow.tracing.utils import build_otel_context
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.trace import Status, StatusCode

    otel_trace = int(entry.trace_id.removeprefix("tr-"), 16)
    start = context.start_time_ms * 1_000_000
    end = start + int(max((c.latency_ms for c in entry.calls), default=0.0) * 1_000_000)
    replicate, seed = context.tags.get("replicate"), context.tags.get("seed")
    common = {SpanAttributeKey.REQUEST_ID: dumps(entry.trace_id),
              SpanAttributeKey.INPUTS: dumps(entry.input)}

    def span(name: str, kind: str, attributes: dict[str, Any], finish: int, parent: int | None,
             error: str | None = None) -> Any:
        events = () if error is None else (Event("exception", {"exception.message": error},
                                                 timestamp=finish),)
        return Span(ReadableSpan(
            name=name, context=build_otel_context(otel_trace, _span_id(entry.trace_id, name)),
            parent=None if parent is None else build_otel_context(otel_trace, parent),
            start_time=start, end_time=finish, resource=Resource.get_empty(), events=events,
            attributes={**common, SpanAttributeKey.SPAN_TYPE: dumps(kind),
                        **{k: dumps(v) for k, v in attributes.items()}},
            status=Status(StatusCode.ERROR if error else StatusCode.OK, error)))

    root = _span_id(entry.trace_id, entry.entry_id)
    if judge:
        return [span(f"judge {use} {index}", "LLM", {
            "evalkit.judge_model": context.params.get("judge_model"),
            "evalkit.prompt_use": use, SpanAttributeKey.OUTPUTS: reply}, end, root)
            for index, (use, reply) in enumerate(entry.judge_replies)]
    spans = [span(entry.entry_id, "CHAIN", {
        SpanAttributeKey.OUTPUTS: response_of(entry), "mlflow.traceTag.mlflow.traceName":
        entry.entry_id, "mlflow.traceTag.evalkit.entry_id": entry.entry_id}, end, None,
        # the trace is an error when no call gave an output
        entry.calls[0].error if entry.calls and all(c.error for c in entry.calls) else None)]
    for call in entry.calls:
        spans.append(span(f"call {call.repeat}", "UNKNOWN", {
            "evalkit.repeat": call.repeat, "evalkit.replicate": replicate, "evalkit.seed": seed,
            "evalkit.latency_ms": round(call.latency_ms, 3), "evalkit.error": call.error,
            **({} if call.error else {SpanAttributeKey.OUTPUTS: call.output})},
            start + int(call.latency_ms * 1_000_000), root, call.error))
    return spans


def _span_id(trace_id: str, name: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{trace_id}\0{name}".encode()).digest()[:8]) or 1
