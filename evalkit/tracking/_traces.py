"""A run's entries as MLflow traces, built from its records after the calls.

One trace per entry: the entry's input as the request, its output(s) as the response, a span
per component call (repeat, replicate, seed, latency, error, tokens) with the spans the
component made during it under it (its tools, its LLM requests), one per judge call (the
messages sent, model, reply, tokens), its verdicts as assessments and, on an entry flagged
for human review, a ``human_review`` tag holding its instructions. Everything is built
from what the run already keeps (``results/evaluation.json``, the raw results, the params and
tags), so a bundle synced after an outage yields the same traces as a run that never lost its
server.

Trace and span ids are derived from the run id and the entry id: writing a run's traces again
(a resumed run, a second sync) finds them by id instead of duplicating them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalkit.dataset import COMPARATIVE_TYPES
from evalkit.records import (
    HumanReviewItem,
    ItemCell,
    ItemResult,
    JudgeCall,
    ScoredRun,
    SpanRecord,
    TokenUsage,
    TypeNames,
    TypeResult,
    as_text,
    names,
)
from evalkit.tracking._rationale import shortened, verdict_rationale


@dataclass(frozen=True)
class Assessment:
    """One assessment on an entry's trace: a verdict (feedback) or an expectation."""

    name: str
    value: Any
    rationale: str | None
    source_type: str
    """``CODE``, ``LLM_JUDGE`` or ``HUMAN`` (MLflow's assessment source types)."""
    source_id: str
    expectation: bool = False


@dataclass(frozen=True)
class CallSpan:
    repeat: int
    output: Any
    error: str | None
    latency_ms: float
    usage: tuple[TokenUsage, ...] = ()
    spans: tuple[SpanRecord, ...] = ()
    """The spans the component made during the call, written under it."""


@dataclass(frozen=True)
class JudgeSpan:
    """One judge call about an entry: which test type it judged, which of the unit's calls
    it was, the messages sent and what came back."""

    test_type: str
    ask: int
    """1-based, among the ``asks`` calls of the unit (``JUDGE_REPEATS``)."""
    asks: int
    messages: tuple[Mapping[str, str], ...] | None
    """``None`` in the results of a run that predates them."""
    call: JudgeCall
    of_calls: int = 1
    """The entry's calls when the judge saw one output of several (an entry also in
    repeatability: its first call's output is the one judged against expected_output)."""

    @property
    def name(self) -> str:
        """``judge: functional``, ``judge: functional (call 0 of 3)`` when the entry made more
        calls than the one judged, with ``ask 2/3`` when asked repeatedly: what it judges,
        never a number that reads as a verdict."""
        parts = ([f"call 0 of {self.of_calls}"] if self.of_calls > 1 else []) + (
            [f"ask {self.ask}/{self.asks}"] if self.asks > 1 else [])
        return f"judge: {self.test_type}" + (f" ({', '.join(parts)})" if parts else "")


@dataclass
class EntryTrace:
    """Everything one entry's trace holds, in plain values."""

    entry_id: str
    trace_id: str
    input: Any = None
    calls: list[CallSpan] = field(default_factory=list)
    judge_calls: list[JudgeSpan] = field(default_factory=list)
    """Every judge call that judged this entry."""
    assessments: list[Assessment] = field(default_factory=list)
    response: Any = None
    """The trace's response when it is not its calls' (a series parent's: each replicate's)."""
    tags: dict[str, str] = field(default_factory=dict)
    """Tags set once scored, with the verdicts (the ``human_review`` request)."""


@dataclass(frozen=True)
class TraceContext:
    """The run the traces belong to, as its params and tags describe it."""

    run_id: str
    experiment_id: str
    start_time_ms: int
    params: Mapping[str, str]
    tags: Mapping[str, str]


def trace_id_for(run_id: str, entry_id: str) -> str:
    """The trace id of an entry in a run: the same every time it is written."""
    return "tr-" + hashlib.sha256(f"{run_id}\0{entry_id}".encode()).hexdigest()[:32]


def build_traces(context: TraceContext, evaluation: ScoredRun,
                 calls: Sequence[Mapping[str, Any]]) -> list[EntryTrace]:
    """One :class:`EntryTrace` per entry with calls or results, in the run's order. A call may
    carry its entry's ``input``; else the input comes from the entry's results."""
    traces: dict[str, EntryTrace] = {}

    def trace(entry_id: str) -> EntryTrace:
        if entry_id not in traces:
            traces[entry_id] = EntryTrace(entry_id, trace_id_for(context.run_id, entry_id))
        return traces[entry_id]

    for call in calls:
        _add_call(trace(call["entry_id"]), call)
    for entry in traces.values():  # calls arrive in the order they finish
        entry.calls.sort(key=lambda c: c.repeat)
    repeats = int(context.params.get(names.JUDGE_REPEATS_PARAM, "1"))
    for result in evaluation.types:
        for item in result.items:
            _assess(trace, result, item, context.params, repeats)
    for review in evaluation.human_review:
        _flag_for_review(trace(review.id), review)
    return list(traces.values())


def _add_call(entry: EntryTrace, call: Mapping[str, Any]) -> None:
    """A call of the entry (a line of its raw results) as a span; its input, if it has one."""
    if "input" in call:
        entry.input = call["input"]
    entry.calls.append(CallSpan(
        call["repeat"], call.get("output"), call.get("error"), float(call["latency_ms"]),
        tuple(TokenUsage.from_json(u) for u in call.get("usage", ())),
        tuple(SpanRecord.from_json(s) for s in call.get("spans", ()))))


def _assess(trace: Callable[[str], EntryTrace], result: TypeResult, item: ItemResult,
            params: Mapping[str, str], repeats: int) -> None:
    """The item's verdict on the trace of each of its entries (with the judge calls that
    gave it, when an LLM judged it), and its expected output as the entry's expectation."""
    judged = result.scorer == "llm_judge"
    # one output of an entry's calls judged: the first ("Entry-first", docs/running.md)
    of_calls = 1 if result.test_type in COMPARATIVE_TYPES else len(trace(item.id).calls)
    verdict = Assessment(
        name=result.test_type, value=item.passed,  # a verdict is named for its type
        rationale=verdict_rationale(result.test_type, item, params, of_calls),
        source_type="LLM_JUDGE" if judged else "CODE",
        source_id=(params.get(names.JUDGE_MODEL_PARAM, "llm judge") if judged
                   else names.code_source(result.scorer)))
    for entry_id in item.entry_ids:
        entry = trace(entry_id)
        if entry.input is None and len(item.entry_ids) == 1:
            entry.input = item.input
        entry.assessments.append(verdict)
        if judged:
            entry.judge_calls += _judge_spans(result.test_type, item, repeats, of_calls)
    if item.expected is not None and len(item.entry_ids) == 1:
        entry = trace(item.id)
        if not any(a.expectation for a in entry.assessments):
            entry.assessments.append(Assessment(
                names.EXPECTATION_ASSESSMENT, item.expected, None, "HUMAN",
                names.GOLDEN_SOURCE, expectation=True))


def _flag_for_review(entry: EntryTrace, review: HumanReviewItem) -> None:
    """An entry for human review: its input, if the trace has none yet, and a tag holding
    the reviewer's instructions."""
    entry.input = review.input if entry.input is None else entry.input
    # a tag, not feedback: the human_review feedback is the reviewer's own (Boolean)
    entry.tags[names.REVIEW_TRACE_TAG] = shortened(
        review.instructions or "see report-human-review.md", names.TRACE_TAG_VALUE_LIMIT)


def _judge_spans(test_type: str, item: ItemResult, repeats: int,
                 of_calls: int) -> list[JudgeSpan]:
    """The judge calls about an item (results written before they were kept hold the reply
    alone)."""
    calls = item.judge_calls or (
        () if item.judge_reply is None else (JudgeCall(item.judge_reply),))
    asks = max(repeats, len(calls))
    return [JudgeSpan(test_type, ask, asks, item.judge_messages, call, of_calls)
            for ask, call in enumerate(calls, 1)]


def stability_assessment(test_type: str, cells: Sequence[ItemCell | None]) -> Assessment:
    """An item's stability across replicates (one cell per replicate, ``None`` when the item
    was not scored there): always right, always wrong, or changed, with each answer."""
    correct = {c.correct for c in cells if c is not None}
    value = ("changed" if len(correct) > 1
             else "always right" if correct == {True} else "always wrong")
    answers = "; ".join(
        f"r{r}: " + ("not scored" if c is None else
                     f"{'right' if c.correct else 'wrong'} "
                     f"({shortened(c.error or ' | '.join(as_text(o) for o in c.outputs))})")
        for r, c in enumerate(cells))
    return Assessment(TypeNames.of(test_type).stability, value, answers, "CODE",
                      names.code_source(names.REPLICATES_TAG))


class Answered(Protocol):
    """A call as a trace's response shows it (a :class:`CallSpan`, a call's record)."""

    @property
    def output(self) -> Any: ...

    @property
    def error(self) -> str | None: ...


def answers_of(calls: Sequence[Answered]) -> Any:
    """What an entry's calls answered: the one call's output, or every repeat's output (an
    error as ``{"error": ...}``) in repeat order."""
    answers = [{"error": c.error} if c.error else c.output for c in calls]
    return answers[0] if len(answers) == 1 else answers


def response_of(entry: EntryTrace) -> Any:
    """The trace's response: its calls' answers (see :func:`answers_of`), or the response
    set on it (a series parent's)."""
    if entry.response is not None:
        return entry.response
    return answers_of(entry.calls)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
