"""What only a real MLflow store shows of one evaluation run in this process: its status, tags,
params and metrics as MLflow keeps them, the stepped histories, the artifact tree, the results
table as ``mlflow.log_table`` left it, the dataset as the run's input, the description, and no
secret anywhere a download reaches. (The same run against memory, and everything evalkit
decides about it, is ``tests/unit/evaluation/test_evaluation.py``.)

Slow (a real local store); marked ``mlflow_api``: CI runs it on the oldest and the newest
MLflow supported.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import mlflow
import pytest

from evalkit import RunContext, Selection, evaluate
from evalkit.evaluation import EvaluationOutcome
from evalkit.reports import render_reports
from evalkit.tracking import Tracker
from tests.support.builders import (
    MIXED_ENTRIES,
    RecordingComponent,
    assert_mixed_run_logged,
    config_for,
    entry,
    evaluation_with_a_secret,
    local_texts,
    write_dataset,
)

pytestmark = pytest.mark.mlflow_api

@pytest.fixture(scope="module")
def mixed(tracking_uri: str, tmp_path_factory: pytest.TempPathFactory
          ) -> tuple[EvaluationOutcome, Path, Any]:
    """One evaluation of every test type into the session's store: the outcome, its folder,
    and the run as MLflow's client reads it."""
    folder = tmp_path_factory.mktemp("mlflow-run")
    dataset = write_dataset(folder / "ds", MIXED_ENTRIES)
    config = config_for(folder, dataset, EVAL_MIN_F1=0.7)
    outcome = evaluate(config, RecordingComponent(), Selection.parse("all", None, False),
                       RunContext(tracker=Tracker(tracking_uri),
                                  runs_dir=folder / ".evalkit" / "runs"))
    return outcome, folder, mlflow.MlflowClient(tracking_uri).get_run(outcome.run_id)


def test_the_run_holds_status_tags_params_and_metrics(mixed: tuple[Any, Path, Any]) -> None:
    outcome, folder, run = mixed
    tags, params, metrics = run.data.tags, run.data.params, run.data.metrics
    assert run.info.status == "FINISHED" and run.info.end_time >= run.info.start_time
    # renamed at the end through the tag: MLflow's run name follows it
    assert run.info.run_name.startswith(f"{tags['verdict']} all ")
    assert tags["mlflow.runName"] == run.info.run_name and tags["mlflow.runColor"]
    assert tags["mlflow.user"] and run.info.user_id == tags["mlflow.user"]
    assert tags["mlflow.source.name"] == "test_eval.py"
    assert tags["eval_type"] == "all"
    assert_mixed_run_logged(tags, params, metrics, outcome.run_url, folder / "ds")
    assert outcome.run_url == (f"http://127.0.0.1:5000/#/experiments/{run.info.experiment_id}"
                               f"/runs/{outcome.run_id}")
    assert params["dataset_entries"] == "7"
    assert (metrics["calls"], metrics["entries"], metrics["repeat_count"]) == (13.0, 7.0, 4.0)
    assert metrics["functional_accuracy"] == 1.0 and metrics["functional_samples"] == 4.0
    assert "traces_missing" not in metrics


def test_the_description_is_mlflows_run_note(mixed: tuple[Any, Path, Any]) -> None:
    _, _, run = mixed
    note = run.data.tags["mlflow.note.content"]
    assert note.startswith("**evalkit verdict: PASS**\n\n"
                           "| test type | accuracy [95% CI] | n | threshold | verdict |\n")
    assert "| functional | 1.000 [" in note
    assert note.endswith("Reports (artifacts, `reports/`): `report-bias.md`, "
                         "`report-functional.md`, `report-smoke.md`, "
                         "`report-repeatability.md`, `summary.md`, "
                         "`report-human-review.md`\n")


def test_cumulative_series_are_stepped_histories(tracking_uri: str,
                                                 mixed: tuple[Any, Path, Any]) -> None:
    outcome, _, _ = mixed
    client = mlflow.MlflowClient(tracking_uri)
    history = client.get_metric_history(outcome.run_id, "functional_cumulative_accuracy")
    assert sorted(m.step for m in history) == [1, 2, 3, 4]
    assert [m.value for m in sorted(history, key=lambda m: m.step)] == [1.0, 1.0, 1.0, 1.0]
    f1 = client.get_metric_history(outcome.run_id, "repeatability_cumulative_f1")
    assert sorted(m.step for m in f1) == [1, 2]
    # one point per plain metric: a batch, not a history
    assert len(client.get_metric_history(outcome.run_id, "functional_accuracy")) == 1


def artifact_paths(client: mlflow.MlflowClient, run_id: str, path: str | None = None
                   ) -> set[str]:
    found: set[str] = set()
    for artifact in client.list_artifacts(run_id, path):
        found |= (artifact_paths(client, run_id, artifact.path) if artifact.is_dir
                  else {artifact.path})
    return found


def test_the_artifacts_and_the_results_table(tracking_uri: str, mixed: tuple[Any, Path, Any],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    outcome, folder, run = mixed
    client = mlflow.MlflowClient(tracking_uri)
    assert artifact_paths(client, outcome.run_id) == {
        "evalkit/run.json", "reports/report-functional.md", "reports/report-smoke.md",
        "reports/report-bias.md", "reports/report-repeatability.md",
        "reports/report-human-review.md", "reports/summary.md", "results/evaluation.json",
        "results/entries.json", "raw/raw-results.jsonl", *(
            f"reports/convergence-{t}.svg" for t in ("functional", "smoke", "bias",
                                                     "repeatability"))}
    downloaded = Path(client.download_artifacts(outcome.run_id, "raw/raw-results.jsonl",
                                                str(folder / "raw-download")))
    assert downloaded.read_bytes() == outcome.raw_results.read_bytes()
    for report in outcome.reports:
        served = Path(client.download_artifacts(outcome.run_id, f"reports/{report.name}",
                                                str(folder / "reports-download")))
        assert served.read_bytes() == report.read_bytes()
    # MLflow's own reader of a logged table (it finds the run through the process's URI)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking_uri)
    table = client.load_table(run.info.experiment_id, "results/entries.json",
                              run_ids=[outcome.run_id], extra_columns=["run_id"])
    assert len(table) == 4 + 1 + 1 + 2  # functional, smoke, bias group, repeatability
    assert {"test_type", "id", "passed", "correct", "outputs"} <= set(table.columns)
    assert set(table["run_id"]) == {outcome.run_id}
    assert sorted(table.loc[table["test_type"] == "repeatability", "id"]) == ["r1", "r2"]


def test_the_dataset_is_the_runs_input(mixed: tuple[Any, Path, Any]) -> None:
    _, folder, run = mixed
    (dataset,) = run.inputs.dataset_inputs
    assert (dataset.dataset.name, dataset.dataset.source_type) == ("ds", "local")
    assert json.loads(dataset.dataset.source) == {"uri": str((folder / "ds").resolve())}
    assert dataset.dataset.digest == run.data.params["dataset_digest"][:36]
    assert {(t.key, t.value) for t in dataset.tags} == {("mlflow.data.context", "evaluation")}


def test_reports_rerender_identically_from_the_store(tracking_uri: str,
                                                     mixed: tuple[Any, Path, Any]) -> None:
    outcome, _, _ = mixed
    rendered = render_reports(Tracker(tracking_uri).reader.fetch(outcome.run_id))
    assert rendered == {p.name: p.read_text(encoding="utf-8") for p in outcome.reports}


def test_secrets_in_the_environment_never_reach_mlflow_or_reports(
        tmp_path: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-" + uuid.uuid4().hex
    monkeypatch.setenv("PROVIDER_API_KEY", secret)
    outcome = evaluation_with_a_secret(tmp_path, Tracker(tracking_uri), secret)
    client = mlflow.MlflowClient(tracking_uri)
    downloaded = Path(client.download_artifacts(outcome.run_id, "", str(tmp_path / "art")))
    texts = [p.read_text() for p in downloaded.rglob("*") if p.is_file()]
    assert len(texts) >= 6  # every artifact: probe, reports, results, table, raw results
    texts += local_texts(tmp_path, outcome)
    run = client.get_run(outcome.run_id)
    texts += [json.dumps(run.data.params), json.dumps(run.data.tags)]
    texts += [json.dumps([(t.info.request_preview, t.info.response_preview,
                           [(a.name, a.value, a.rationale) for a in t.info.assessments],
                           [(s.inputs, s.outputs, s.attributes) for s in t.data.spans])
                          for t in client.search_traces(locations=[run.info.experiment_id],
                                                        run_id=outcome.run_id)],
                         default=str)]
    assert [text for text in texts if secret in text] == []
    assert any("[REDACTED:PROVIDER_API_KEY]" in text for text in texts)


def test_an_evaluation_writes_only_to_the_store_it_was_given(
        tmp_path: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tracker given its store explicitly (a notebook, a service) leaves the process's
    default store alone, even when the dataset is registered already (the second run)."""
    elsewhere = tmp_path / "elsewhere" / "mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{elsewhere}")
    dataset = write_dataset(tmp_path / "ds", {"e": entry("functional")})
    config = config_for(tmp_path, dataset)
    for _ in range(2):
        evaluate(config, RecordingComponent(), Selection.parse("all", None, False),
                 RunContext(tracker=Tracker(tracking_uri), runs_dir=tmp_path / ".evalkit" / "runs"))
    assert not elsewhere.exists()


def test_a_judged_run_links_its_prompts_in_the_store_it_was_given(
        tmp_path: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.openai_stub import OpenAIStub

    elsewhere = tmp_path / "elsewhere" / "mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{elsewhere}")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-prompts")
    dataset = write_dataset(tmp_path / "ds", {"e": entry("functional")})
    with OpenAIStub() as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        config = config_for(tmp_path, dataset, SCORER="llm_judge", JUDGE_MODEL="stub-judge")
        outcome = evaluate(config, RecordingComponent(), Selection.parse("all", None, False),
                           RunContext(tracker=Tracker(tracking_uri),
                                      runs_dir=tmp_path / ".evalkit" / "runs"))
    tags = mlflow.MlflowClient(tracking_uri).get_run(outcome.run_id).data.tags
    assert [p["name"] for p in json.loads(tags.get("mlflow.linkedPrompts", "[]"))] == [
        "evalkit-judge-expected"]
    assert not elsewhere.exists()


def test_a_metrics_latest_value_is_the_one_mlflow_picks(tracking_uri: str,
                                                        tmp_path: Path) -> None:
    """The journal (which renders a run's own reports, and a bundle's) and the store agree
    on each key's latest value: the highest (step, timestamp, value), not the last logged."""
    from evalkit.records import MetricPoint

    tracker = Tracker(tracking_uri)
    with tracker.run("mlflow/latest", "latest", {}, {}) as run:
        run.log([MetricPoint("later_step_first", 1.0, 5)])
        time.sleep(0.01)  # a later timestamp
        run.log([MetricPoint("later_step_first", 2.0, 0)])  # logged last, a lower step
        run.log([MetricPoint("same_step", 3.0, 2), MetricPoint("same_step", 1.5, 2)])
        run.log([MetricPoint("in_order", 1.0, 0), MetricPoint("in_order", 4.0, 1)])
        journal = run.journal.latest_metrics()
    stored = mlflow.MlflowClient(tracking_uri).get_run(run.id).data.metrics
    assert journal == {k: stored[k] for k in journal}
    assert journal == {"later_step_first": 1.0, "same_step": 3.0, "in_order": 4.0}
