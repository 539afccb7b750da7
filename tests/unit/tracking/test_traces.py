"""Every entry a trace, every verdict an assessment.

What evalkit puts on the traces (which verdict on which entry, a series' stability on its last
replicate, a reviewer's feedback back into the report) is checked in memory (fast); how MLflow
holds them (spans, assessments, the judge's prompts, the evaluation dataset) is read back from
a real store, local and team server (slow). Every test here carries the ``mlflow_api`` marker:
CI runs them on the oldest and the newest MLflow supported.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mlflow
import pytest

from evalkit import Call, Entry, EvalConfig, Selection, evaluate
from evalkit.records import ItemCell, ItemResult, ReviewerVerdict, ScoredRun, TypeResult
from evalkit.reports import render_reports
from evalkit.run import evaluate_replicates
from evalkit.tracking import MemoryBackend, Tracker, stability_assessment
from evalkit.tracking._traces import (
    Assessment,
    RunContext,
    build_traces,
    response_of,
    trace_id_for,
)
from tests.support.builders import entry, write_dataset
from tests.support.traces import (
    assert_memory_traces_match_results,
    assert_traces_match_results,
    memory_assessments,
    traces_of,
)

pytestmark = pytest.mark.mlflow_api


def component(item: Entry, call: Call) -> str:
    index = int(item.id[1:])
    return "a" if index % 4 else f"b{call.repeat % 2}"  # every 4th entry flips between two


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
                       Selection.parse("all", None, False), tracker=tracker,
                       runs_dir=tmp_path / "runs")
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
                       Selection.parse("all", None, False), tracker=tracker,
                       runs_dir=tmp_path / "runs")
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
                       Selection.parse("all", None, False), tracker=tracker,
                       runs_dir=tmp_path / "runs")
    checklist = (tmp_path / "reports" / "report-human-review.md").read_text(encoding="utf-8")
    assert "- **Reviewed:** 0 (0 pass, 0 fail); pending 1" in checklist
    assert "- [ ] **look** — Check the tone." in checklist
    assert isinstance(tracker.backend, MemoryBackend)
    context = RunContext(outcome.run_id, "1", 0, {}, {})
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
                       tracker=tracker, runs_dir=tmp_path / "runs")
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
                                  tracker=tracker, runs_dir=tmp_path / "runs")
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

    outcome = evaluate_replicates(config, answer, Selection("all"), tracker=tracker,
                                  runs_dir=tmp_path / "runs")
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
    outcome = evaluate(config, lambda e, c: "a", Selection("all"), tracker=tracker,
                       runs_dir=tmp_path / "runs")
    held = memory_assessments(tracker, outcome.run_id)
    feedback = {entry_id: {name for name, found in names_.items()
                           if any(not a.expectation for a in found)}
                for entry_id, names_ in held.items()}
    assert feedback == {"both": {"functional", "smoke"}, "one": {"functional"}}
    assert all(a.value is not None for names_ in held.values() for found in names_.values()
               for a in found)


def test_a_bias_group_verdict_lands_on_every_member() -> None:
    group = ItemResult("g1", False, True, None, None, ("x", "y"), ("m1", "m2"), judge_reply="0")
    traces = build_traces(RunContext("run", "1", 0, {"judge_model": "judge-x"}, {}),
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


# --- how MLflow holds them (a real store, slow) -------------------------------------------------

@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tests.support.team_server import TeamServer

    with TeamServer.create(tmp_path_factory.mktemp("team")) as server:
        yield server.tracking_uri


@pytest.mark.slow
@pytest.mark.parametrize("store", ["local", "team server"])
def test_200_entries_x_5_repeats_at_concurrency_16_give_one_trace_each(
        tmp_path: Path, request: pytest.FixtureRequest, store: str, tracking_uri: str) -> None:
    # (the local store asked for by name: conftest makes it the process default only then)
    if store == "team server":
        tracking_uri = request.getfixturevalue("team")
    dataset = write_dataset(tmp_path / "ds", {f"e{i:03d}": entry("repeatability")
                                              for i in range(200)})
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "traces/many", "DATASET_PATH": str(dataset),
        "REPORTS_DIR": str(tmp_path / "reports"), "REPEAT_COUNT": 5,
        "EVAL_MIN_ACCURACY_REPEATABILITY": 0.0, "MAX_CONCURRENCY": 16}, "eval.py")
    outcome = evaluate(config, component, Selection("repeatability"),
                       tracker=Tracker(tracking_uri), runs_dir=tmp_path / "runs")
    assert_traces_match_results(tracking_uri, outcome.run_id)
    traces = traces_of(tracking_uri, outcome.run_id)
    assert len(traces) == 200
    flipper = next(t for t in traces if t.info.tags["evalkit.entry_id"] == "e004")
    assert [s.name for s in flipper.data.spans] == ["e004", *(f"call {r}" for r in range(5))]
    assert flipper.data.spans[0].outputs == ["b0", "b1", "b0", "b1", "b0"]
    feedback = flipper.search_assessments("repeatability")[0]
    assert feedback.value is False and feedback.source.source_type == "CODE"
    assert "2 distinct answer(s) of 5: 'b0' x3, 'b1' x2" in feedback.rationale
    assert "traces_missing" not in mlflow.MlflowClient(tracking_uri).get_run(
        outcome.run_id).data.metrics


@pytest.mark.slow
def test_functional_traces_carry_expectation_error_and_review(
        tmp_path: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = evaluate(functional_config(tmp_path), answer_or_explode,
                       Selection.parse("all", None, False), tracker=Tracker(tracking_uri),
                       runs_dir=tmp_path / "runs")
    assert_traces_match_results(tracking_uri, outcome.run_id)
    traces = {t.info.tags["evalkit.entry_id"]: t for t in traces_of(tracking_uri,
                                                                  outcome.run_id)}
    ok = traces["ok"]
    assert ok.info.tags["mlflow.traceName"] == "ok"
    assert ok.data.spans[0].inputs == {"q": 1}
    assert ok.data.spans[0].outputs == "a"
    assert ok.search_assessments("expected_output")[0].value == "a"
    verdict = ok.search_assessments("functional")[0]
    assert (verdict.value, verdict.source.source_type, verdict.source.source_id) == (
        True, "CODE", "evalkit.exact")
    assert verdict.metadata["mlflow.assessment.sourceRunId"] == outcome.run_id
    call = ok.data.spans[1]
    assert (call.name, call.parent_id, call.attributes["evalkit.repeat"]) == (
        "call 0", ok.data.spans[0].span_id, 0)
    boom = traces["boom"]
    assert boom.info.state.value == "ERROR"
    assert "error: RuntimeError: component broke" in boom.search_assessments(
        "functional")[0].rationale
    # the review is asked by a tag; the only human_review feedback is the reviewer's
    assert traces["look"].info.tags["human_review"] == "Check the tone."
    assert "human_review" not in ok.info.tags
    assert not [t for t in traces.values() if t.search_assessments("human_review")]

    # a reviewer's verdict added in the UI (MLflow's public API, as the UI does) reaches
    # report-human-review.md; the rest stays identical
    from mlflow.entities import AssessmentSource

    tracker = Tracker(tracking_uri)
    checklist = (tmp_path / "reports" / "report-human-review.md").read_text(encoding="utf-8")
    assert render_reports(tracker.reader.fetch(outcome.run_id))[
        "report-human-review.md"] == checklist
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking_uri)  # where log_feedback writes
    mlflow.log_feedback(
        trace_id=traces["look"].info.trace_id, name="tone", value="fail",
        rationale="Too curt | rude",
        source=AssessmentSource(source_type="HUMAN", source_id="bob@example.com"))
    reviewed = render_reports(tracker.reader.fetch(outcome.run_id))["report-human-review.md"]
    assert reviewed.startswith(checklist)
    assert "| look | bob@example.com | 20" in reviewed
    assert "| tone | fail | Too curt \\| rude |" in reviewed
    # the reviewer's Boolean, as the UI's "+ Add feedback" form writes it, is the verdict
    mlflow.log_feedback(
        trace_id=traces["look"].info.trace_id, name="human_review", value=True,
        rationale="polite", source=AssessmentSource(source_type="HUMAN",
                                                    source_id="ann@example.com"))
    (verdict,) = mlflow.MlflowClient(tracking_uri).get_trace(
        traces["look"].info.trace_id).search_assessments("human_review")
    assert (verdict.value, verdict.source.source_type) == (True, "HUMAN")
    decided = render_reports(tracker.reader.fetch(outcome.run_id))["report-human-review.md"]
    assert "- **Reviewed:** 1 (1 pass, 0 fail); pending 0" in decided
    assert "- [x] PASS (ann@example.com) **look** — Check the tone." in decided

    # the dataset, registered as an evaluation dataset of the experiment
    params = mlflow.MlflowClient(tracking_uri).get_run(outcome.run_id).data.params
    (registered,) = mlflow.MlflowClient(tracking_uri).search_datasets(
        filter_string=f"name = 'ds-{params['dataset_digest'][:12]}'")
    records = {r.tags["entry_id"]: r for r in registered.records}
    assert set(records) == {"ok", "bad", "boom", "look"}
    assert records["ok"].inputs == {"entry_id": "ok", "input": {"q": 1}}
    assert records["bad"].expectations == {"expected_output": "zzz"}


@pytest.mark.slow
def test_a_judged_run_registers_its_prompts_and_traces_the_judge(
        tmp_path: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.openai_stub import OpenAIStub

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-traces")
    # the process's own store too, as for eval.py: MLflow links a prompt to a run through the
    # process's tracking store (tests/e2e/test_mlflow_run.py holds the case where they differ)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking_uri)
    dataset = write_dataset(tmp_path / "ds", {"e1": entry("functional"),
                                              "e2": entry("repeatability")})
    with OpenAIStub() as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        config = EvalConfig.from_constants({
            "EXPERIMENT_NAME": "traces/judged", "DATASET_PATH": str(dataset),
            "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0,
            "EVAL_MIN_ACCURACY_REPEATABILITY": 0.0, "REPEAT_COUNT": 2, "SCORER": "llm_judge",
            "JUDGE_MODEL": "stub-judge"}, "eval.py")
        runs = [evaluate(config, lambda item, call: "a", Selection.parse("all", None, False),
                         tracker=Tracker(tracking_uri), runs_dir=tmp_path / "runs")
                for _ in range(2)]
    client = mlflow.MlflowClient(tracking_uri)
    for outcome in runs:  # the same content twice: one version, linked to both runs
        linked = json.loads(client.get_run(outcome.run_id).data.tags["mlflow.linkedPrompts"])
        assert sorted((p["name"], str(p["version"])) for p in linked) == [
            ("evalkit-judge-expected", "1"), ("evalkit-judge-repeatability", "1")]
    template = client.load_prompt("prompts:/evalkit-judge-expected/1").template
    assert "EXPECTED: {{expected}}" in template[1]["content"]
    traces = {t.info.tags["evalkit.entry_id"]: t for t in traces_of(tracking_uri,
                                                                  runs[0].run_id)}
    judge = traces["e1"].data.spans[-1]
    assert (judge.name, judge.span_type, judge.attributes["mlflow.llm.model"],
            judge.attributes["evalkit.prompt_use"], judge.outputs) == (
        "judge: functional", "CHAT_MODEL", "stub-judge", "expected", "1")
    system, user = judge.inputs["messages"]  # what was sent, as the UI shows a chat
    assert system["role"] == "system" and "EXPECTED: " in user["content"]
    assert judge.attributes["mlflow.message.format"] == "openai"
    usage = judge.attributes["mlflow.chat.tokenUsage"]  # the stub counts words
    assert usage["output_tokens"] == 1 and usage["total_tokens"] == usage["input_tokens"] + 1
    verdict = traces["e2"].search_assessments("repeatability")[0]
    assert (verdict.source.source_type, verdict.source.source_id) == ("LLM_JUDGE", "stub-judge")
