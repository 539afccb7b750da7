"""Every private MLflow interface evalkit uses, each with why no public one does the job.

MLflow's public API covers runs, artifacts, trace search, linking traces to runs, datasets
and prompts; those calls live in :mod:`evalkit.tracking._mlflow` and ``_mlflow_genai``. What
is here has no public equivalent that takes an explicit tracking URI, or none fast enough.
Each function names the internals it touches; ``tests/unit/tracking/test_mlflow_private.py``
fails when an MLflow release moves or reshapes any of them, on the oldest and the newest MLflow
supported.

- Traces are written as finished spans in batches (:func:`log_spans`). MLflow's public
  tracing (``start_trace``/``start_span``) exports through the process-wide tracer to the
  process-wide tracking URI, asynchronously by default, and that queue drops traces silently
  when it fills (127 of 1,000 measured); one request per trace also costs seconds per
  thousand entries.
- Assessments go through ``TracingClient`` (:func:`tracing_client`): the public
  ``mlflow.log_feedback`` writes to the process-wide tracking URI, not the run's own. On a
  local SQL store they are inserted in one transaction (:func:`insert_assessments`): one
  commit per assessment costs an fsync, about 25 ms each.
- Evaluation-dataset records are upserted through the client's store
  (:func:`upsert_dataset_records`): the public ``EvaluationDataset.merge_records`` writes to
  the process-wide tracking URI.
- A judge prompt is linked to its run by the run's ``mlflow.linkedPrompts`` tag
  (:func:`link_prompt_to_run`): the public ``link_prompt_version_to_run`` of a local store
  reads and writes that tag in the process-wide tracking store, not the client's.
- MLflow prints a run's URL to stdout when the run ends, credentials in the URI included;
  :func:`quiet_run_urls` stops that for evalkit's own client (evalkit prints the run's URL
  itself, without credentials) without setting the process's environment.
- The spans a component makes during a call are kept with the call's record
  (:mod:`evalkit.tracking._span_capture`): while calls are made, MLflow's tracer provider is
  one whose span processor is MLflow's own with evalkit's exporter
  (:func:`install_capturing_provider`). MLflow exports every span to the process-wide
  tracking URI (asynchronously, with drops) and offers no public way to export elsewhere:
  ``mlflow.tracing.set_destination`` chooses among MLflow's own destinations and
  ``mlflow.tracing.configure(span_processors=...)`` edits spans but cannot keep one back.
  A call's span context is entered as the public
  ``set_tracing_context_from_http_request_headers`` enters a remote parent
  (:func:`enter_remote_parent`, :func:`register_remote_trace`): that function costs about
  100 us of CPU per call (header parsing, a usage-telemetry record, a trace registered with
  MLflow even for a call that makes no span); entered directly, the trace is registered only
  at a call's first span.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


def tracing_client(tracking_uri: str) -> Any:
    """``mlflow.tracing.client.TracingClient`` on an explicit tracking URI."""
    from mlflow.tracing.client import TracingClient

    return TracingClient(tracking_uri)


def log_spans(tracing: Any, experiment_id: str, spans: list[Any]) -> None:
    """``TracingClient.log_spans``: finished spans (and the trace rows they create) in one
    request.

    MLflow remembers a failed lookup of a tracking server's version for the life of the
    process (``RestStore._get_server_version`` is an ``lru_cache``): one made during an outage
    would refuse every later write, a sync after the server is back included. That memory is
    cleared and the write tried once more."""
    try:
        tracing.log_spans(experiment_id, spans)
    except NotImplementedError as err:
        if "could not identify MLflow server version" not in str(err):
            raise
        from mlflow.store.tracking.rest_store import RestStore

        RestStore._get_server_version.cache_clear()
        tracing.log_spans(experiment_id, spans)


@dataclass(frozen=True)
class EndedSpan:
    """A span of a trace that has ended, as evalkit describes it (:func:`finished_span` makes
    MLflow's entity of it)."""

    trace_id: str
    name: str
    parent: str | None
    """The parent span's key; None for the root span."""
    start_ns: int
    end_ns: int
    kind: str
    """MLflow's span type (``CHAIN``, ``LLM``, ``CHAT_MODEL``, ...)."""
    attributes: Mapping[str, Any]
    """MLflow span attributes by their short names: ``inputs``, ``outputs``, or any other key
    as it is."""
    error: str | None
    trace_tags: Mapping[str, str] | None = None
    """The trace's tags, carried by its root span."""
    key: str | None = None
    """Unique in its trace: the span's id is derived from it. ``None``: its name, for spans
    evalkit names uniquely itself (a component's own spans may share a name)."""

    @property
    def id_key(self) -> str:
        return self.name if self.key is None else self.key


def finished_span(span: EndedSpan) -> Any:
    """An ``mlflow.entities.Span`` that has ended, built from an OpenTelemetry
    ``ReadableSpan``: trace and span ids derived from its ``trace_id`` and key, so writing it
    again finds it. Its attributes are JSON-encoded here. A root span carries its trace's tags
    as ``mlflow.traceTag.<key>`` attributes, which the store turns into the trace's tags when
    it creates the trace row."""
    from mlflow.entities import Span
    from mlflow.tracing.constant import SpanAttributeKey
    from mlflow.tracing.utils import build_otel_context
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.trace import Status, StatusCode

    trace_id = span.trace_id
    otel_trace = int(trace_id.removeprefix("tr-"), 16)
    keys = {"inputs": SpanAttributeKey.INPUTS, "outputs": SpanAttributeKey.OUTPUTS}
    tags = span.trace_tags or {}
    encoded = {SpanAttributeKey.REQUEST_ID: _dumps(trace_id),
               SpanAttributeKey.SPAN_TYPE: _dumps(span.kind),
               **{keys.get(k, k): _dumps(v) for k, v in span.attributes.items()},
               **{f"mlflow.traceTag.{k}": _dumps(v) for k, v in tags.items()}}
    error = span.error
    events = () if error is None else (Event("exception", {"exception.message": error},
                                             timestamp=span.end_ns),)
    parent = None if span.parent is None else build_otel_context(
        otel_trace, span_id(trace_id, span.parent))
    return Span(ReadableSpan(
        name=span.name, context=build_otel_context(otel_trace, span_id(trace_id, span.id_key)),
        parent=parent, start_time=span.start_ns, end_time=span.end_ns,
        resource=Resource.get_empty(), events=events, attributes=encoded,
        status=Status(StatusCode.ERROR if error else StatusCode.OK, error)))


def span_id(trace_id: str, name: str) -> int:
    """A span's id: the same every time its trace is written."""
    return int.from_bytes(hashlib.sha256(f"{trace_id}\0{name}".encode()).digest()[:8]) or 1


def is_sql_store(tracing: Any) -> bool:
    """Whether the tracing client writes to a local SQL store (``SqlAlchemyStore``)."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    return isinstance(tracing.store, SqlAlchemyStore)


def insert_assessments(tracing: Any, experiment_id: str, trace_start_ms: int,
                       assessments: Sequence[Any]) -> None:
    """Every assessment in one transaction of MLflow's SQL store: the rows its
    ``create_assessment`` writes (``SqlAssessments.from_mlflow_entity`` in a session of
    ``ManagedSessionMaker``), for traces evalkit created itself (so none overrides another,
    and each trace's timestamp is the run's start)."""
    from mlflow.store.tracking.dbmodels.models import SqlAssessments

    if not assessments:
        return
    with tracing.store.ManagedSessionMaker(read_only=False) as session:
        for assessment in assessments:
            row = SqlAssessments.from_mlflow_entity(assessment)
            row.experiment_id = int(experiment_id)
            row.trace_timestamp_ms = trace_start_ms
            session.add(row)


def upsert_dataset_records(client: Any, dataset_id: str,
                           records: Sequence[Mapping[str, Any]]) -> None:
    """The store's own ``upsert_dataset_records`` under the client's tracking URI."""
    client._tracking_client.store.upsert_dataset_records(dataset_id=dataset_id,
                                                          records=list(records))


def link_prompt_to_run(client: Any, run_id: str, prompt_version: Any) -> None:
    """Add ``prompt_version`` to the run's ``mlflow.linkedPrompts`` tag
    (``TraceTagKey.LINKED_PROMPTS``, in the format of ``update_linked_prompts_tag``), which
    is what the UI and ``list_logged_prompts`` read, in the client's own store."""
    from mlflow.tracing.constant import TraceTagKey
    from mlflow.tracing.utils.prompt import update_linked_prompts_tag

    current = client.get_run(run_id).data.tags.get(TraceTagKey.LINKED_PROMPTS)
    updated = update_linked_prompts_tag(current, [prompt_version])
    if updated != current:
        client.set_tag(run_id, TraceTagKey.LINKED_PROMPTS, updated)


def quiet_run_urls(client: Any) -> None:
    """Stop this client from printing each run's URL (credentials included) when the run
    ends: ``TrackingServiceClient._log_url``, on this client only."""
    client._tracking_client._log_url = lambda run_id: None


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def install_capturing_provider(exporter: Any, span_started: Callable[[int], None]) -> Any:
    """Make MLflow trace through a new tracer provider with two span processors: one that
    tells ``span_started`` the trace id of each span as it starts, then MLflow's own
    (``MlflowV3SpanProcessor``: traces registered, spans made ``LiveSpan`` as ever) with
    ``exporter``. Returns the provider, or ``None`` when MLflow shares the process-wide
    OpenTelemetry provider (``MLFLOW_USE_DEFAULT_TRACER_PROVIDER=false``), which is not
    MLflow's to replace. ``provider.once`` is marked done first, so MLflow's lazy first
    initialization never replaces it."""
    from mlflow.environment_variables import MLFLOW_USE_DEFAULT_TRACER_PROVIDER
    from mlflow.tracing.processor.mlflow_v3 import MlflowV3SpanProcessor
    from mlflow.tracing.provider import provider
    from opentelemetry.sdk.trace import TracerProvider

    if not MLFLOW_USE_DEFAULT_TRACER_PROVIDER.get():
        return None
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(_start_hook(span_started))
    tracer_provider.add_span_processor(MlflowV3SpanProcessor(exporter, False))
    provider.once.do_once(lambda: None)
    provider.set(tracer_provider)
    return tracer_provider


def _start_hook(span_started: Callable[[int], None]) -> Any:
    from opentelemetry.sdk.trace import SpanProcessor

    class StartHook(SpanProcessor):  # defined here: OpenTelemetry's SDK is imported late
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            span_started(span.context.trace_id)

    return StartHook()


def tracer_provider_is(tracer_provider: Any) -> bool:
    """Whether MLflow traces through ``tracer_provider`` still (nothing reinitialized it:
    ``mlflow.tracing.reset``, ``set_destination``, ``enable``)."""
    from mlflow.tracing.provider import provider

    return provider.get() is tracer_provider


def reset_tracer_provider() -> None:
    """MLflow's tracer provider back to its state at import (``provider.reset``): MLflow
    builds a fresh one, from its configuration then, at its next span."""
    from mlflow.tracing.provider import provider

    provider.reset()


def tracking_exporter() -> Any:
    """The exporter MLflow's own provider uses (``MlflowV3SpanExporter`` on the process-wide
    tracking URI), for the spans that are no call's."""
    import mlflow
    from mlflow.tracing.export.mlflow_v3 import MlflowV3SpanExporter

    return MlflowV3SpanExporter(tracking_uri=mlflow.get_tracking_uri())



def enter_remote_parent(otel_trace_id: int, otel_span_id: int) -> Any:
    """Make a span of another process the current span, as MLflow's public
    ``set_tracing_context_from_http_request_headers`` does before anything else, without its
    header parsing and usage telemetry, which would cost every call; returns the token that
    :func:`leave_remote_parent` takes. The trace is registered apart, only when a span
    starts in it (:func:`register_remote_trace`). MLflow's own runtime context holds it: a
    capturing provider is installed only where MLflow traces apart from OpenTelemetry's
    global provider, which is where MLflow keeps its spans' context."""
    from mlflow.tracing.provider import mlflow_runtime_context
    from opentelemetry import trace

    parent = trace.NonRecordingSpan(trace.SpanContext(
        otel_trace_id, otel_span_id, is_remote=True,
        trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED)))
    return mlflow_runtime_context.attach(trace.set_span_in_context(parent))


def leave_remote_parent(token: Any) -> None:
    from mlflow.tracing.provider import mlflow_runtime_context

    mlflow_runtime_context.detach(token)


def register_remote_trace(otel_trace_id: int) -> None:
    """Register the trace of a remote parent with MLflow's trace manager, as
    ``set_tracing_context_from_http_request_headers`` does: MLflow's span processor keeps
    the spans of a trace it knows only."""
    from mlflow.entities.trace_info import TraceInfo, TraceState
    from mlflow.tracing.trace_manager import InMemoryTraceManager
    from mlflow.tracing.utils import generate_mlflow_trace_id_from_otel_trace_id

    # No location and no request time: MLflow's own registration of a remote trace gives none.
    trace_info = TraceInfo(trace_id=generate_mlflow_trace_id_from_otel_trace_id(otel_trace_id),
                           trace_location=None, request_time=None,  # type: ignore[arg-type]
                           state=TraceState.IN_PROGRESS)
    InMemoryTraceManager.get_instance().register_trace(otel_trace_id, trace_info,
                                                       is_remote_trace=True)


def forget_remote_trace(otel_trace_id: int) -> None:
    from mlflow.tracing.trace_manager import InMemoryTraceManager

    InMemoryTraceManager.get_instance().pop_trace(otel_trace_id)
