"""Every entry a trace, every verdict an assessment: read back from a real MLflow store."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mlflow
import pytest
from mlflow.entities import Feedback

from evalkit import Call, Entry, EvalConfig, Selection, evaluate
from evalkit.records import EVALUATION_ARTIFACT, ItemResult, ScoredRun
from evalkit.reports import render_reports
from evalkit.run import evaluate_replicates
from evalkit.tracking import Tracker
from evalkit.tracking._traces import stability_verdict
from tests.conftest import entry, write_dataset


def traces_of(tracking_uri: str, run_id: str) -> list[Any]:
    """Every trace the store links to the run, with its spans and assessments."""
    client = mlflow.MlflowClient(tracking_uri)
    experiment = client.get_run(run_id).info.experiment_id
    found, token = [], None
    while True:
        page = client.search_traces(locations=[experiment], run_id=run_id, max_results=500,
                                    page_token=token)
        found += page
        token = page.token
        if not token:
            return found


def assert_traces_match_results(tracking_uri: str, run_id: str) -> None:
    """One trace per entry; each per-item result of ``results/evaluation.json`` is a feedback
    on the trace of each entry it covers, with the verdict as its value."""
    client = mlflow.MlflowClient(tracking_uri)
    scored = ScoredRun.from_json(json.loads(Path(client.download_artifacts(
        run_id, EVALUATION_ARTIFACT)).read_text(encoding="utf-8")))
    traces = {t.info.tags["evalkit.entry_id"]: t for t in traces_of(tracking_uri, run_id)}
    entries = {e for r in scored.types for i in r.items for e in i.entry_ids}
    assert set(traces) == entries
    expected = Counter((e, r.test_type, i.passed) for r in scored.types for i in r.items
                       for e in i.entry_ids)
    held = Counter((entry_id, a.name, a.value) for entry_id, t in traces.items()
                   for a in t.info.assessments if a.feedback is not None
                   and a.name in {r.test_type for r in scored.types})
    assert held == expected


def component(item: Entry, call: Call) -> str:
    index = int(item.id[1:])
    return "a" if index % 4 else f"b{call.repeat % 2}"  # every 4th entry flips between two


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tools.team_server import TeamServer

    with TeamServer.create(tmp_path_factory.mktemp("team")) as server:
        yield server.tracking_uri


@pytest.mark.slow
@pytest.mark.parametrize("store", ["local", "team server"])
def test_200_entries_x_5_repeats_at_concurrency_16_give_one_trace_each(
        tmp_path: Path, request: pytest.FixtureRequest, store: str) -> None:
    tracking_uri = request.getfixturevalue("tracking_uri" if store == "local" else "team")
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


def test_functional_traces_carry_expectation_error_and_review(tmp_path: Path,
                                                              tracking_uri: str) -> None:
    dataset = write_dataset(tmp_path / "ds", {
        "ok": entry("functional", input={"q": 1}, expected="a"),
        "bad": entry("functional", expected="zzz"),
        "boom": entry("functional", input="explode"),
        "look": entry("functional", human_review=True, human_instructions="Check the tone.")})
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "traces/functional", "DATASET_PATH": str(dataset),
        "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0}, "eval.py")

    def answer(item: Entry, call: Call) -> str:
        if item.input == "explode":
            raise RuntimeError("component broke")
        return "a"

    outcome = evaluate(config, answer, Selection.parse("all", None, False),
                       tracker=Tracker(tracking_uri), runs_dir=tmp_path / "runs")
    assert_traces_match_results(tracking_uri, outcome.run_id)
    traces = {t.info.tags["evalkit.entry_id"]: t for t in traces_of(tracking_uri,
                                                                  outcome.run_id)}
    ok = traces["ok"]
    assert ok.data.spans[0].inputs == {"q": 1}
    assert ok.search_assessments("expected_output")[0].value == "a"
    assert ok.search_assessments("functional")[0].value is True
    boom = traces["boom"]
    assert boom.info.state.value == "ERROR"
    assert "error: RuntimeError: component broke" in boom.search_assessments(
        "functional")[0].rationale
    review = traces["look"].search_assessments("human_review")[0]
    assert (review.value, review.rationale) == ("pending", "Check the tone.")

    # a reviewer's verdict in the UI reaches report-human-review.md; the rest stays identical
    tracker = Tracker(tracking_uri)
    checklist = (tmp_path / "reports" / "report-human-review.md").read_text(encoding="utf-8")
    assert render_reports(tracker.fetch(outcome.run_id))["report-human-review.md"] == checklist
    from mlflow.entities import AssessmentSource
    mlflow.MlflowClient(tracking_uri)._tracing_client.log_assessment(
        traces["look"].info.trace_id, Feedback(
            name="tone", value="fail", rationale="Too curt | rude",
            source=AssessmentSource(source_type="HUMAN", source_id="bob@example.com")))
    reviewed = render_reports(tracker.fetch(outcome.run_id))["report-human-review.md"]
    assert reviewed.startswith(checklist)
    assert "| look | bob@example.com | 20" in reviewed
    assert "| tone | fail | Too curt \\| rude |" in reviewed

    run = mlflow.MlflowClient(tracking_uri).get_run(outcome.run_id)
    assert run.info.run_name.startswith("all-")
    assert run.data.tags["mlflow.user"] and run.info.user_id == run.data.tags["mlflow.user"]
    (dataset,) = run.inputs.dataset_inputs
    assert (dataset.dataset.name, dataset.dataset.source_type) == ("ds", "local")
    assert str(tmp_path / "ds") in dataset.dataset.source
    assert dataset.dataset.digest == run.data.params["dataset_digest"][:36]
    (registered,) = mlflow.MlflowClient(tracking_uri).search_datasets(
        filter_string=f"name = 'ds-{run.data.params['dataset_digest'][:12]}'")
    records = {r.tags["entry_id"]: r for r in registered.records}
    assert set(records) == {"ok", "bad", "boom", "look"}
    assert records["ok"].inputs == {"entry_id": "ok", "input": {"q": 1}}
    assert records["bad"].expectations == {"expected_output": "zzz"}
    assert run.data.tags["mlflow.note.content"] == (
        "**evalkit verdict: PASS**\n\n"
        "| test type | accuracy [95% CI] | n | threshold | verdict |\n|---|---|---|---|---|\n"
        "| functional | 0.500 [0.150, 0.850] | 4 | >= 0 | pass |\n\n"
        "Reports (artifacts, `reports/`): `report-functional.md`, `summary.md`, "
        "`report-human-review.md`\n")


def test_trace_calls_false_writes_no_trace(tmp_path: Path, tracking_uri: str) -> None:
    dataset = write_dataset(tmp_path / "ds", {"e1": entry("functional")})
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "traces/off", "DATASET_PATH": str(dataset), "TRACE_CALLS": False,
        "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0}, "eval.py")
    outcome = evaluate(config, lambda item, call: "a", Selection("functional"),
                       tracker=Tracker(tracking_uri), runs_dir=tmp_path / "runs")
    assert traces_of(tracking_uri, outcome.run_id) == []


def test_stability_names_the_items_that_flip() -> None:
    right = {"correct": True, "outputs": ["a"], "error": None}
    wrong = {"correct": False, "outputs": ["b"], "error": None}
    assert stability_verdict("functional", [right, right]).value == "always right"
    assert stability_verdict("functional", [wrong, None]).value == "always wrong"
    changed = stability_verdict("functional", [right, wrong])
    assert (changed.name, changed.value, changed.rationale) == (
        "functional_stability", "changed", "r0: right (a); r1: wrong (b)")


def test_a_replicate_series_marks_each_item_stable_or_changed(tmp_path: Path,
                                                              tracking_uri: str) -> None:
    dataset = write_dataset(tmp_path / "ds", {"steady": entry("functional"),
                                              "flaky": entry("functional")})
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "traces/replicates", "DATASET_PATH": str(dataset),
        "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0}, "eval.py")

    def answer(item: Entry, call: Call) -> str:
        return "a" if item.id == "steady" or call.replicate == 0 else "b"

    outcome = evaluate_replicates(config, answer, Selection("functional"),
                                  tracker=Tracker(tracking_uri), runs_dir=tmp_path / "runs")
    last = outcome.replicates[-1].run_id
    traces = {t.info.tags["evalkit.entry_id"]: t for t in traces_of(tracking_uri, last)}
    steady = traces["steady"].search_assessments("functional_stability")[0]
    flaky = traces["flaky"].search_assessments("functional_stability")[0]
    assert steady.value == "always right"
    assert (flaky.value, flaky.rationale) == ("changed", "r0: right (a); r1: wrong (b)")
    assert traces_of(tracking_uri, outcome.replicates[0].run_id)[0].search_assessments(
        "functional_stability") == []


def test_a_bias_group_verdict_lands_on_every_member() -> None:
    from evalkit.records import TypeResult
    from evalkit.tracking._traces import RunContext, build_traces

    group = ItemResult("g1", False, True, None, None, ("x", "y"), ("m1", "m2"), judge_reply="0")
    traces = build_traces(RunContext("run", "1", 0, {"judge_model": "judge-x"}, {}),
                          ScoredRun((TypeResult("bias", "llm_judge", (group,)),)), [])
    assert [t.entry_id for t in traces] == ["m1", "m2"]
    for trace in traces:
        (verdict,) = trace.verdicts
        assert (verdict.value, verdict.source_type, verdict.source_id) == (
            False, "LLM_JUDGE", "judge-x")
        assert verdict.rationale == ("FAIL; judge replied '0'; 2 distinct answer(s) of 2: "
                                     "'x' x1, 'y' x1; group g1 (m1, m2)")
        assert trace.judge_replies == [("bias", "0")]


def test_a_judged_run_registers_its_prompts_and_traces_the_judge(
        tmp_path: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.openai_stub import OpenAIStub

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-traces")
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
    assert (judge.name, judge.attributes["evalkit.judge_model"],
            judge.attributes["evalkit.prompt_use"], judge.outputs) == (
        "judge expected 0", "stub-judge", "expected", "1")
    verdict = traces["e2"].search_assessments("repeatability")[0]
    assert (verdict.source.source_type, verdict.source.source_id) == ("LLM_JUDGE", "stub-judge")
