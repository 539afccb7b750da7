"""Markdown reports, rendered from what an MLflow run holds and nothing else.

:func:`render_reports` is a pure function of a :class:`RunRecord`: the same run always renders
to the same bytes, which is how ``evalkit report RUN_ID`` reproduces a past run's reports. No
LLM writes any part of a report; all output text goes through :mod:`evalkit.reports._markdown` so it
cannot break a table or the chart.
"""

from __future__ import annotations

from evalkit._errors import TrackingError
from evalkit.records import (
    CALIBRATION_ARTIFACT,
    MODE_DOCUMENTS,
    PLAN_ARTIFACT,
    STABILITY_ARTIFACT,
    STABILITY_ITEMS_ARTIFACT,
    RunRecord,
)
from evalkit.reports._calibration import CALIBRATION_REPORT, calibration_report
from evalkit.reports._chart import CHART_FILE, plot_calibration
from evalkit.reports._description import DESCRIPTION_TAG, run_description
from evalkit.reports._human_review import human_review_report
from evalkit.reports._per_type import type_report
from evalkit.reports._planning import PLANNING_REPORT, planning_report
from evalkit.reports._stability import STABILITY_REPORT, stability_report
from evalkit.reports._summary import SUMMARY_REPORT, summary_report
from evalkit.stats import TypeMetrics, threshold_from_params

HUMAN_REVIEW_REPORT = "report-human-review.md"


def report_name(test_type: str) -> str:
    return f"report-{test_type}.md"


def render_reports(record: RunRecord) -> dict[str, str]:
    """File name -> markdown for every report of the run."""
    missing = [p for p in MODE_DOCUMENTS.get(record.mode or "", ())
               if p not in record.documents and record.mode != "calibration"]
    if missing:
        raise TrackingError(f"run {record.run_id} has no {', '.join(missing)}: it did not "
                            "finish, so there is nothing to render")
    if record.mode == "replicates":
        return {STABILITY_REPORT: stability_report(
            record, record.documents[STABILITY_ARTIFACT],
            record.documents[STABILITY_ITEMS_ARTIFACT])}
    if record.mode == "planning":
        return {PLANNING_REPORT: planning_report(record, record.documents[PLAN_ARTIFACT])}
    assert record.evaluation is not None
    reports = {}
    typed = []
    for result in record.evaluation.types:
        metrics = TypeMetrics.from_mlflow(
            result.test_type, record.metrics, record.histories,
            threshold_from_params(result.test_type, record.params))
        reports[report_name(result.test_type)] = type_report(record, result, metrics)
        typed.append((result, metrics))
    reports[SUMMARY_REPORT] = summary_report(record, typed,
                                             [report_name(r.test_type) for r, _ in typed])
    if record.evaluation.human_review:
        reports[HUMAN_REVIEW_REPORT] = human_review_report(record, record.evaluation.human_review)
    if CALIBRATION_ARTIFACT in record.documents:
        reports[CALIBRATION_REPORT] = calibration_report(
            record, record.documents[CALIBRATION_ARTIFACT])
    return reports


__all__ = ["CALIBRATION_REPORT", "CHART_FILE", "DESCRIPTION_TAG", "HUMAN_REVIEW_REPORT",
           "PLANNING_REPORT", "STABILITY_REPORT", "SUMMARY_REPORT", "plot_calibration",
           "render_reports", "report_name", "run_description"]
