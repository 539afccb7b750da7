"""How MLflow holds the traces of a run, read back from a real store, local and team server:
one trace per entry at concurrency 16, spans and assessments, the judge's prompts. Every test
here carries the ``mlflow_api`` marker: CI runs them on the oldest and the newest MLflow
supported.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest

from evalkit import Call, Entry, EvalConfig, RunContext, Selection, evaluate
from evalkit.reports import render_reports
from evalkit.tracking import Tracker
from tests.support.builders import entry, write_dataset
from tests.support.traces import (
    assert_traces_match_results,
    traces_of,
)
from tests.unit.tracking.test_traces import answer_or_explode, functional_config

pytestmark = pytest.mark.mlflow_api


def component(item: Entry, call: Call) -> str:
    index = int(item.id[1:])
    return "a" if index % 4 else f"b{call.repeat % 2}"  # every 4th entry flips between two


# --- how MLflow holds them (a real store, slow) -------------------------------------------------

@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tests.support.team_server import TeamServer

    with TeamServer.create(tmp_path_factory.mktemp("team")) as server:
        yield server.tracking_uri


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
                       RunContext(tracker=Tracker(tracking_uri), runs_dir=tmp_path / "runs"))
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


def test_functional_traces_carry_expectation_error_and_review(
        tmp_path: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = evaluate(functional_config(tmp_path), answer_or_explode,
                       Selection.parse("all", None, False),
                       RunContext(tracker=Tracker(tracking_uri), runs_dir=tmp_path / "runs"))
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
                         RunContext(tracker=Tracker(tracking_uri), runs_dir=tmp_path / "runs"))
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
