"""One component call as recorded: the line of the raw-results file, the unit of resume, with
the spans the component made while it ran (its tools, retrievals and LLM requests)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalkit.records._usage import TokenUsage


@dataclass(frozen=True)
class SpanRecord:
    """One span the component made during a call (``@mlflow.trace``, ``mlflow.start_span``, an
    MLflow autolog integration), as plain JSON values, redacted. It is written under the
    call's span in the entry's trace, and read back as part of MLflow's ``Trace`` by scorers
    that take ``trace``."""

    name: str
    span_type: str
    """MLflow's span type: ``TOOL``, ``LLM``, ``CHAT_MODEL``, ``AGENT``, ``RETRIEVER``,
    ``UNKNOWN``, ..."""
    parent: int | None
    """Index, among the call's spans, of the span this one ran under; ``None``: directly
    under the call's span."""
    start_ns: int
    """When it started, in nanoseconds from the start of the call."""
    end_ns: int
    inputs: Any = None
    outputs: Any = None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    """Its other attributes by name (token usage, model, ...), JSON values."""
    error: str | None = None
    """The error it ended with, if its status was an error."""

    def to_json(self) -> dict[str, Any]:
        doc = {"name": self.name, "span_type": self.span_type, "parent": self.parent,
               "start_ns": self.start_ns, "end_ns": self.end_ns, "inputs": self.inputs,
               "outputs": self.outputs, "attributes": dict(self.attributes)}
        if self.error is not None:
            doc["error"] = self.error
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> SpanRecord:
        return cls(doc["name"], doc["span_type"], doc["parent"], doc["start_ns"],
                   doc["end_ns"], doc.get("inputs"), doc.get("outputs"),
                   doc.get("attributes", {}), doc.get("error"))


@dataclass(frozen=True)
class CallRecord:
    """One component call: its output (a JSON value) or the error it raised."""

    entry_id: str
    repeat: int
    output: Any
    error: str | None
    latency_ms: float
    usage: tuple[TokenUsage, ...] = ()
    """The tokens the call's LLM requests used, one per model, as the component reported
    them (``call.record_usage``); none when it reported none."""
    spans: tuple[SpanRecord, ...] = ()
    """The spans the component made during the call, in the order they started."""

    def to_json(self) -> dict[str, Any]:
        doc = {"entry_id": self.entry_id, "repeat": self.repeat, "output": self.output,
               "error": self.error, "latency_ms": round(self.latency_ms, 3)}
        if self.usage:  # a call without usage reads as it always did
            doc["usage"] = [u.to_json() for u in self.usage]
        if self.spans:
            doc["spans"] = [s.to_json() for s in self.spans]
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> CallRecord:
        """A call as :meth:`to_json` wrote it (``usage`` and ``spans`` absent from older
        records, and from calls without them)."""
        return cls(**{**doc, "usage": tuple(TokenUsage.from_json(u)
                                            for u in doc.get("usage", ())),
                      "spans": tuple(SpanRecord.from_json(s) for s in doc.get("spans", ()))})
