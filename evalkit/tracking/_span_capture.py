"""The spans a component makes during a call, kept with the call's record.

A component traced the way MLflow teaches (``@mlflow.trace``, ``mlflow.start_span``, an
autolog integration such as ``mlflow.openai.autolog()`` or ``mlflow.langchain.autolog()``)
would send its spans to the process's active experiment (``Default`` when none is set), as
traces of their own, linked to no run. Instead, while a run's calls are made:

- each call runs under a span context of its own, entered as MLflow's public
  ``set_tracing_context_from_http_request_headers`` (made for a parent span in another
  process) enters one, less its per-call costs
  (:func:`~evalkit.tracking._mlflow_private.enter_remote_parent`): every span the component
  makes, in its thread or in its task on an event loop, is a descendant of that context, in
  a trace of the call's own, which MLflow is told of at its first span only;
- MLflow traces through a provider of evalkit's: MLflow's own span processor with an
  exporter (:class:`_Router`) that hands a call's spans to that call instead of the tracking
  store (:func:`~evalkit.tracking._mlflow_private.install_capturing_provider` says why no
  public interface does this). Spans that are no call's go where MLflow would send them.

The call's record keeps them (:class:`~evalkit.records.SpanRecord`), so nothing depends on
MLflow's asynchronous export, which drops traces when its queue fills: they are written under
the call's span in the entry's trace with the rest of the trace, by resume and sync too.

Only the spans that have ended when the call returns are the call's. A span a component leaves
running (a thread it started and did not wait for) ends in a call that is over: it is dropped,
not sent anywhere else. While MLflow shares the process-wide OpenTelemetry provider
(``MLFLOW_USE_DEFAULT_TRACER_PROVIDER=false``) nothing is captured: that provider is not
MLflow's to replace, and the spans go where that configuration sends them.

MLflow's tracer provider is one per process, so the installation is too (:data:`_ROUTER`):
the first run that captures installs it, the last to finish hands MLflow back its own.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from evalkit.records import SpanRecord
from evalkit.tracking import _mlflow_private as private

_CALL_TRACE_MARK = 0xE7A1C0DE_CA115BA1
"""The high 64 bits of every call's trace id: a span of a call that is over is known as one."""
_MLFLOW_KEYS = ("mlflow.traceRequestId", "mlflow.spanType", "mlflow.spanInputs",
                "mlflow.spanOutputs")
"""Span attributes a :class:`SpanRecord` holds in fields of its own, or that MLflow derives."""


@dataclass
class _CallSpans:
    """What the router holds of one call that is being made."""

    ended: list[Any] = field(default_factory=list)
    registered: bool = False
    """Whether the call's trace is registered with MLflow: at its first span, so that a call
    that makes none costs MLflow nothing."""


class _Router:
    """The capturing provider's exporter (OpenTelemetry's ``SpanExporter`` interface): a
    call's spans to the call, the spans of no call to MLflow's own exporter."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[int, _CallSpans] = {}
        self._holders = 0
        self._provider: Any = None
        self._elsewhere: Any = None

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        others = []
        for span in spans:
            trace_id = span.context.trace_id
            if trace_id >> 64 != _CALL_TRACE_MARK:
                others.append(span)
                continue
            with self._lock:
                call = self._calls.get(trace_id)
            if call is not None:  # else a call that is over: see the module's docstring
                call.ended.append(span)
        if others:
            self._export_elsewhere(others)
        return SpanExportResult.SUCCESS

    def span_started(self, trace_id: int) -> None:
        """Register a call's trace with MLflow at its first span."""
        if trace_id >> 64 != _CALL_TRACE_MARK:
            return
        with self._lock:
            call = self._calls.get(trace_id)
            if call is not None and not call.registered:
                private.register_remote_trace(trace_id)
                call.registered = True

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def hold(self) -> None:
        """One more run captures: install the provider if none does yet."""
        with self._lock:
            self._holders += 1
            self._ensure_installed()

    def release(self) -> None:
        """A run is done: the last one hands MLflow back its own provider."""
        with self._lock:
            self._holders -= 1
            if self._holders == 0 and self._provider is not None:
                if private.tracer_provider_is(self._provider):
                    private.reset_tracer_provider()
                self._provider = None

    @contextmanager
    def call(self) -> Iterator[list[SpanRecord]]:
        """One call's span context; its list holds the call's spans once it has exited."""
        kept: list[SpanRecord] = []
        if not self._installed():
            yield kept
            return
        trace_id = (_CALL_TRACE_MARK << 64) | secrets.randbits(64)
        parent = secrets.randbits(64) or 1
        call = _CallSpans()
        with self._lock:
            self._calls[trace_id] = call
        started = time.time_ns()
        token = private.enter_remote_parent(trace_id, parent)
        try:
            yield kept
        finally:
            private.leave_remote_parent(token)
            with self._lock:
                del self._calls[trace_id]
                if call.registered:
                    private.forget_remote_trace(trace_id)
            kept.extend(span_records(call.ended, parent, started))

    def _installed(self) -> bool:
        """Whether calls are captured: MLflow still traces through the capturing provider,
        or it is installed again now (MLflow replaced it since: ``mlflow.tracing.reset``,
        ``set_destination``, ``enable``). Read without the lock while it holds."""
        provider = self._provider
        if provider is not None and private.tracer_provider_is(provider):
            return True
        with self._lock:
            return self._ensure_installed()

    def _ensure_installed(self) -> bool:
        """Install the capturing provider, again when MLflow replaced it since (the lock is
        held); whether calls are captured."""
        if self._provider is None or not private.tracer_provider_is(self._provider):
            self._provider = private.install_capturing_provider(self, self.span_started)
        return self._provider is not None

    def _export_elsewhere(self, spans: list[Any]) -> None:
        with self._lock:
            if self._elsewhere is None:
                self._elsewhere = private.tracking_exporter()
        self._elsewhere.export(spans)


_ROUTER = _Router()


@contextmanager
def spans_let_go() -> Iterator[None]:
    """What runs inside makes spans of no component call (a judge's autologged requests):
    they are captured and dropped, so that none becomes a stray trace in another experiment.
    The judge's own span in the entry's trace says what it was asked and answered."""
    with MlflowSpanCapture() as capture, capture():
        yield


class MlflowSpanCapture:
    """The engine's span capture (:data:`evalkit.calls.SpanCapture`) through MLflow: a
    context per call. Entered around a run's calls (``with MlflowSpanCapture() as
    capture:``), it holds the capturing provider installed until the last run that uses it
    is done; a process that calls without entering it (a Ray worker) keeps it installed.
    It holds no state: pickled for a Ray worker, it captures with that process's provider."""

    def __call__(self) -> Any:
        return _ROUTER.call()

    def __enter__(self) -> MlflowSpanCapture:
        _ROUTER.hold()
        return self

    def __exit__(self, *exc: object) -> None:
        _ROUTER.release()


def span_records(spans: Sequence[Any], call_span_id: int, call_start_ns: int
                 ) -> list[SpanRecord]:
    """OpenTelemetry's ended spans as the call's records, in the order they started, each
    with the index of its parent (:func:`_parent_index`)."""
    ordered = sorted(spans, key=lambda s: s.start_time or 0)
    index = {s.context.span_id: i for i, s in enumerate(ordered)}
    return [SpanRecord(
        span.name, _decoded(span.attributes.get("mlflow.spanType")) or "UNKNOWN",
        _parent_index(span, call_span_id, index),
        (span.start_time or call_start_ns) - call_start_ns,
        (span.end_time or span.start_time or call_start_ns) - call_start_ns,
        _decoded(span.attributes.get("mlflow.spanInputs")),
        _decoded(span.attributes.get("mlflow.spanOutputs")),
        {k: _decoded(v) for k, v in span.attributes.items() if k not in _MLFLOW_KEYS},
        _error(span)) for span in ordered]


def _parent_index(span: Any, call_span_id: int, index: dict[int, int]) -> int | None:
    """The index of ``span``'s parent among the call's ended spans; ``None`` under the call's
    own span, or when the parent had not ended."""
    if span.parent is None or span.parent.span_id == call_span_id:
        return None
    return index.get(span.parent.span_id)


def _decoded(value: Any) -> Any:
    """MLflow keeps every attribute as JSON text; an OpenTelemetry library may not."""
    if not isinstance(value, str):
        return list(value) if isinstance(value, tuple) else value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _error(span: Any) -> str | None:
    from opentelemetry.trace import StatusCode

    if span.status.status_code is not StatusCode.ERROR:
        return None
    messages = [str(e.attributes.get("exception.message", "")) for e in span.events
                if e.name == "exception" and e.attributes]
    return span.status.description or next((m for m in messages if m), "error")
