"""One component call as recorded: the line of the raw-results file, the unit of resume."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalkit.records._usage import TokenUsage


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

    def to_json(self) -> dict[str, Any]:
        doc = {"entry_id": self.entry_id, "repeat": self.repeat, "output": self.output,
               "error": self.error, "latency_ms": round(self.latency_ms, 3)}
        if self.usage:  # a call without usage reads as it always did
            doc["usage"] = [u.to_json() for u in self.usage]
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> CallRecord:
        """A call as :meth:`to_json` wrote it (``usage`` absent from older records)."""
        return cls(**{**doc, "usage": tuple(TokenUsage.from_json(u)
                                            for u in doc.get("usage", ()))})
