"""The reports' charts as SVG pictures beside their mermaid blocks: GitHub renders mermaid,
MLflow's artifact viewer shows it as code but shows an SVG as a picture."""

from __future__ import annotations

from evalkit.records import Mode, RunRecord, names
from evalkit.reports._recorded import recorded_metrics
from evalkit.reports._svg import Line, LineChart, Rule
from evalkit.stats import Calibration, TypeMetrics


def render_charts(record: RunRecord) -> dict[str, str]:
    """File name -> SVG of every chart the run's reports show (one per report's mermaid
    block), named as the reports' image lines name them."""
    if record.evaluation is None:  # a replicate series or a plan: no chart
        return {}
    charts = {names.convergence_chart(m.test_type): _convergence(m).svg()
              for m in recorded_metrics(record) if m.convergence is not None}
    if record.mode == Mode.CALIBRATION:
        calibration = Calibration.from_json(record.documents[names.CALIBRATION_ARTIFACT])
        charts[names.CALIBRATION_CHART] = _calibration(calibration).svg()
    return charts


def _calibration(calibration: Calibration) -> LineChart:
    points = calibration.points
    return LineChart(
        "Repeatability pass rate by repeat count", "repeat count k",
        "repeatability pass rate",
        [Line("pass rate", [(p.k, p.rate) for p in points], markers=True)],
        rule=Rule(calibration.recommended, f"recommended k = {calibration.recommended}"),
        legend_left=True)


def _convergence(metrics: TypeMetrics) -> LineChart:
    samples = range(1, len(metrics.cumulative_accuracy) + 1)
    return LineChart(
        f"{metrics.test_type}: cumulative accuracy and F1", "samples", "score",
        [Line("accuracy", list(zip(samples, metrics.cumulative_accuracy, strict=True))),
         Line("F1", list(zip(samples, metrics.cumulative_f1, strict=True)))])
