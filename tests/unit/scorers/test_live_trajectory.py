"""After the merge with span capture: an agent's @mlflow.trace tools scored by trajectory,
a trace-taking function and an MLflow @scorer reading trace, in an in-process run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mlflow
from mlflow.entities import SpanType
from mlflow.genai.scorers import scorer

from evalkit import RunContext, Selection, evaluate
from evalkit.tracking import Tracker
from tests.support.builders import config_for, entry, write_dataset


@mlflow.trace(span_type=SpanType.TOOL)
def lookup(city: str) -> str:
    return f"{city}: sunny"


@mlflow.trace(span_type=SpanType.TOOL)
def book(hotel: str, nights: int) -> str:
    return "booked"


@mlflow.trace(span_type=SpanType.AGENT)
def agent(question: str) -> str:
    with mlflow.start_span("plan"):
        pass
    city = "Rome" if "Rome" in question else "Paris"
    lookup(city)
    return book(f"Hotel {city}", 2)


@scorer
def used_tools(trace: Any) -> bool:
    return len(trace.search_spans(span_type=SpanType.TOOL)) == 2


def tools_named(output: Any, expected: Any, trace: Any) -> bool:
    return [s.name for s in trace.search_spans(span_type=SpanType.TOOL)] == ["lookup", "book"]


def test_live_spans_reach_the_scorers(tmp_path: Path, tracker: Tracker) -> None:
    expectation = {"tool_calls": [{"name": "lookup", "arguments": {"city": "Rome"}},
                                  {"name": "book", "arguments": {"nights": 2}}],
                   "order": "exact"}
    dataset = write_dataset(tmp_path / "ds", {
        "rome": entry("functional", "smoke", "safety", input="Rome please", expected="booked",
                      expected_trajectory=expectation),
        "paris": entry("functional", "smoke", "safety", input="Paris", expected="booked",
                       expected_trajectory=expectation)})
    config = config_for(tmp_path, dataset, SCORER_FUNCTIONAL="trajectory",
                        SCORER_SMOKE=tools_named, SCORER_SAFETY=used_tools)
    outcome = evaluate(config, lambda item, call: agent(item.input), Selection.parse("all"),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    functional = {i.id: (i.passed, i.rationale)
                  for i in outcome.scored.type_result("functional").items}
    assert functional == {
        "rome": (True, "called lookup, book: as expected (exact)"),
        "paris": (False, "expected tool 'lookup' #1 with {'city': 'Rome'}; got 'lookup' with "
                         "{'city': 'Paris'}")}
    assert all(i.passed for i in outcome.scored.type_result("smoke").items)
    assert all(i.passed for i in outcome.scored.type_result("safety").items)
