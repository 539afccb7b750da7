"""The run's plain records, shared by every wing: scored results, thresholds, metric points,
the artifact layout of a run and the record read back from MLflow.

Scoring writes them, statistics and tracking take them, reports render them; none of those
wings knows about the others.
"""

from evalkit.records._results import (
    FORMAT,
    HumanReviewItem,
    ItemResult,
    MetricPoint,
    ScoredRun,
    SkippedGroup,
    Threshold,
    TypeResult,
    as_text,
    history_keys,
)
from evalkit.records._run import (
    CALIBRATION_ARTIFACT,
    EVALUATION_ARTIFACT,
    LOCK_ARTIFACT,
    MODE_DOCUMENTS,
    PLAN_ARTIFACT,
    PROBE_ARTIFACT,
    RAW_ARTIFACT_DIR,
    REPORTS_ARTIFACT_DIR,
    STABILITY_ARTIFACT,
    STABILITY_ITEMS_ARTIFACT,
    TABLE_ARTIFACT,
    WITHOUT_EVALUATION,
    ReviewerVerdict,
    RunRecord,
)

__all__ = [
    "CALIBRATION_ARTIFACT", "EVALUATION_ARTIFACT", "FORMAT", "LOCK_ARTIFACT", "MODE_DOCUMENTS",
    "PLAN_ARTIFACT", "PROBE_ARTIFACT", "RAW_ARTIFACT_DIR", "REPORTS_ARTIFACT_DIR",
    "STABILITY_ARTIFACT", "STABILITY_ITEMS_ARTIFACT", "TABLE_ARTIFACT", "WITHOUT_EVALUATION",
    "HumanReviewItem", "ItemResult", "MetricPoint", "ReviewerVerdict", "RunRecord", "ScoredRun",
    "SkippedGroup", "Threshold", "TypeResult", "as_text", "history_keys",
]
