"""What a finished evaluation produced: the record every mode hands back to its caller."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evalkit.records import RunUsage, ScoredRun
from evalkit.stats import JudgeCheck, TypeMetrics


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

    @property
    def failures(self) -> tuple[str, ...]:
        return tuple(f for m in self.metrics for f in m.failures)

    @property
    def passed(self) -> bool:
        return not self.failures
