"""The trajectory scorer: each rule (order, any order, missing, extra, arguments by subset,
nested arguments, no tools expected, forbidden tools) on a table, the rationale naming the
first mismatch; and the tool calls read from MLflow's ``Trace`` of a call."""

from __future__ import annotations

from typing import Any

import pytest

from evalkit.records import CallRecord, SpanRecord
from evalkit.scorers import Case, TrajectoryScorer
from evalkit.scorers._trajectory import ToolCall, arguments_match, check_trajectory, tool_calls
from evalkit.tracking import call_trace

ROME = ToolCall("lookup", {"city": "Rome", "units": "metric"})
PARIS = ToolCall("lookup", {"city": "Paris", "units": "metric"})
BOOK = ToolCall("book", {"hotel": {"name": "Roma", "stars": 4}, "nights": [1, 2]})
DELETE = ToolCall("delete_booking", {"id": 7})


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments} if arguments else {"name": name}


RULES = [
    # (id, expectation, calls made, first mismatch or None)
    ("exact: the same calls in the same order", {
        "tool_calls": [call("lookup", city="Rome"), call("book")], "order": "exact"},
     [ROME, BOOK], None),
    ("exact: out of order", {
        "tool_calls": [call("book"), call("lookup", city="Rome")], "order": "exact"},
     [ROME, BOOK], "expected tool 'book' #1; got 'lookup' with {'city': 'Rome', 'units': "
                   "'metric'}"),
    ("exact: an extra call", {"tool_calls": [call("lookup")], "order": "exact"},
     [ROME, BOOK], "unexpected call #2 'book' with {'hotel': {'name': 'Roma', 'stars': 4}, "
                   "'nights': [1, 2]}: order 'exact' allows no call beyond the 1 expected"),
    ("exact: a missing call", {"tool_calls": [call("lookup"), call("book")], "order": "exact"},
     [ROME], "expected tool 'book' #2; got no call #2 (only 1 made)"),
    ("exact: wrong arguments", {
        "tool_calls": [call("lookup", city="Paris")], "order": "exact"},
     [ROME], "expected tool 'lookup' #1 with {'city': 'Paris'}; got 'lookup' with "
             "{'city': 'Rome', 'units': 'metric'}"),
    ("in_order: extra calls before, between and after", {
        "tool_calls": [call("lookup", city="Rome"), call("book")]},
     [PARIS, ROME, PARIS, BOOK, DELETE], None),
    ("in_order: out of order", {"tool_calls": [call("book"), call("lookup")]},
     [ROME, BOOK], "expected tool 'lookup' #2 after call #2; got no call of 'lookup'"),
    ("in_order: the second lookup with the wrong city", {
        "tool_calls": [call("lookup", city="Paris"), call("lookup", city="Rome")],
        "order": "in_order"},
     [PARIS, PARIS], "expected tool 'lookup' #2 with {'city': 'Rome'} after call #1; got "
                     "'lookup' with {'city': 'Paris', 'units': 'metric'}"),
    ("in_order: a missing call", {"tool_calls": [call("lookup"), call("book")]},
     [ROME], "expected tool 'book' #2 after call #1; got no call of 'book'"),
    ("any_order: reversed", {
        "tool_calls": [call("book"), call("lookup", city="Rome")], "order": "any_order"},
     [ROME, BOOK], None),
    ("any_order: extra calls allowed", {"tool_calls": [call("book")], "order": "any_order"},
     [ROME, PARIS, BOOK], None),
    # a greedy pairing would give the first lookup to the loose expectation and fail
    ("any_order: the stricter expectation gets the call it needs", {
        "tool_calls": [call("lookup"), call("lookup", city="Rome")], "order": "any_order"},
     [ROME, PARIS], None),
    ("any_order: one call cannot meet two expectations", {
        "tool_calls": [call("lookup", city="Rome"), call("lookup", units="metric")],
        "order": "any_order"},
     [ROME], "expected tool 'lookup' #2 with {'units': 'metric'} (in any order); got no call "
             "of 'lookup'"),
    ("any_order: a missing call", {
        "tool_calls": [call("lookup", city="Rome"), call("lookup", city="Oslo")],
        "order": "any_order"},
     [PARIS, ROME], "expected tool 'lookup' #2 with {'city': 'Oslo'} (in any order); got "
                    "'lookup' with {'city': 'Paris', 'units': 'metric'}"),
    ("any_order: no call at all", {"tool_calls": [call("book")], "order": "any_order"},
     [], "expected tool 'book' #1 (in any order); got no call of 'book'"),
    ("arguments: a subset of the call's", {"tool_calls": [call("lookup", units="metric")]},
     [ROME], None),
    ("arguments: nested objects by subset", {
        "tool_calls": [call("book", hotel={"stars": 4})]}, [BOOK], None),
    ("arguments: a nested value differs", {
        "tool_calls": [call("book", hotel={"stars": 5})], "order": "exact"},
     [BOOK], "expected tool 'book' #1 with {'hotel': {'stars': 5}}; got 'book' with "
             "{'hotel': {'name': 'Roma', 'stars': 4}, 'nights': [1, 2]}"),
    ("arguments: a list element by element", {
        "tool_calls": [call("book", nights=[1, 2])]}, [BOOK], None),
    ("arguments: a list of another length", {
        "tool_calls": [call("book", nights=[1])], "order": "exact"},
     [BOOK], "expected tool 'book' #1 with {'nights': [1]}; got 'book' with {'hotel': "
             "{'name': 'Roma', 'stars': 4}, 'nights': [1, 2]}"),
    ("no tools expected, none called", {"tool_calls": []}, [], None),
    ("no tools expected, one called", {"tool_calls": [], "order": "any_order"},
     [PARIS, ROME], "expected no tool calls; got 'lookup' with {'city': 'Paris', 'units': "
                    "'metric'} (call #1)"),
    ("forbidden tool not called", {"forbidden_tools": ["delete_booking"]}, [ROME, BOOK], None),
    ("forbidden tool called, whatever the order", {
        "tool_calls": [call("lookup")], "order": "any_order",
        "forbidden_tools": ["delete_booking"]},
     [ROME, DELETE], "called forbidden tool 'delete_booking' with {'id': 7} (call #2)"),
]


@pytest.mark.parametrize(("expectation", "calls", "mismatch"),
                         [pytest.param(*rule[1:], id=rule[0]) for rule in RULES])
def test_each_rule_names_the_first_mismatch(expectation: dict[str, Any], calls: list[ToolCall],
                                            mismatch: str | None) -> None:
    assert check_trajectory(expectation, calls) == mismatch


@pytest.mark.parametrize(("expected", "actual", "matches"), [
    ({"a": 1}, {"a": 1, "b": 2}, True),
    ({"a": 1, "c": 3}, {"a": 1, "b": 2}, False),
    ({"a": {"b": [{"c": 1}]}}, {"a": {"b": [{"c": 1, "d": 2}], "e": 0}}, True),
    ({"a": {"b": [{"c": 1}]}}, {"a": {"b": [{"c": 2}]}}, False),
    ([1, 2], [1, 2, 3], False),
    ([1, 2], [2, 1], False),
    ({"a": 1}, {"a": 1.0}, True),
    ({"a": True}, {"a": 1}, False),
    ({"a": 0}, {"a": False}, False),
    ({"a": None}, {}, False),
    ({"a": None}, {"a": None}, True),
    ({}, "any text", False),
    ("Rome", "Rome", True),
])
def test_arguments_match_by_subset_recursively(expected: Any, actual: Any,
                                               matches: bool) -> None:
    assert arguments_match(expected, actual) is matches


def span(name: str, span_type: str, start: int, parent: int | None = None,
         inputs: Any = None) -> SpanRecord:
    return SpanRecord(name, span_type, parent, start, start + 5, inputs)


def agent_call() -> CallRecord:
    """An agent's call: an AGENT span with an LLM call, then two tools, one of which calls a
    third; recorded out of start order."""
    return CallRecord("e1", 0, "booked", None, 40.0, spans=(
        span("agent", "AGENT", 0),
        span("book", "TOOL", 30, parent=0, inputs={"hotel": {"name": "Roma"}}),
        span("chat", "CHAT_MODEL", 2, parent=0, inputs={"messages": []}),
        span("lookup", "TOOL", 10, parent=0, inputs={"city": "Rome"}),
        span("geocode", "TOOL", 12, parent=3, inputs={"q": "Rome"}),
    ))


def test_tool_calls_are_the_tool_spans_of_the_trace_in_start_order() -> None:
    trace = call_trace("tr-1", "0", agent_call())
    assert tool_calls(trace) == [ToolCall("lookup", {"city": "Rome"}),
                                 ToolCall("geocode", {"q": "Rome"}),
                                 ToolCall("book", {"hotel": {"name": "Roma"}})]
    assert tool_calls(call_trace("tr-2", "0", CallRecord("e2", 0, "hi", None, 1.0))) == []


def test_the_scorer_gives_the_verdict_and_its_rationale() -> None:
    trace = call_trace("tr-1", "0", agent_call())
    cases = [Case("q", "booked", None, trace, {"tool_calls": [call("lookup"), call("book")]}),
             Case("q", "booked", None, trace, {"tool_calls": [call("book"), call("lookup")],
                                               "order": "exact"}),
             Case("q", "booked", None, trace, None)]
    passed, failed, missing = TrajectoryScorer().against_expected(cases)
    assert (passed.passed, passed.rationale) == (
        True, "called lookup, geocode, book: as expected (in_order)")
    assert (failed.passed, failed.rationale) == (
        False, "expected tool 'book' #1; got 'lookup' with {'city': 'Rome'}")
    assert (missing.passed, missing.error) == (False, "the entry has no expected_trajectory")
