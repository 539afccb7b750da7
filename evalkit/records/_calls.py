"""One component call as recorded: the line of the raw-results file, the unit of resume."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CallRecord:
    """One component call: its output (a JSON value) or the error it raised."""

    entry_id: str
    repeat: int
    output: Any
    error: str | None
    latency_ms: float

    def to_json(self) -> dict[str, Any]:
        return {"entry_id": self.entry_id, "repeat": self.repeat, "output": self.output,
                "error": self.error, "latency_ms": round(self.latency_ms, 3)}
