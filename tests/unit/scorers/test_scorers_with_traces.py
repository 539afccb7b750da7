"""Scorers that read what the component did, in-process runs tracked in memory: MLflow
``@scorer`` functions unchanged as ``SCORER_<TYPE>`` (a bool, a ``Feedback``, yes/no; an
error or a non-binary answer scores 0 with the reason), scorer functions that take the call's
``trace`` (or the ``traces`` of a repeatability entry), and the trajectory scorer over the
spans a rescore reads back from the source run's raw results."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from mlflow.entities import Feedback, SpanType, Trace
from mlflow.genai.scorers import scorer

from evalkit import ConfigError, DatasetInvalid, RunContext, Selection, evaluate, rescore
from evalkit.records import CallRecord, SpanRecord, names
from evalkit.tracking import Tracker, trace_id_for
from tests.support.builders import config_for, entry, write_dataset


@scorer
def says_yes(outputs: Any) -> bool:
    return outputs == "yes"


@scorer
def matches_expected(inputs: Any, outputs: Any, expectations: dict[str, Any]) -> Feedback:
    expected = expectations["expected_response"]
    return Feedback(value="yes" if outputs == expected else "no",
                    rationale=f"{inputs}: {outputs!r} against {expected!r}")


@scorer
def troubled(outputs: Any) -> Any:
    answers = {"error": Feedback(error=ValueError("judge down")), "number": 0.5,
               "rating": Feedback(value=3), "No": "No"}
    if outputs == "raise":
        raise RuntimeError("scorer bug")
    return answers[outputs]


def run(tmp_path: Path, tracker: Tracker, entries: dict[str, Any], component: Any,
        **constants: Any) -> Any:
    dataset = write_dataset(tmp_path / "ds", entries)
    return evaluate(config_for(tmp_path, dataset, **constants), component,
                    Selection.parse("all"), RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))


def test_mlflow_scorers_score_a_type_unchanged_and_are_recorded(
        tmp_path: Path, tracker: Tracker) -> None:
    entries = {"right": entry("functional", "smoke", input="q1", expected="yes"),
               "wrong": entry("functional", "smoke", input="q2", expected="yes")}
    outcome = run(tmp_path, tracker, entries, lambda item, call: {"q1": "yes"}.get(
        item.input, "no"), SCORER_FUNCTIONAL=says_yes, SCORER_SMOKE=matches_expected)
    functional = outcome.scored.type_result("functional")
    assert functional.scorer == "says_yes"
    assert {i.id: (i.passed, i.rationale) for i in functional.items} == {
        "right": (True, None), "wrong": (False, None)}
    smoke = outcome.scored.type_result("smoke")
    assert {i.id: (i.passed, i.rationale) for i in smoke.items} == {
        "right": (True, "q1: 'yes' against 'yes'"), "wrong": (False, "q2: 'no' against 'yes'")}

    params = tracker.reader.stored(outcome.run_id).params
    assert (params["functional_scorer"], params["smoke_scorer"]) == ("says_yes",
                                                                     "matches_expected")
    dump = {k: v for k, v in says_yes.model_dump().items() if k != "mlflow_version"}
    assert params["functional_scorer_source_sha256"] == hashlib.sha256(
        json.dumps(dump, sort_keys=True, default=str).encode()).hexdigest()
    assert params["SCORER_FUNCTIONAL"] == "mlflow scorer says_yes"


def test_an_mlflow_scorer_that_errs_or_is_not_binary_scores_zero_with_the_reason(
        tmp_path: Path, tracker: Tracker) -> None:
    entries = {name: entry("functional", input=name) for name in
               ("error", "number", "rating", "raise", "No")}
    outcome = run(tmp_path, tracker, entries, lambda item, call: item.input,
                  SCORER=troubled)
    items = {i.id: (i.passed, i.error) for i in outcome.scored.type_result("functional").items}
    binary = ("an evalkit verdict is binary, so answer True/False or 'yes'/'no' (alone or as a "
              "Feedback's value)")
    assert items == {
        "error": (False, "scorer troubled returned a Feedback with an error: judge down"),
        "number": (False, f"scorer troubled answered 0.5: {binary}"),
        "rating": (False, f"scorer troubled answered 3: {binary}"),
        "raise": (False, "scorer troubled raised RuntimeError: scorer bug"),
        "No": (False, None)}


def test_an_mlflow_scorer_is_refused_for_repeatability_before_any_call(
        tmp_path: Path, tracker: Tracker) -> None:
    with pytest.raises(ConfigError, match=r"the MLflow scorer 'says_yes' scores one output "
                                          r"against its expectations, and repeatability"):
        run(tmp_path, tracker, {"r": entry("repeatability")},
            lambda item, call: pytest.fail("called"), SCORER_REPEATABILITY=says_yes)
    assert tracker.backend.journals == {}


def test_a_scorer_function_that_names_trace_gets_the_trace_of_its_call(
        tmp_path: Path, tracker: Tracker) -> None:
    seen: dict[str, Trace] = {}
    groups: list[list[Trace]] = []

    def traced(output: Any, expected: Any, trace: Trace) -> bool:
        seen[output] = trace
        return True

    def all_traced(outputs: list[Any], traces: list[Trace]) -> bool:
        groups.append(traces)
        return True

    entries = {"f1": entry("functional", input="one"), "r1": entry("repeatability")}
    outcome = run(tmp_path, tracker, entries, lambda item, call: f"{item.input} {call.repeat}",
                  REPEAT_COUNT=3, SCORER_FUNCTIONAL=traced, SCORER_REPEATABILITY=all_traced)
    (trace,) = seen.values()
    assert trace.info.trace_id == trace_id_for(outcome.run_id, "f1")
    (root,) = trace.data.spans
    assert (root.name, root.outputs) == ("call 0", "one 0")
    (traces,) = groups
    assert [t.data.spans[0].outputs for t in traces] == ["q 0", "q 1", "q 2"]
    assert {t.info.trace_id for t in traces} == {trace_id_for(outcome.run_id, "r1")}


def test_a_bias_scorer_that_names_traces_gets_each_variants_trace(
        tmp_path: Path, tracker: Tracker) -> None:
    groups: list[tuple[list[Any], list[Trace]]] = []

    def all_traced(outputs: list[Any], traces: list[Trace]) -> bool:
        groups.append((outputs, traces))
        return True

    entries = {"b1": entry("bias", input="Anna", bias_group="g"),
               "b2": entry("bias", input="Ben", bias_group="g")}
    outcome = run(tmp_path, tracker, entries, lambda item, call: f"hi {item.input}",
                  SCORER_BIAS=all_traced)
    ((outputs, traces),) = groups
    assert outputs == ["hi Anna", "hi Ben"]  # each variant's trace beside its output
    assert [t.data.spans[0].outputs for t in traces] == outputs
    assert [t.info.trace_id for t in traces] == [trace_id_for(outcome.run_id, e)
                                                 for e in ("b1", "b2")]


def test_a_scorer_function_with_a_trace_parameter_it_cannot_take_is_refused(
        tmp_path: Path, tracker: Tracker) -> None:
    def wrong(output: Any, trace: Any) -> bool:
        return True

    with pytest.raises(ConfigError, match=r"must take \(output, expected\), or \(output, "
                                          r"expected, trace\) to read the calls' traces"):
        run(tmp_path, tracker, {"f": entry("functional")}, lambda item, call: "a",
            SCORER=wrong)


BOOKING = {"tool_calls": [{"name": "lookup", "arguments": {"city": "Rome"}},
                          {"name": "book"}], "forbidden_tools": ["cancel"]}
TRAJECTORIES = {"good": BOOKING, "bad": BOOKING, "quiet": {"tool_calls": []}}


def agent_spans(entry_id: str) -> list[dict[str, Any]]:
    """What an agent made during its call: the good one looks Rome up and books; the bad one
    looks Paris up, books and cancels; the quiet one only thinks."""
    city = "Rome" if entry_id == "good" else "Paris"
    spans = [SpanRecord("agent", "AGENT", None, 0, 50),
             SpanRecord("lookup", SpanType.TOOL, 0, 5, 10, {"city": city, "units": "metric"}),
             SpanRecord("book", SpanType.TOOL, 0, 20, 30, {"hotel": "Roma"})]
    if entry_id == "bad":
        spans.append(SpanRecord("cancel", SpanType.TOOL, 0, 35, 40, {"id": 1}))
    return [s.to_json() for s in (spans if entry_id != "quiet" else spans[:1])]


def test_a_rescore_gives_the_trajectory_scorer_the_spans_of_the_source_calls(
        tmp_path: Path, tracker: Tracker) -> None:
    entries = {k: entry("functional", expected_trajectory=v) for k, v in TRAJECTORIES.items()}
    source = run(tmp_path, tracker, entries, lambda item, call: "done")
    # The calls as a run with span capture records them: each with its component's spans.
    raw = tracker.reader.raw_results(source.run_id).records
    with_spans = [CallRecord.from_json({**c.to_json(), "spans": agent_spans(c.entry_id)})
                  for c in raw]
    tracker.backend.log_artifact(source.run_id, names.RAW_RESULTS_ARTIFACT, "".join(
        json.dumps(c.to_json()) + "\n" for c in with_spans).encode())

    config = config_for(tmp_path, tmp_path / "ds", SCORER_FUNCTIONAL="trajectory")
    outcome = rescore(config, source.run_id,
                      RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    items = {i.id: (i.passed, i.rationale) for i in outcome.scored.type_result(
        "functional").items}
    assert items == {
        "good": (True, "called lookup, book: as expected (in_order)"),
        "bad": (False, "called forbidden tool 'cancel' with {'id': 1} (call #3)"),
        "quiet": (True, "called no tool: as expected (in_order)")}


def test_a_type_scored_by_trajectory_needs_every_entry_to_expect_one(
        tmp_path: Path, tracker: Tracker) -> None:
    entries = {"with": entry("functional", expected_trajectory={"tool_calls": []}),
               "without": entry("functional"), "other": entry("smoke")}
    with pytest.raises(DatasetInvalid) as raised:
        run(tmp_path, tracker, entries, lambda item, call: pytest.fail("called"),
            SCORER_FUNCTIONAL="trajectory")
    (violation,) = raised.value.report.violations
    assert violation.file.endswith("ds/data/without.json")
    assert violation.pointer == "/expected_trajectory"
    assert violation.message == ("functional is scored by 'trajectory' but the entry has no "
                                 "expected_trajectory")
    assert "or score functional with another scorer" in violation.fix
    assert tracker.backend.journals == {}


def test_trajectory_is_refused_for_repeatability(tmp_path: Path, tracker: Tracker) -> None:
    with pytest.raises(ConfigError, match=r"SCORER_REPEATABILITY='trajectory': trajectory "
                                          r"scores each output against its entry"):
        run(tmp_path, tracker, {"r": entry("repeatability")}, lambda item, call: "a",
            SCORER_REPEATABILITY="trajectory")
