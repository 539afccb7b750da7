"""Markdown reports, rendered from what an MLflow run holds and nothing else.

:func:`render_reports` is a pure function of a :class:`RunRecord`: the same run always renders
to the same bytes, which is how ``evalkit report RUN_ID`` reproduces a past run's reports. No
LLM writes any part of a report; all output text goes through :mod:`evalkit._markdown` so it
cannot break a table or the chart.
"""

from __future__ import annotations

from evalkit._metrics import TypeMetrics, threshold_from_params
from evalkit._reports._human_review import human_review_report
from evalkit._reports._per_type import type_report
from evalkit._reports._stability import STABILITY_REPORT, stability_report
from evalkit._tracking import RunRecord

HUMAN_REVIEW_REPORT = "report-human-review.md"


def report_name(test_type: str) -> str:
    return f"report-{test_type}.md"


def render_reports(record: RunRecord) -> dict[str, str]:
    """File name -> markdown for every report of the run."""
    if record.stability is not None:
        return {STABILITY_REPORT: stability_report(record, record.stability,
                                                   record.stability_items or {})}
    assert record.evaluation is not None
    reports = {}
    for result in record.evaluation.types:
        metrics = TypeMetrics.from_mlflow(
            result.test_type, record.metrics, record.histories,
            threshold_from_params(result.test_type, record.params))
        reports[report_name(result.test_type)] = type_report(record, result, metrics)
    if record.evaluation.human_review:
        reports[HUMAN_REVIEW_REPORT] = human_review_report(record, record.evaluation.human_review)
    return reports


__all__ = ["HUMAN_REVIEW_REPORT", "STABILITY_REPORT", "render_reports", "report_name"]
