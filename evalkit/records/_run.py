"""A run as MLflow holds it: the artifact layout, and the record read back from a run.

Artifact layout of a run::

    results/evaluation.json     every scored item (the reports are rendered from it)
    results/entries.json        per-entry results table (mlflow.log_table), for the UI
    raw/raw-results.jsonl       every component call as it happened
    reports/report-<type>.md    the reports of the run

and of the parent run of a replicate series (``mode`` tag ``replicates``)::

    stability/stability.json    per metric: rates, mean, sd, spread, variance split, flips
    stability/items.json        every item's result in every replicate
    stability/replicates.lock.json   the seeds of the replicates
    reports/report-stability.md

and of a calibration run (``mode`` tag ``calibration``), besides the ordinary artifacts::

    calibration/calibration.json     pass rate by repeat count k, the recommended k
    reports/report-calibration.md, reports/calibration.png
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalkit.records._results import ScoredRun

EVALUATION_ARTIFACT = "results/evaluation.json"
STABILITY_ARTIFACT = "stability/stability.json"
STABILITY_ITEMS_ARTIFACT = "stability/items.json"
LOCK_ARTIFACT = "stability/replicates.lock.json"
CALIBRATION_ARTIFACT = "calibration/calibration.json"
PLAN_ARTIFACT = "planning/plan.json"
MODE_DOCUMENTS: Mapping[str, tuple[str, ...]] = {
    "replicates": (STABILITY_ARTIFACT, STABILITY_ITEMS_ARTIFACT),
    "calibration": (CALIBRATION_ARTIFACT,),
    "planning": (PLAN_ARTIFACT,),
}
"""The JSON artifacts a run of each mode holds beside (or instead of) evaluation.json."""
WITHOUT_EVALUATION = frozenset({"replicates", "planning"})
TABLE_ARTIFACT = "results/entries.json"
PROBE_ARTIFACT = "evalkit/run.json"
"""Written when the run starts: proves the artifact store takes writes before any call."""
RAW_ARTIFACT_DIR = "raw"
REPORTS_ARTIFACT_DIR = "reports"


@dataclass(frozen=True)
class ReviewerVerdict:
    """Feedback a person added to an entry's trace in the MLflow UI (source HUMAN)."""

    entry_id: str
    reviewer: str
    time_ms: int
    name: str
    value: Any
    comment: str | None


@dataclass(frozen=True)
class RunRecord:
    """Everything MLflow holds about one evaluation run, or one replicate series' parent."""

    run_id: str
    run_name: str
    experiment_id: str
    experiment_name: str
    start_time_ms: int
    status: str
    params: Mapping[str, str]
    tags: Mapping[str, str]
    metrics: Mapping[str, float]
    histories: Mapping[str, tuple[float, ...]]
    evaluation: ScoredRun | None
    """Scored items; ``None`` for runs that call no component (a replicate parent, a plan)."""
    documents: Mapping[str, Any] = field(default_factory=dict)
    """The JSON artifacts of the run's mode (see :data:`MODE_DOCUMENTS`), by artifact path."""
    reviewer_verdicts: tuple[ReviewerVerdict, ...] = ()
    """Human feedback on the run's traces, by entry, time and reviewer."""

    @property
    def mode(self) -> str | None:
        """``replicates``, ``calibration``, ``planning``, or ``None`` for an ordinary run."""
        return self.tags.get("mode")
