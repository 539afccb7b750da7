"""Writing a run's traces to MLflow in a few batched calls, and counting what the store holds.

The path (measured in docs/mlflow.md, Traces and assessments), in two phases so that the
first overlaps the calls:

1. *calls*, as entries complete (in the background while the calls run): finished spans (the
   entry and its calls) are built in memory and written with one ``log_spans`` per batch of
   up to 100 traces, which creates the trace rows too (name and tags travel as root-span
   attributes); one ``link_traces_to_run`` per batch links them to the run;
2. *verdicts*, once scored: the judge's spans, the tags asking for a human review (one
   ``set_trace_tag`` each: few entries ask), then every assessment. On a local SQL store
   the assessments go in one transaction; on a tracking server, one request each, several
   at once.

Nothing goes through MLflow's asynchronous export queue, which drops traces when it fills
(why, and the private calls this takes: :mod:`evalkit.tracking._mlflow_private`). Raw results
keep each call's latency, not its clock time: every trace starts at the run's start, and each
call span lasts its measured latency (starting a nanosecond after the span before it, so that
spans list in call order).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from evalkit.config import prompt_use
from evalkit.records import (
    Prices,
    TokenUsage,
    cost_of,
    names,
    prices_from_param,
    spans_carry_usage,
    usage_attribute,
)
from evalkit.tracking import _mlflow_private as private
from evalkit.tracking._component_spans import component_spans
from evalkit.tracking._traces import (
    Assessment,
    EntryTrace,
    TraceContext,
    response_of,
)

logger = logging.getLogger("evalkit")

BATCH = 100
"""Traces per ``log_spans`` request (``link_traces_to_run`` takes at most 100 ids)."""
WRITERS = 8
"""Assessment requests in flight at once against a tracking server."""


class TraceWriter:
    """Writes one run's traces; ids already in the store are skipped (resume, second sync)."""

    def __init__(self, client: Any, context: TraceContext) -> None:
        self._client = client
        self._tracing = private.tracing_client(client.tracking_uri)
        self.context = context

    def write_calls(self, traces: Sequence[EntryTrace], check_held: bool = True) -> None:
        """Phase 1: each entry's root span and call spans, linked to the run (skipping the
        traces the store holds, unless the caller knows they are new)."""
        held = self.assessment_names() if check_held else {}
        fresh = [t for t in traces if t.trace_id not in held]
        for start in range(0, len(fresh), BATCH):
            batch = fresh[start:start + BATCH]
            private.log_spans(self._tracing, self.context.experiment_id, [
                span for entry in batch for span in _call_spans(self.context, entry)])
            self._client.link_traces_to_run([t.trace_id for t in batch], self.context.run_id)

    def write_verdicts(self, traces: Sequence[EntryTrace]) -> None:
        """Phase 2: the judge's spans, tags and assessments of traces that hold none yet."""
        held = self.assessment_names()
        fresh = [t for t in traces if held.get(t.trace_id) == []]
        judged = [span for entry in fresh for span in _judge_spans(self.context, entry)]
        for start in range(0, len(judged), BATCH):
            private.log_spans(self._tracing, self.context.experiment_id,
                              judged[start:start + BATCH])
        for entry in fresh:
            for key, value in entry.tags.items():
                self._client.set_trace_tag(entry.trace_id, key, value)
        self.log_assessments([(t.trace_id, a) for t in fresh for a in t.assessments])

    def log_assessments(self, assessments: Sequence[tuple[str, Assessment]]) -> None:
        """Assessments (trace id, assessment) on traces of this run."""
        entities = [_entity(trace_id, a, self.context.run_id) for trace_id, a in assessments]
        if private.is_sql_store(self._tracing):
            private.insert_assessments(self._tracing, self.context.experiment_id,
                                       self.context.start_time_ms, entities)
            return
        with ThreadPoolExecutor(WRITERS, thread_name_prefix="evalkit-assess") as pool:
            list(pool.map(lambda a: self._tracing.log_assessment(a.trace_id, a), entities))

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


def _entity(trace_id: str, assessment: Assessment, run_id: str) -> Any:
    from mlflow.entities import AssessmentSource, Expectation, Feedback

    source = AssessmentSource(source_type=assessment.source_type,
                              source_id=assessment.source_id)
    metadata = {names.SOURCE_RUN_METADATA: run_id}
    if assessment.expectation:
        return Expectation(name=assessment.name, value=assessment.value, source=source,
                           trace_id=trace_id, metadata=metadata)
    return Feedback(name=assessment.name, value=assessment.value,
                    rationale=assessment.rationale, source=source, trace_id=trace_id,
                    metadata=metadata)


def _call_spans(context: TraceContext, entry: EntryTrace) -> list[Any]:
    """The entry's root span and one span per component call. Each call span starts a
    nanosecond after the one before it, so that every MLflow release lists them in call
    order (3.14 to 3.16 order spans that start together at random)."""
    start = context.start_time_ms * 1_000_000
    replicate = context.tags.get(names.REPLICATE_TAG)
    seed = context.tags.get(names.SEED_TAG)
    common = {"inputs": entry.input}
    # the trace is an error when no call gave an output
    failed = entry.calls[0].error if entry.calls and all(c.error for c in entry.calls) else None
    spans = [private.finished_span(private.EndedSpan(
        entry.trace_id, entry.entry_id, None, start, _root_end(start, entry), "CHAIN",
        {**common, "outputs": response_of(entry)}, failed,
        trace_tags={names.TRACE_NAME_TAG: entry.entry_id,
                    names.ENTRY_ID_TRACE_TAG: entry.entry_id}))]
    prices = prices_from_param(context.params.get(names.PRICES_PARAM))
    for order, call in enumerate(entry.calls, 1):
        key = f"call {call.repeat}"
        # Tokens go on the call's span when the component reported them, an LLM span as
        # MLflow counts them; when its own spans carry them, there only (never twice).
        usage = () if spans_carry_usage(call.spans) else call.usage
        spans.append(private.finished_span(private.EndedSpan(
            entry.trace_id, key, entry.entry_id, start + order,
            start + order + int(call.latency_ms * 1_000_000),
            "LLM" if usage else "UNKNOWN", {
                **common, names.SPAN_REPEAT: call.repeat, names.SPAN_REPLICATE: replicate,
                names.SPAN_SEED: seed, names.SPAN_LATENCY_MS: round(call.latency_ms, 3),
                names.SPAN_ERROR: call.error, **_usage_attributes(usage, prices),
                **({} if call.error else {"outputs": call.output})},
            call.error)))
        spans += [private.finished_span(s) for s in
                  component_spans(entry.trace_id, key, start + order, call.spans)]
    return spans


def _judge_spans(context: TraceContext, entry: EntryTrace) -> list[Any]:
    """One chat span per judge call that judged the entry, after the call spans, until the
    end of the entry's root span: the messages sent as its inputs (the UI shows them as a
    chat), the reply as its outputs, the tokens used."""
    start = context.start_time_ms * 1_000_000
    end = _root_end(start, entry)
    first = start + len(entry.calls) + 1
    model = context.params.get(names.JUDGE_MODEL_PARAM)
    prices = prices_from_param(context.params.get(names.PRICES_PARAM))
    return [private.finished_span(private.EndedSpan(
        entry.trace_id, judge.name, entry.entry_id, first + index, max(end, first + index),
        "CHAT_MODEL", {
            "inputs": entry.input if judge.messages is None else {
                "messages": [dict(m) for m in judge.messages]},
            names.SPAN_MESSAGE_FORMAT: "openai", names.SPAN_LLM_MODEL: model,
            names.SPAN_JUDGE_MODEL: model, names.SPAN_PROMPT_USE: prompt_use(judge.test_type),
            **_usage_attributes(() if judge.call.usage is None else (judge.call.usage,),
                                prices),
            "outputs": judge.call.reply}, judge.call.error))
        for index, judge in enumerate(entry.judge_calls)]


def _usage_attributes(usages: Sequence[TokenUsage], prices: Prices) -> dict[str, Any]:
    """The tokens a span's LLM requests used, as MLflow reads them: the usage, the model
    when there is one, and the cost of what ``TOKEN_PRICES`` prices (nothing when no usage
    was reported)."""
    if not usages:
        return {}
    attributes: dict[str, Any] = {names.SPAN_TOKEN_USAGE: usage_attribute(usages)}
    models = {u.model for u in usages}
    if len(models) == 1 and None not in models:
        attributes[names.SPAN_LLM_MODEL] = usages[0].model
    cost = cost_of(usages, prices)
    if cost is not None:
        attributes[names.SPAN_COST] = cost.attribute()
    return attributes


def _root_end(start: int, entry: EntryTrace) -> int:
    """The root span ends with the last of its call spans (each a nanosecond later)."""
    return start + len(entry.calls) + int(
        max((c.latency_ms for c in entry.calls), default=0.0) * 1_000_000)
