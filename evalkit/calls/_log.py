"""Where the call window writes each call's record: a :class:`CallLog`.

The engine owns this contract; the evaluation modes hand it their run's raw results (see
:class:`evalkit.tracking.RawResultsLog`, which satisfies it), so the engine never knows how
or where a run is tracked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from evalkit.records import CallRecord


class CallLog(Protocol):
    """The calls of one pass, kept as they arrive: a crash or a stop loses nothing already
    paid for."""

    def append(self, record: CallRecord) -> None:
        """Keep one call's record the moment it arrives."""

    def put_in_order(self, order: Mapping[str, int]) -> None:
        """Put the kept records in the plan's order (entry id -> its position) at the end of
        the pass."""
