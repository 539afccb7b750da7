"""Every private MLflow interface evalkit uses (``evalkit/tracking/_mlflow_private.py``) is where
evalkit expects it and takes the arguments evalkit gives it: a release of MLflow that moves or
reshapes one fails here, by name, rather than deep inside a run.

Fast: each internal exists with the signature evalkit calls it with (``inspect.signature``),
and the spans evalkit builds are MLflow spans. Slow: each does its job against a real local
store, and against a tracking server on loopback (the URL MLflow prints, the server version
MLflow remembers). All are marked ``mlflow_api``: CI runs them on the oldest and the newest
MLflow supported.
"""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalkit.tracking import _mlflow_private as private
from evalkit.tracking._traces import trace_id_for

pytestmark = pytest.mark.mlflow_api


def accepts(function: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """``function`` can be called as evalkit calls it (``self`` included for a method)."""
    try:
        inspect.signature(function).bind(*args, **kwargs)
    except TypeError as err:
        pytest.fail(f"{function.__qualname__}{inspect.signature(function)} no longer takes "
                    f"the arguments evalkit passes ({err}): update _mlflow_private")


# --- where they are, and what they take (fast) --------------------------------------------------

def test_tracing_client_takes_a_uri_and_writes_spans_and_assessments() -> None:
    from mlflow.tracing.client import TracingClient

    accepts(TracingClient, "sqlite:///mlflow.db")  # tracing_client
    accepts(TracingClient.log_spans, object(), "1", [])  # log_spans: (experiment id, spans)
    accepts(TracingClient.log_assessment, object(), "tr-1", object())  # the server path
    assert isinstance(inspect.getattr_static(TracingClient, "store"), property)


def test_a_failed_server_version_lookup_is_an_lru_cache_evalkit_can_clear() -> None:
    from mlflow.store.tracking.rest_store import RestStore

    assert callable(getattr(RestStore._get_server_version, "cache_clear", None)), (
        "RestStore._get_server_version is no longer an lru_cache: review log_spans")
    # the message log_spans recognises as a remembered failure of that lookup
    assert "could not identify MLflow server version" in inspect.getsource(RestStore.log_spans)


def test_a_finished_span_is_an_mlflow_span_with_evalkits_ids_and_attributes() -> None:
    from mlflow.entities import Span, SpanStatusCode
    from mlflow.tracing.constant import SpanAttributeKey
    from mlflow.tracing.utils import build_otel_context

    accepts(build_otel_context, 1, 2)
    for key in ("INPUTS", "OUTPUTS", "REQUEST_ID", "SPAN_TYPE"):
        assert isinstance(getattr(SpanAttributeKey, key), str), key
    trace_id = trace_id_for("run", "e1")
    root = private.finished_span(trace_id, "e1", None, 1_000, 9_000, "CHAIN",
                                 {"inputs": {"q": 1}, "outputs": "a"}, None,
                                 trace_tags={"evalkit.entry_id": "e1"})
    call = private.finished_span(trace_id, "call 0", "e1", 1_000, 5_000, "UNKNOWN",
                                 {"inputs": {"q": 1}, "evalkit.repeat": 0}, "Boom: no")
    assert isinstance(root, Span) and isinstance(call, Span)
    assert root.trace_id == call.trace_id == trace_id
    assert root.parent_id is None and call.parent_id == root.span_id
    assert (root.name, root.span_type, root.inputs, root.outputs) == ("e1", "CHAIN", {"q": 1}, "a")
    assert (root.start_time_ns, root.end_time_ns) == (1_000, 9_000)
    assert root.attributes["mlflow.traceTag.evalkit.entry_id"] == "e1"
    assert call.attributes["evalkit.repeat"] == 0
    assert root.status.status_code == SpanStatusCode.OK
    assert call.status.status_code == SpanStatusCode.ERROR
    assert [e.attributes["exception.message"] for e in call.events] == ["Boom: no"]
    again = private.finished_span(trace_id, "call 0", "e1", 1_000, 5_000, "UNKNOWN", {}, None)
    assert again.span_id == call.span_id  # written again, found again


def test_the_sql_store_internals_insert_assessments_uses() -> None:
    from mlflow.entities import AssessmentSource, Feedback
    from mlflow.store.db.utils import _get_managed_session_maker
    from mlflow.store.tracking.dbmodels.models import SqlAssessments
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    assert inspect.isclass(SqlAlchemyStore)  # is_sql_store
    # the session maker is the store's own attribute, made when it opens the database...
    assert "self.ManagedSessionMaker" in inspect.getsource(SqlAlchemyStore.__init__)
    # ...and evalkit's session is a write session: ManagedSessionMaker(read_only=False)
    accepts(_get_managed_session_maker(None, "sqlite"), read_only=False)
    accepts(SqlAssessments.from_mlflow_entity, object())
    row = SqlAssessments.from_mlflow_entity(Feedback(
        name="functional", value=True, rationale="PASS",
        source=AssessmentSource(source_type="CODE", source_id="evalkit.exact"),
        trace_id=trace_id_for("run", "e1")))
    assert (row.name, row.trace_id, row.source_type) == (
        "functional", trace_id_for("run", "e1"), "CODE")
    row.experiment_id, row.trace_timestamp_ms = 1, 1_700_000_000_000  # as evalkit does
    unfilled = [c.name for c in SqlAssessments.__table__.columns
                if not c.nullable and c.default is None and c.server_default is None
                and getattr(row, c.name) is None]
    assert unfilled == [], f"a row evalkit inserts leaves required columns empty: {unfilled}"


def test_dataset_records_upsert_on_the_clients_store() -> None:
    from mlflow.store.tracking.rest_store import RestStore
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    for store in (SqlAlchemyStore, RestStore):  # a local store, a tracking server
        accepts(store.upsert_dataset_records, object(), dataset_id="d-1", records=[])


def test_the_run_url_printer_is_the_tracking_clients_own_method() -> None:
    from mlflow.tracking._tracking_service.client import TrackingServiceClient

    accepts(TrackingServiceClient._log_url, object(), "run-id")
    assert "self._log_url(" in inspect.getsource(TrackingServiceClient.set_terminated)


def test_an_mlflow_client_holds_its_tracking_client() -> None:
    import mlflow
    from mlflow.tracking._tracking_service.client import TrackingServiceClient

    client = mlflow.MlflowClient("http://127.0.0.1:9")  # nothing is sent: no server needed
    assert isinstance(client._tracking_client, TrackingServiceClient)
    assert hasattr(client._tracking_client.store, "upsert_dataset_records")
    private.quiet_run_urls(client)
    assert client._tracking_client._log_url("run-id") is None
    assert mlflow.MlflowClient("http://127.0.0.1:9")._tracking_client._log_url is not \
        client._tracking_client._log_url  # this client only


def test_a_runs_linked_prompts_tag_and_its_updater_are_where_evalkit_looks() -> None:
    from mlflow.tracing.constant import TraceTagKey
    from mlflow.tracing.utils.prompt import update_linked_prompts_tag

    assert TraceTagKey.LINKED_PROMPTS == "mlflow.linkedPrompts"
    accepts(update_linked_prompts_tag, None, [])


# --- what they do, against real stores (slow) ---------------------------------------------------

def new_run(client: Any) -> tuple[str, str]:
    """A fresh experiment and a run in it: (experiment id, run id)."""
    experiment_id = client.create_experiment(f"private/{uuid.uuid4().hex[:8]}")
    return experiment_id, client.create_run(experiment_id).info.run_id


def entry_spans(run_id: str, entry_id: str, error: str | None = None) -> list[Any]:
    trace_id = trace_id_for(run_id, entry_id)
    start = 1_700_000_000_000 * 1_000_000
    return [private.finished_span(trace_id, entry_id, None, start, start + 5_000_000, "CHAIN",
                                  {"inputs": {"q": entry_id}, "outputs": "a"}, error,
                                  trace_tags={"mlflow.traceName": entry_id,
                                              "evalkit.entry_id": entry_id}),
            private.finished_span(trace_id, "call 0", entry_id, start, start + 4_000_000,
                                  "UNKNOWN", {"inputs": {"q": entry_id}, "outputs": "a",
                                              "evalkit.repeat": 0}, error)]


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


def test_every_private_interface_is_tested_here() -> None:
    """A new private call in _mlflow_private needs its test here."""
    documented = {name for name, value in vars(private).items()
                  if inspect.isfunction(value) and value.__module__ == private.__name__
                  and not name.startswith("_")}
    assert documented == {"tracing_client", "log_spans", "finished_span", "span_id",
                          "is_sql_store", "insert_assessments", "upsert_dataset_records",
                          "link_prompt_to_run", "quiet_run_urls"}, \
        "add a test of the new private interface"
    assert Path(private.__file__).name == "_mlflow_private.py"
