"""Every private MLflow interface evalkit uses (``evalkit/tracking/_mlflow_private.py``) is where
evalkit expects it and takes the arguments evalkit gives it: a release of MLflow that moves or
reshapes one fails here, by name, rather than deep inside a run.

Here each internal exists with the signature evalkit calls it with (``inspect.signature``), and
the spans evalkit builds are MLflow spans; tests/e2e/test_mlflow_private_store.py shows each
doing its job against a real local store and a tracking server on loopback. All are marked
``mlflow_api``: CI runs them on the oldest and the newest MLflow supported.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
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
    root = private.finished_span(private.EndedSpan(
        trace_id, "e1", None, 1_000, 9_000, "CHAIN", {"inputs": {"q": 1}, "outputs": "a"}, None,
        trace_tags={"evalkit.entry_id": "e1"}))
    call = private.finished_span(private.EndedSpan(
        trace_id, "call 0", "e1", 1_000, 5_000, "UNKNOWN",
        {"inputs": {"q": 1}, "evalkit.repeat": 0}, "Boom: no"))
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
    again = private.finished_span(private.EndedSpan(
        trace_id, "call 0", "e1", 1_000, 5_000, "UNKNOWN", {}, None))
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


class Kept:
    """An OpenTelemetry exporter that keeps what it is given."""

    def __init__(self) -> None:
        self.spans: list[Any] = []

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        self.spans += spans
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def test_a_capturing_provider_gives_mlflows_spans_to_evalkits_exporter_until_reset() -> None:
    import mlflow
    from mlflow.tracing.provider import provider

    kept = Kept()
    started: list[int] = []
    installed = private.install_capturing_provider(kept, started.append)
    try:
        assert installed is not None and private.tracer_provider_is(installed)
        assert provider.once._done  # MLflow's lazy initialization cannot replace it

        @mlflow.trace(span_type="TOOL")
        def lookup(city: str) -> str:
            return "sunny"

        lookup("Paris")
        (span,) = kept.spans  # a root span: MLflow's processor ended it, exported it here
        assert span.name == "lookup" and span.parent is None
        assert span.attributes["mlflow.spanType"] == '"TOOL"'
        assert span.attributes["mlflow.spanInputs"] == '{"city": "Paris"}'
        assert span.attributes["mlflow.traceRequestId"].startswith('"tr-')
        assert started == [span.context.trace_id]  # told before MLflow's processor
    finally:
        private.reset_tracer_provider()
    assert not private.tracer_provider_is(installed)
    assert provider.get() is None and not provider.once._done  # MLflow builds its own next


def test_a_remote_parent_is_the_current_span_and_its_trace_is_mlflows_once_registered() -> None:
    import mlflow

    trace_id, parent_id = (0xABC << 64) | 7, 0x1234
    kept = Kept()

    def register_first(started: int) -> None:
        if started == trace_id:
            private.register_remote_trace(trace_id)

    installed = private.install_capturing_provider(kept, register_first)
    try:
        token = private.enter_remote_parent(trace_id, parent_id)
        try:
            with mlflow.start_span("plan"):
                pass
        finally:
            private.leave_remote_parent(token)
            private.forget_remote_trace(trace_id)
        with mlflow.start_span("after"):
            pass
        plan, after = kept.spans
        assert (plan.name, plan.context.trace_id, plan.parent.span_id) == (
            "plan", trace_id, parent_id)
        assert plan.parent.is_remote
        assert after.name == "after" and after.parent is None  # the parent is left
        assert after.context.trace_id != trace_id
    finally:
        private.reset_tracer_provider()
    assert not private.tracer_provider_is(installed)


def test_the_tracking_exporter_is_mlflows_own_on_the_tracking_uri() -> None:
    from mlflow.tracing.export.mlflow_v3 import MlflowV3SpanExporter

    exporter = private.tracking_exporter()
    assert isinstance(exporter, MlflowV3SpanExporter) and callable(exporter.export)


def test_every_private_interface_is_tested_here() -> None:
    """A new private call in _mlflow_private needs its test here."""
    documented = {name for name, value in vars(private).items()
                  if inspect.isfunction(value) and value.__module__ == private.__name__
                  and not name.startswith("_")}
    assert documented == {"tracing_client", "log_spans", "finished_span", "span_id",
                          "is_sql_store", "insert_assessments", "upsert_dataset_records",
                          "link_prompt_to_run", "quiet_run_urls", "install_capturing_provider",
                          "tracer_provider_is", "reset_tracer_provider", "tracking_exporter",
                          "enter_remote_parent", "leave_remote_parent", "register_remote_trace",
                          "forget_remote_trace"}, \
        "add a test of the new private interface"
    assert Path(private.__file__).name == "_mlflow_private.py"
