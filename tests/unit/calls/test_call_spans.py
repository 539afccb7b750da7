"""What the engine does with the spans a capture gives it: kept on the call's record in every
outcome (an output, an error), redacted, read back from the raw results; the tokens they
carry are the call's, instead of (never besides) what the component reported.

The capture here is the engine's protocol filled by hand with the spans a component would
have made; MLflow's capture itself is tested in tests/unit/tracking/test_span_capture.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from evalkit import Call
from evalkit._secrets import Redactor
from evalkit.calls._call import invoke
from evalkit.dataset import Entry
from evalkit.records import (
    CallRecord,
    SpanRecord,
    TokenUsage,
    names,
    spans_carry_usage,
    usage_of_spans,
)

SECRET = "sk-live-0123456789abcdefghij"


def llm(parent: int | None, input_tokens: int, output_tokens: int,
        model: str | None = "gpt-test") -> SpanRecord:
    attributes: dict[str, Any] = {names.SPAN_TOKEN_USAGE: {
        "input_tokens": input_tokens, "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens}}
    if model is not None:
        attributes[names.SPAN_LLM_MODEL] = model
    return SpanRecord("chat", "CHAT_MODEL", parent, 10, 20, {"messages": []}, "hi", attributes)


def capturing(*spans: SpanRecord) -> Any:
    @contextmanager
    def capture() -> Iterator[list[SpanRecord]]:
        made: list[SpanRecord] = []
        yield made
        made.extend(spans)  # as MLflow's capture does: the spans once the call is over

    return capture


def call_once(component: Any, *spans: SpanRecord) -> CallRecord:
    item = Entry("e", Path("e.json"), ("functional",), "q", "a")
    redactor = Redactor.from_environment({"OPENAI_API_KEY": SECRET})
    return invoke(component, item, Call({}, 0, 1), {}, redactor, capturing(*spans))


TOOL = SpanRecord("lookup", "TOOL", None, 1, 5, {"city": "Paris", "key": SECRET}, "sunny",
                  {"note": f"called with {SECRET}"})


@pytest.mark.parametrize("outcome", ["output", "error"])
def test_the_spans_are_kept_redacted_whatever_the_call_did(outcome: str) -> None:
    def component(item: Entry, call: Call) -> str:
        if outcome == "error":
            raise RuntimeError("the agent gave up")
        return "sunny"

    record = call_once(component, TOOL)
    (span,) = record.spans
    assert span.inputs == {"city": "Paris", "key": "[REDACTED:OPENAI_API_KEY]"}
    assert span.attributes == {"note": "called with [REDACTED:OPENAI_API_KEY]"}
    assert (span.name, span.span_type, span.outputs) == ("lookup", "TOOL", "sunny")
    assert (record.error is None) is (outcome == "output")
    assert CallRecord.from_json(record.to_json()).spans == record.spans


def test_tokens_the_spans_carry_are_the_calls_and_replace_what_it_reported() -> None:
    def component(item: Entry, call: Call) -> str:
        call.record_usage(input_tokens=7, output_tokens=3, model="gpt-test")  # the same request
        return "a"

    assert call_once(component, llm(None, 7, 3)).usage == (TokenUsage(7, 3, "gpt-test"),)
    assert call_once(component).usage == (TokenUsage(7, 3, "gpt-test"),)  # no span: reported
    assert call_once(component, TOOL).usage == (TokenUsage(7, 3, "gpt-test"),)


def test_tokens_rolled_up_onto_a_parent_span_are_counted_once() -> None:
    agent = SpanRecord("agent", "AGENT", None, 0, 30, attributes={
        names.SPAN_TOKEN_USAGE: {"input_tokens": 12, "output_tokens": 5}})
    spans = [agent, llm(0, 8, 3), llm(0, 4, 2), llm(None, 1, 1, model="other"),
             llm(None, 2, 2, model=None), TOOL]
    # The agent's rolled-up 12/5 stands for the two under it; the others add up by model
    # (the agent names none, as the last chat span: 12 + 2, 5 + 2).
    assert usage_of_spans(spans) == (TokenUsage(14, 7, None), TokenUsage(1, 1, "other"))
    assert usage_of_spans([llm(None, 1, 2), llm(None, 3, 4)]) == (TokenUsage(4, 6, "gpt-test"),)
    assert usage_of_spans([TOOL]) == ()


def test_usage_that_is_not_counts_is_read_as_none_of_them() -> None:
    odd = SpanRecord("chat", "LLM", None, 0, 1, attributes={
        names.SPAN_TOKEN_USAGE: {"input_tokens": -1, "output_tokens": True}})
    assert usage_of_spans([odd]) == (TokenUsage(0, 0, None),)


@pytest.mark.parametrize(("spans", "carry"), [
    ([], False), ([TOOL], False), ([TOOL, llm(0, 0, 0)], True), ([llm(None, 2, 1)], True),
    ([SpanRecord("chat", "LLM", None, 0, 1, attributes={names.SPAN_TOKEN_USAGE: 12})], False),
])
def test_spans_carry_usage_exactly_when_their_usage_replaces_the_reported(
        spans: list[SpanRecord], carry: bool) -> None:
    assert spans_carry_usage(spans) is carry
    assert bool(usage_of_spans(spans)) is carry
