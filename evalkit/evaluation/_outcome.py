"""What a finished evaluation produced: the record every mode hands back to its caller."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evalkit.records import RunUsage, ScoredRun
from evalkit.stats import JudgeCheck, TypeMetrics

if TYPE_CHECKING:
    from evalkit.stats import SequentialOutcome


@dataclass(frozen=True)
class EvaluationOutcome:
    """What a finished evaluation produced and whether it met its thresholds."""

    run_id: str
    experiment_name: str
    tracking_uri: str
    metrics: tuple[TypeMetrics, ...]
    scored: ScoredRun
    reports: tuple[Path, ...]
    """Reports written to the reports folder (none for a replicate: those stay in MLflow)."""
    raw_results: Path
    run_url: str
    """The run's page in the MLflow UI (never with credentials)."""
    timings: Mapping[str, float] = field(default_factory=dict)
    """Seconds spent per phase: calls, scoring, logging, reports."""
    checks: Mapping[str, JudgeCheck] = field(default_factory=dict)
    """The scorers held against people's labels, per type (judged or labelled types)."""
    usage: RunUsage = RunUsage()
    """The tokens and cost of the component's calls and of the judge's, as the run logged."""
    sequential: SequentialOutcome | None = None
    """A sequential run's settlement: it, not the metrics, gives the verdict."""

    def type_verdict(self, test_type: str) -> str:
        """PASS or FAIL (or, for a sequential run, INCONCLUSIVE) of one type."""
        settled = None if self.sequential is None else self.sequential.settlement(test_type)
        if settled is not None:
            return settled.gate
        return "PASS" if all(m.passed for m in self.metrics if m.test_type == test_type) \
            else "FAIL"

    @property
    def verdict(self) -> str:
        """PASS, FAIL, or (a sequential run only) INCONCLUSIVE."""
        if self.sequential is not None:
            return self.sequential.verdict
        return "PASS" if self.passed else "FAIL"

    @property
    def failures(self) -> tuple[str, ...]:
        if self.sequential is not None:
            return tuple(t.failure(m.threshold.min_accuracy)
                         for t in self.sequential.types for m in self.metrics
                         if m.test_type == t.test_type and t.gate != "PASS")
        return tuple(f for m in self.metrics for f in m.failures)

    @property
    def passed(self) -> bool:
        return not self.failures
