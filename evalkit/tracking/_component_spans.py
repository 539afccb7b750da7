"""The spans a component made during a call (:class:`~evalkit.records.SpanRecord`), as spans
of an MLflow trace: under the call's span in the entry's trace, where the run writes them
with the call, and as MLflow's own ``Trace`` of that one call, which scorers that take
``trace`` are given.

A component's spans may share a name (a tool called twice), so each span's id is derived
from its call and its place among the call's spans (``call 0/3``), not from its name: writing
the trace again (a resumed run, a second sync) finds the same ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalkit.records import CallRecord, SpanRecord
from evalkit.tracking import _mlflow_private as private


def component_spans(trace_id: str, call_key: str, call_start_ns: int,
                    spans: Sequence[SpanRecord]) -> list[private.EndedSpan]:
    """A call's spans, each under its parent or, at the top, under the call's span (whose key
    is ``call_key``), timed from the call's start."""
    keys = [f"{call_key}/{index}" for index in range(len(spans))]
    return [private.EndedSpan(
        trace_id, span.name, call_key if span.parent is None else keys[span.parent],
        call_start_ns + span.start_ns, call_start_ns + max(span.start_ns, span.end_ns),
        span.span_type, {"inputs": span.inputs, "outputs": span.outputs, **span.attributes},
        span.error, key=key) for key, span in zip(keys, spans, strict=True)]


def call_trace(trace_id: str, experiment_id: str, call: CallRecord) -> Any:
    """MLflow's ``Trace`` of one call: the call's span (its output, or its error) with the
    component's spans under it. ``trace_id`` is the id of the entry's trace in the store."""
    from mlflow.entities import Trace, TraceData, TraceInfo, TraceLocation, TraceState

    call_key = f"call {call.repeat}"
    end_ns = max([int(call.latency_ms * 1_000_000)] + [s.end_ns for s in call.spans])
    root = private.EndedSpan(trace_id, call_key, None, 0, end_ns, "UNKNOWN",
                             {} if call.error else {"outputs": call.output}, call.error)
    spans = [private.finished_span(s) for s in
             [root, *component_spans(trace_id, call_key, 0, call.spans)]]
    info = TraceInfo(trace_id=trace_id,
                     trace_location=TraceLocation.from_experiment_id(experiment_id),
                     request_time=0, execution_duration=end_ns // 1_000_000,
                     state=TraceState.ERROR if call.error else TraceState.OK)
    return Trace(info=info, data=TraceData(spans=spans))
