"""The private MLflow interfaces evalkit uses (``evalkit/tracking/_mlflow_private.py``) against a
real local store and a real MLflow server: spans, assessments, dataset records, prompts, quiet
run URLs, and spans written again once a server is back.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalkit.tracking import _mlflow_private as private
from evalkit.tracking._traces import trace_id_for

pytestmark = pytest.mark.mlflow_api


# --- what they do, against real stores (slow) ---------------------------------------------------

def new_run(client: Any) -> tuple[str, str]:
    """A fresh experiment and a run in it: (experiment id, run id)."""
    experiment_id = client.create_experiment(f"private/{uuid.uuid4().hex[:8]}")
    return experiment_id, client.create_run(experiment_id).info.run_id


def entry_spans(run_id: str, entry_id: str, error: str | None = None) -> list[Any]:
    trace_id = trace_id_for(run_id, entry_id)
    start = 1_700_000_000_000 * 1_000_000
    return [private.finished_span(private.EndedSpan(
                trace_id, entry_id, None, start, start + 5_000_000, "CHAIN",
                {"inputs": {"q": entry_id}, "outputs": "a"}, error,
                trace_tags={"mlflow.traceName": entry_id, "evalkit.entry_id": entry_id})),
            private.finished_span(private.EndedSpan(
                trace_id, "call 0", entry_id, start, start + 4_000_000, "UNKNOWN",
                {"inputs": {"q": entry_id}, "outputs": "a", "evalkit.repeat": 0}, error))]


def test_spans_written_with_log_spans_make_traces_with_their_tags(tracking_uri: str) -> None:
    import mlflow

    client = mlflow.MlflowClient(tracking_uri)
    experiment_id, run_id = new_run(client)
    tracing = private.tracing_client(tracking_uri)
    assert private.is_sql_store(tracing)
    private.log_spans(tracing, experiment_id,
                      entry_spans(run_id, "e1") + entry_spans(run_id, "e2", error="Boom: no"))
    private.log_spans(tracing, experiment_id, entry_spans(run_id, "e1"))  # again: no duplicate
    client.link_traces_to_run([trace_id_for(run_id, e) for e in ("e1", "e2")], run_id)
    traces = {t.info.trace_id: t for t in client.search_traces(locations=[experiment_id],
                                                               run_id=run_id)}
    assert set(traces) == {trace_id_for(run_id, "e1"), trace_id_for(run_id, "e2")}
    e1, e2 = traces[trace_id_for(run_id, "e1")], traces[trace_id_for(run_id, "e2")]
    assert e1.info.tags["mlflow.traceName"] == "e1" and e1.info.tags["evalkit.entry_id"] == "e1"
    assert [s.name for s in e1.data.spans] == ["e1", "call 0"]
    assert (e1.data.spans[0].inputs, e1.data.spans[0].outputs) == ({"q": "e1"}, "a")
    assert e1.data.spans[1].parent_id == e1.data.spans[0].span_id
    assert e1.info.state.value == "OK" and e2.info.state.value == "ERROR"


def test_assessments_inserted_in_one_transaction_are_read_back(tracking_uri: str) -> None:
    import mlflow
    from mlflow.entities import AssessmentSource, Expectation, Feedback

    client = mlflow.MlflowClient(tracking_uri)
    experiment_id, run_id = new_run(client)
    tracing = private.tracing_client(tracking_uri)
    private.log_spans(tracing, experiment_id, entry_spans(run_id, "e1"))
    trace_id = trace_id_for(run_id, "e1")
    code = AssessmentSource(source_type="CODE", source_id="evalkit.exact")
    private.insert_assessments(tracing, experiment_id, 1_700_000_000_000, [
        Feedback(name="functional", value=False, rationale="FAIL; error: Boom", source=code,
                 trace_id=trace_id, metadata={"mlflow.assessment.sourceRunId": run_id}),
        Expectation(name="expected_output", value={"answer": "a"}, trace_id=trace_id,
                    source=AssessmentSource(source_type="HUMAN", source_id="golden dataset"))])
    private.insert_assessments(tracing, experiment_id, 0, [])  # nothing: no transaction
    (trace,) = client.search_traces(locations=[experiment_id], include_spans=False)
    held = {a.name: a for a in trace.info.assessments}
    assert set(held) == {"functional", "expected_output"}
    verdict = held["functional"]
    assert (verdict.value, verdict.rationale, verdict.source.source_id) == (
        False, "FAIL; error: Boom", "evalkit.exact")
    assert verdict.metadata == {"mlflow.assessment.sourceRunId": run_id}
    assert held["expected_output"].value == {"answer": "a"}
    assert trace.search_assessments("functional")[0].feedback is not None


def test_upserted_dataset_records_come_back(tracking_uri: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import mlflow

    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking_uri)  # where a dataset reads its records
    client = mlflow.MlflowClient(tracking_uri)
    experiment_id, _ = new_run(client)
    dataset = client.create_dataset(name=f"private-{uuid.uuid4().hex[:8]}",
                                    experiment_id=experiment_id)
    private.upsert_dataset_records(client, dataset.dataset_id, [
        {"inputs": {"entry_id": e, "input": "same"}, "tags": {"entry_id": e},
         "expectations": {"expected_output": f"out {e}"}} for e in ("e1", "e2")])
    records = {r.tags["entry_id"]: r for r in client.get_dataset(dataset.dataset_id).records}
    assert set(records) == {"e1", "e2"}  # the same input twice stays two records
    assert records["e2"].inputs == {"entry_id": "e2", "input": "same"}
    assert records["e2"].expectations == {"expected_output": "out e2"}


def test_a_prompt_is_linked_to_a_run_of_the_clients_own_store(tmp_path: Path) -> None:
    import mlflow

    # a store that is not the process-wide one (MLFLOW_TRACKING_URI names another)
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'own.db'}")
    _, run_id = new_run(client)
    prompt = client.register_prompt(name=f"p-{uuid.uuid4().hex[:8]}", template="Say {{x}}.")
    private.link_prompt_to_run(client, run_id, prompt)
    private.link_prompt_to_run(client, run_id, prompt)  # a second link adds nothing
    linked = json.loads(client.get_run(run_id).data.tags["mlflow.linkedPrompts"])
    assert linked == [{"name": prompt.name, "version": str(prompt.version)}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """An MLflow tracking server on loopback (SQLite behind it)."""
    from tests.support.processes import free_port
    from tests.support.team_server import MlflowServer

    folder = tmp_path_factory.mktemp("private-server")
    server = MlflowServer(f"sqlite:///{folder / 'server.db'}", folder / "artifacts",
                          free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_quiet_run_urls_stops_mlflow_printing_a_runs_url(
        server: Any, capfd: pytest.CaptureFixture[str]) -> None:
    import mlflow

    loud = mlflow.MlflowClient(server.uri)
    _, run_id = new_run(loud)
    capfd.readouterr()
    loud.set_terminated(run_id)
    assert f"/runs/{run_id}" in capfd.readouterr().out  # MLflow's own printing, unquieted

    quiet = mlflow.MlflowClient(server.uri)
    private.quiet_run_urls(quiet)
    _, run_id = new_run(quiet)
    quiet.set_terminated(run_id)
    assert capfd.readouterr().out == ""
    assert quiet.get_run(run_id).info.status == "FINISHED"


def test_log_spans_writes_again_once_a_server_is_back(server: Any) -> None:
    """A lookup of the server's version that failed during an outage is remembered by MLflow;
    evalkit's log_spans clears that memory, so a write after the outage goes through."""
    import mlflow
    from mlflow.store.tracking.rest_store import RestStore

    client = mlflow.MlflowClient(server.uri)
    experiment_id, run_id = new_run(client)
    tracing = private.tracing_client(server.uri)
    assert not private.is_sql_store(tracing)
    RestStore._get_server_version.cache_clear()  # no lookup of an earlier test remembered
    server.stop()
    try:
        with pytest.raises(NotImplementedError, match="could not identify MLflow server version"):
            tracing.log_spans(experiment_id, entry_spans(run_id, "e1"))
    finally:
        server.start()
    private.log_spans(tracing, experiment_id, entry_spans(run_id, "e1"))
    trace = client.get_trace(trace_id_for(run_id, "e1"))
    assert [s.name for s in trace.data.spans] == ["e1", "call 0"]
    assert trace.info.tags["evalkit.entry_id"] == "e1"
