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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit._loop import CallRecord
from evalkit.scorers import OutputGroup, Scorer

PLATEAU_RULE = ("the smallest k from which the pass rate stays within one entry (1/n) of its "
                "value at the largest k for every larger k")
CHART_FILE = "calibration.png"


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


def prefix_pass_rates(entries: Sequence[tuple[Any, Sequence[CallRecord]]],
                      scorer: Scorer) -> Calibration:
    """Score the first k recorded calls of every entry (its input, its calls in order), for
    k = 2..N, with no new calls.

    An entry whose first k calls include an error fails at k, as it would in a run."""
    counts = {len(calls) for _, calls in entries}
    if len(counts) != 1 or min(counts) < 2:
        raise ValueError("calibration needs entries with the same number (>= 2) of calls")
    (repeat_count,) = counts
    points = []
    for k in range(2, repeat_count + 1):
        clean = [(entry_input, calls[:k]) for entry_input, calls in entries
                 if all(c.error is None for c in calls[:k])]
        verdicts = scorer.among_outputs([
            OutputGroup((entry_input,) * k, tuple(c.output for c in calls))
            for entry_input, calls in clean])
        points.append(CalibrationPoint(k, sum(v.passed and v.error is None for v in verdicts),
                                       len(entries)))
    return Calibration(repeat_count, tuple(points))


def plot(calibration: Calibration, path: Path) -> None:
    """The pass rate against k as a PNG (matplotlib, imported only here)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.ticker import MaxNLocator

    figure, axes = plt.subplots(figsize=(7, 4), dpi=100)
    ks = [p.k for p in calibration.points]
    axes.plot(ks, [p.rate for p in calibration.points], marker="o", label="pass rate")
    axes.axvline(calibration.recommended, color="grey", linestyle="--",
                 label=f"recommended k = {calibration.recommended}")
    axes.set(xlabel="repeat count k", ylabel="repeatability pass rate", ylim=(0, 1.02),
             title="Repeatability pass rate by repeat count")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend(loc="lower left")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, metadata={"Software": None})
    plt.close(figure)
