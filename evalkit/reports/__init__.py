"""Markdown reports, rendered from what an MLflow run holds and nothing else.

:func:`render_reports` is a pure function of a :class:`RunRecord`: the same run always renders
to the same bytes, which is how ``evalkit report RUN_ID`` reproduces a past run's reports. No
LLM writes any part of a report; all output text goes through :mod:`evalkit.reports._markdown` so it
cannot break a table or the chart. Report file names are in :mod:`evalkit.records.names`.
:func:`run_markdown` is the verdict as CI shows it (a job summary, a pull request comment).
"""

from __future__ import annotations

from evalkit.records import Mode, RunRecord, SeriesItems, names
from evalkit.reports._calibration import calibration_report
from evalkit.reports._chart import render_charts
from evalkit.reports._description import run_description
from evalkit.reports._human_review import human_review_report
from evalkit.reports._job_summary import (
    COMPARE_COMMENT_MARKER,
    EVAL_COMMENT_MARKER,
    inline,
    link,
    pr_comment,
    run_markdown,
)
from evalkit.reports._judge import judge_report
from evalkit.reports._markdown import fenced, table
from evalkit.reports._per_type import type_report
from evalkit.reports._plan_summary import plan_summary
from evalkit.reports._planning import planning_report
from evalkit.reports._recorded import recorded_metrics
from evalkit.reports._stability import stability_report
from evalkit.reports._summary import summary_report
from evalkit.stats import (
    Calibration,
    Plan,
    SequentialOutcome,
    StabilityDocument,
    corrected_metrics,
    judge_checks,
)


def render_reports(record: RunRecord) -> dict[str, str]:
    """File name -> markdown for every report of the run."""
    if record.mode == Mode.REPLICATES:
        return {names.STABILITY_REPORT: stability_report(
            record, StabilityDocument.from_json(record.documents[names.STABILITY_ARTIFACT]),
            SeriesItems.from_json(record.documents[names.STABILITY_ITEMS_ARTIFACT]))}
    if record.mode == Mode.PLANNING:
        return {names.PLANNING_REPORT: planning_report(
            record, Plan.from_json(record.documents[names.PLAN_ARTIFACT]))}
    assert record.evaluation is not None
    reports = {}
    sequential = SequentialOutcome.from_json(record.documents[names.SEQUENTIAL_ARTIFACT]) \
        if names.SEQUENTIAL_ARTIFACT in record.documents else None
    checks = judge_checks(record)
    typed = list(zip(record.evaluation.types,
                     corrected_metrics(recorded_metrics(record), checks), strict=True))
    for result, metrics in typed:
        reports[names.report_name(result.test_type)] = type_report(
            record, result, metrics, sequential)
    reports[names.SUMMARY_REPORT] = summary_report(
        record, typed, [names.report_name(r.test_type) for r, _ in typed],
        judge=names.JUDGE_REPORT if checks else None, sequential=sequential)
    if checks:
        reports[names.JUDGE_REPORT] = judge_report(
            record, checks, {m.test_type: m for _, m in typed})
    if record.evaluation.human_review:
        reports[names.HUMAN_REVIEW_REPORT] = human_review_report(
            record, record.evaluation.human_review)
    if record.mode == Mode.CALIBRATION:
        reports[names.CALIBRATION_REPORT] = calibration_report(
            record, Calibration.from_json(record.documents[names.CALIBRATION_ARTIFACT]))
    return reports


__all__ = ["COMPARE_COMMENT_MARKER", "EVAL_COMMENT_MARKER", "fenced", "inline", "link",
           "plan_summary", "pr_comment", "recorded_metrics", "render_charts", "render_reports",
           "run_description", "run_markdown", "table"]
