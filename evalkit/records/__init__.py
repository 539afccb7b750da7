"""The run's plain records, shared by every wing: scored results, calls, thresholds, metric
points, every name written to MLflow (:mod:`evalkit.records.names`), and the record of a run
read back from MLflow.

Scoring writes them, statistics and tracking take them, reports render them; none of those
wings knows about the others.
"""

from evalkit.records import names
from evalkit.records._calls import CallRecord, SpanRecord
from evalkit.records._labels import (
    HumanLabel,
    ReviewerVerdict,
    label_names,
    label_verdict,
    labels_in,
    review_verdicts,
)
from evalkit.records._results import (
    HumanReviewItem,
    ItemResult,
    JudgeCall,
    MetricPoint,
    ScoredRun,
    SkippedGroup,
    Threshold,
    TypeResult,
    as_object,
    as_text,
)
from evalkit.records._run import MODE_DOCUMENTS, WITHOUT_EVALUATION, RunRecord
from evalkit.records._series import ItemCell, SeriesItems
from evalkit.records._thresholds import (
    meets_threshold,
    threshold_failures,
    threshold_from_params,
    threshold_params,
)
from evalkit.records._usage import (
    Prices,
    RunUsage,
    TokenPrice,
    TokenUsage,
    checked_usage,
    cost_of,
    merged,
    prices_from_param,
    spans_carry_usage,
    usage_attribute,
    usage_of,
    usage_of_spans,
    usd,
)
from evalkit.records.names import Mode, TypeNames

__all__ = [
    "MODE_DOCUMENTS", "WITHOUT_EVALUATION",
    "CallRecord", "HumanLabel", "HumanReviewItem",
    "ItemCell", "ItemResult", "JudgeCall", "MetricPoint", "Prices", "RunUsage", "TokenPrice",
    "TokenUsage",
    "Mode", "ReviewerVerdict", "RunRecord",
    "ScoredRun", "SeriesItems", "SkippedGroup", "SpanRecord", "Threshold", "TypeNames",
    "TypeResult",
    "as_object", "as_text", "checked_usage", "cost_of", "label_names", "label_verdict",
    "labels_in", "meets_threshold", "merged", "names",
    "prices_from_param", "review_verdicts", "threshold_failures", "threshold_from_params",
    "threshold_params", "usage_attribute", "usage_of", "usage_of_spans", "spans_carry_usage",
    "usd",
]
