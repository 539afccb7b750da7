"""REPEAT_COUNT calibration statistics: the pass rate of every prefix of recorded repeats.

The repeatability policy (seeds/001, rule 01) asks to calibrate ``REPEAT_COUNT`` once per
component "by plotting cumulative pass rate against repeat count for a few representative
entries and picking the point where it plateaus". The calibration run makes exactly
``CALIBRATION_REPEAT_COUNT`` calls per entry; scoring the first k outputs for k = 2..N makes
none, with the eval's own scorer.

Plateau rule: the recommended k is the smallest k from which the pass rate stays within one
entry (1/n) of its value at N for every larger k: more repeats than that change the verdict
of at most one entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PLATEAU_RULE = ("the smallest k from which the pass rate stays within one entry (1/n) of its "
                "value at the largest k for every larger k")


@dataclass(frozen=True)
class CalibrationPoint:
    k: int
    passed: int
    entries: int

    @property
    def rate(self) -> float:
        return self.passed / self.entries


@dataclass(frozen=True)
class Calibration:
    """The pass rate of every prefix of the recorded repeats, and where it plateaus.

    Notes
    -----
    Point k holds the entries that pass when only their first k outputs are scored. The
    recommended k is the smallest k such that |rate_j - rate_N| <= 1/n for every j >= k
    (:data:`PLATEAU_RULE`).

    References
    ----------
    agentme-edr-policy-155, rule 01 (seeds/001): calibrate ``REPEAT_COUNT`` "by plotting
    cumulative pass rate against repeat count ... and picking the point where it plateaus".

    Examples
    --------
    >>> from evalkit.stats import Calibration, CalibrationPoint
    >>> c = Calibration(5, (CalibrationPoint(2, 18, 20), CalibrationPoint(3, 15, 20),
    ...                     CalibrationPoint(4, 14, 20), CalibrationPoint(5, 14, 20)))
    >>> c.recommended
    3
    """

    repeat_count: int
    points: tuple[CalibrationPoint, ...]
    """One point per k = 2..repeat_count."""

    @property
    def recommended(self) -> int:
        """The plateau k (see :data:`PLATEAU_RULE`)."""
        final = self.points[-1]
        tolerance = 1 / final.entries + 1e-12
        recommended = final.k
        for point in reversed(self.points):
            if abs(point.rate - final.rate) > tolerance:
                break
            recommended = point.k
        return recommended

    def to_json(self) -> dict[str, Any]:
        return {"repeat_count": self.repeat_count, "rule": PLATEAU_RULE,
                "recommended": self.recommended,
                "points": [{"k": p.k, "passed": p.passed, "entries": p.entries}
                           for p in self.points]}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Calibration:
        return cls(doc["repeat_count"], tuple(CalibrationPoint(p["k"], p["passed"], p["entries"])
                                              for p in doc["points"]))
