"""The run's plain records, shared by every wing: scored results, calls, thresholds, metric
points, every name written to MLflow (:mod:`evalkit.records.names`), and the record of a run
read back from MLflow.

Scoring writes them, statistics and tracking take them, reports render them; none of those
wings knows about the others.
"""

from evalkit.records import names
from evalkit.records._calls import CallRecord
from evalkit.records._labels import FAIL_VALUES, PASS_VALUES, HumanLabel, label_verdict, labels_in
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
)
from evalkit.records._run import MODE_DOCUMENTS, WITHOUT_EVALUATION, ReviewerVerdict, RunRecord
from evalkit.records._series import ItemCell, SeriesItems
from evalkit.records.names import Mode, TypeNames

__all__ = [
    "FAIL_VALUES", "FORMAT", "MODE_DOCUMENTS", "PASS_VALUES", "WITHOUT_EVALUATION",
    "CallRecord", "HumanLabel", "HumanReviewItem",
    "ItemCell", "ItemResult", "MetricPoint", "Mode", "ReviewerVerdict", "RunRecord",
    "ScoredRun", "SeriesItems", "SkippedGroup", "Threshold", "TypeNames", "TypeResult",
    "as_text", "label_verdict", "labels_in", "names",
]
