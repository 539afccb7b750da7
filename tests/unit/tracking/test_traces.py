"""Every entry a trace, every verdict an assessment.

What evalkit puts on the traces (which verdict on which entry, a series' stability on its last
replicate, a reviewer's feedback back into the report) is checked in memory; how MLflow holds
them is read back from a real store in tests/e2e/test_traces_stores.py. Every test here carries
the ``mlflow_api`` marker: CI runs them on the oldest and the newest MLflow supported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, Entry, EvalConfig, RunContext, Selection, evaluate
from evalkit.evaluation import evaluate_replicates
from evalkit.records import ItemCell, ItemResult, ReviewerVerdict, ScoredRun, TypeResult
from evalkit.reports import render_reports
from evalkit.tracking import Tracker, stability_assessment
from evalkit.tracking._memory import MemoryBackend
from evalkit.tracking._traces import (
    Assessment,
    TraceContext,
    build_traces,
    response_of,
    trace_id_for,
)
from tests.support.builders import entry, write_dataset
from tests.support.traces import (
    assert_memory_traces_match_results,
    memory_assessments,
)

pytestmark = pytest.mark.mlflow_api


FUNCTIONAL = {
    "ok": entry("functional", input={"q": 1}, expected="a"),
    "bad": entry("functional", expected="zzz"),
    "boom": entry("functional", input="explode"),
    "look": entry("functional", human_review=True, human_instructions="Check the tone.")}


def answer_or_explode(item: Entry, call: Call) -> str:
    if item.input == "explode":
        raise RuntimeError("component broke")
    return "a"


def functional_config(tmp_path: Path, **extra: Any) -> EvalConfig:
    dataset = write_dataset(tmp_path / "ds", FUNCTIONAL)
    return EvalConfig.from_constants({
        "EXPERIMENT_NAME": "traces/functional", "DATASET_PATH": str(dataset),
        "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0, **extra}, "eval.py")


# --- what evalkit puts on the traces (memory, fast) ---------------------------------------------

def test_each_entry_gets_its_verdicts_expectation_error_and_review(tmp_path: Path,
                                                                   tracker: Tracker) -> None:
    outcome = evaluate(functional_config(tmp_path), answer_or_explode,
                       Selection.parse("all", None, False),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert isinstance(tracker.backend, MemoryBackend)
    assert_memory_traces_match_results(tracker.backend, outcome.run_id)
    held = memory_assessments(tracker, outcome.run_id)
    (expectation,) = held["ok"]["expected_output"]
    assert (expectation.value, expectation.expectation) == ("a", True)
    (verdict,) = held["ok"]["functional"]
    assert (verdict.value, verdict.source_type, verdict.source_id) == (
        True, "CODE", "evalkit.exact")
    assert "error: RuntimeError: component broke" in held["boom"]["functional"][0].rationale
    # the entry flagged for review is tagged with its instructions; no human_review
    # feedback of evalkit's own stands beside the reviewer's (the UI's form would offer its
    # type, a string, instead of the Boolean)
    assert not any("human_review" in by_name for by_name in held.values())
    traces = {t.entry_id: t for t in tracker.backend.traces.traces[outcome.run_id].values()}
    assert {e: t.tags for e, t in traces.items() if t.tags} == {
        "look": {"human_review": "Check the tone."}}
    assert traces["ok"].input == {"q": 1}
    assert [(c.output, c.error) for c in traces["boom"].calls] == [
        (None, "RuntimeError: component broke")]


def test_a_reviewers_feedback_reaches_the_human_review_report(tmp_path: Path,
                                                               tracker: Tracker) -> None:
    outcome = evaluate(functional_config(tmp_path), answer_or_explode,
                       Selection.parse("all", None, False),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    checklist = (tmp_path / "reports" / "report-human-review.md").read_text(encoding="utf-8")
    # without feedback the report renders back byte-identical to the run's own
    assert render_reports(tracker.reader.fetch(outcome.run_id))[
        "report-human-review.md"] == checklist
    assert isinstance(tracker.backend, MemoryBackend)
    tracker.backend.feedback[outcome.run_id] = [ReviewerVerdict(
        "look", "bob@example.com", 1_780_000_000_000, "tone", "fail", "Too curt | rude")]
    reviewed = render_reports(tracker.reader.fetch(outcome.run_id))["report-human-review.md"]
    assert reviewed.startswith(checklist)
    assert "| look | bob@example.com | 20" in reviewed
    assert "| tone | fail | Too curt \\| rude |" in reviewed


def test_a_reviewers_boolean_is_the_entrys_human_review_verdict(tmp_path: Path,
                                                                 tracker: Tracker) -> None:
    """The human_review feedback a reviewer adds in the UI (Boolean) ticks the entry in the
    checklist, the latest one winning; other feedback and other entries stay pending."""
    outcome = evaluate(functional_config(tmp_path), answer_or_explode,
                       Selection.parse("all", None, False),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    checklist = (tmp_path / "reports" / "report-human-review.md").read_text(encoding="utf-8")
    assert "- **Reviewed:** 0 (0 pass, 0 fail); pending 1" in checklist
    assert "- [ ] **look** — Check the tone." in checklist
    assert isinstance(tracker.backend, MemoryBackend)
    context = TraceContext(outcome.run_id, "1", 0, {}, {})
    look = trace_id_for(outcome.run_id, "look")

    def review(value: Any, reviewer: str, name: str = "human_review") -> str:
        tracker.backend.trace_store().add_assessments(context, [(look, Assessment(
            name, value, "as seen", "HUMAN", reviewer))])
        return render_reports(tracker.reader.fetch(outcome.run_id))["report-human-review.md"]

    assert "- [ ] **look**" in review("fine", "ann", name="tone")  # not a verdict
    assert "- [ ] **look**" in review("maybe", "ann")  # neither pass nor fail
    failed = review(False, "bob")
    assert "- **Reviewed:** 1 (0 pass, 1 fail); pending 0" in failed
    assert "- [x] FAIL (bob) **look** — Check the tone." in failed
    assert "| look | bob | 1970-01-01 00:00 UTC | human\\_review | false | as seen |" in failed
    passed = review(True, "cy")
    assert "- **Reviewed:** 1 (1 pass, 0 fail); pending 0" in passed
    assert "- [x] PASS (cy) **look**" in passed


def test_trace_calls_false_writes_no_trace(tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {"e1": entry("functional")})
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "traces/off", "DATASET_PATH": str(dataset), "TRACE_CALLS": False,
        "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0}, "eval.py")
    outcome = evaluate(config, lambda item, call: "a", Selection("functional"),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert isinstance(tracker.backend, MemoryBackend)
    assert tracker.reader.stored(outcome.run_id).status == "FINISHED"
    assert tracker.backend.traces.traces == {} and tracker.backend.traces.assessments == {}


def test_stability_names_the_items_that_flip() -> None:
    right = ItemCell(True, True, ("a",), None)
    wrong = ItemCell(False, False, ("b",), None)
    assert stability_assessment("functional", [right, right]).value == "always right"
    assert stability_assessment("functional", [wrong, None]).value == "always wrong"
    changed = stability_assessment("functional", [right, wrong])
    assert (changed.name, changed.value, changed.rationale) == (
        "functional_stability", "changed", "r0: right (a); r1: wrong (b)")


def test_a_replicate_series_marks_each_item_stable_or_changed(tmp_path: Path,
                                                              tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", {"steady": entry("functional"),
                                              "flaky": entry("functional")})
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "traces/replicates", "DATASET_PATH": str(dataset),
        "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0}, "eval.py")

    def answer(item: Entry, call: Call) -> str:
        return "a" if item.id == "steady" or call.replicate == 0 else "b"

    outcome = evaluate_replicates(config, answer, Selection("functional"),
                                  RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    last = memory_assessments(tracker, outcome.replicates[-1].run_id)
    (steady,) = last["steady"]["functional_stability"]
    (flaky,) = last["flaky"]["functional_stability"]
    assert steady.value == "always right"
    assert (flaky.value, flaky.rationale) == ("changed", "r0: right (a); r1: wrong (b)")
    first = memory_assessments(tracker, outcome.replicates[0].run_id)
    assert set(first) == {"steady", "flaky"}
    assert all("functional_stability" not in held for held in first.values())
    # the parent: a trace per entry, each replicate's answer and the entry's stability
    assert isinstance(tracker.backend, MemoryBackend)
    parent = tracker.backend.traces.traces[outcome.parent_run_id]
    assert {t.entry_id: response_of(t) for t in parent.values()} == {
        "steady": {"r0": "a", "r1": "a"}, "flaky": {"r0": "a", "r1": "b"}}
    held = memory_assessments(tracker, outcome.parent_run_id)
    assert [(a.value, a.rationale) for a in held["flaky"]["functional_stability"]] == [
        ("changed", "r0: right (a); r1: wrong (b)")]
    assert [a.value for a in held["steady"]["functional_stability"]] == ["always right"]
    assert outcome.run_url.endswith(f"/runs/{outcome.parent_run_id}/traces")  # printed


def test_a_series_parent_shows_every_repeat_of_each_replicate(tmp_path: Path,
                                                              tracker: Tracker) -> None:
    """An entry of functional and repeatability is called REPEAT_COUNT times in each
    replicate (functional scores the first output): the parent's trace shows every repeat's
    answer, so the one that changed in replicate 1 is there to see; an entry called once
    shows its one answer."""
    dataset = write_dataset(tmp_path / "ds", {
        "capital": entry("functional", "repeatability", expected="Wellington"),
        "once": entry("functional", expected="Wellington")})
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "traces/repeats", "DATASET_PATH": str(dataset), "REPEAT_COUNT": 3,
        "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0,
        "EVAL_MIN_ACCURACY_REPEATABILITY": 0.0}, "eval.py")

    def answer(item: Entry, call: Call) -> str:
        return "Auckland" if (call.replicate, call.repeat) == (1, 2) else "Wellington"

    outcome = evaluate_replicates(config, answer, Selection("all"),
                                  RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert isinstance(tracker.backend, MemoryBackend)
    parent = tracker.backend.traces.traces[outcome.parent_run_id]
    assert {t.entry_id: response_of(t) for t in parent.values()} == {
        "capital": {"r0": ["Wellington"] * 3, "r1": ["Wellington", "Wellington", "Auckland"]},
        "once": {"r0": "Wellington", "r1": "Wellington"}}
    held = memory_assessments(tracker, outcome.parent_run_id)
    assert [a.value for a in held["capital"]["repeatability_stability"]] == ["changed"]
    assert [a.value for a in held["capital"]["functional_stability"]] == ["always right"]


def test_an_entry_gets_feedback_only_for_its_own_types(tmp_path: Path,
                                                       tracker: Tracker) -> None:
    """The "null" cells of MLflow's traces table are its rendering of a type column an entry
    has no feedback in (a cell with no assessment): evalkit writes no feedback for a type an
    entry is not in, and none without a value."""
    dataset = write_dataset(tmp_path / "ds", {"both": entry("functional", "smoke"),
                                              "one": entry("functional")})
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "traces/own", "DATASET_PATH": str(dataset),
        "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0}, "eval.py")
    outcome = evaluate(config, lambda e, c: "a", Selection("all"),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    held = memory_assessments(tracker, outcome.run_id)
    feedback = {entry_id: {name for name, found in names_.items()
                           if any(not a.expectation for a in found)}
                for entry_id, names_ in held.items()}
    assert feedback == {"both": {"functional", "smoke"}, "one": {"functional"}}
    assert all(a.value is not None for names_ in held.values() for found in names_.values()
               for a in found)


def test_a_bias_group_verdict_lands_on_every_member() -> None:
    group = ItemResult("g1", False, True, None, None, ("x", "y"), ("m1", "m2"), judge_reply="0")
    traces = build_traces(TraceContext("run", "1", 0, {"judge_model": "judge-x"}, {}),
                          ScoredRun((TypeResult("bias", "llm_judge", (group,)),)), [])
    assert [t.entry_id for t in traces] == ["m1", "m2"]
    for trace in traces:
        (verdict,) = trace.assessments
        assert (verdict.value, verdict.source_type, verdict.source_id) == (
            False, "LLM_JUDGE", "judge-x")
        assert verdict.rationale == ("FAIL; judge replied '0'; 2 distinct answer(s) of 2: "
                                     "'x' x1, 'y' x1; group g1 (m1, m2)")
        # results written before the judge's calls were kept: one span with the reply alone
        (judged,) = trace.judge_calls
        assert (judged.name, judged.messages, judged.call.reply) == ("judge: bias", None, "0")
