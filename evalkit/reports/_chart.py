"""The reports' charts as PNGs beside their mermaid blocks: GitHub renders mermaid, MLflow's
artifact viewer shows it as code but shows a PNG."""

from __future__ import annotations

import io
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from evalkit.records import Mode, RunRecord, names
from evalkit.stats import Calibration, TypeMetrics, recorded_metrics

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def render_charts(record: RunRecord) -> dict[str, bytes]:
    """File name -> PNG of every chart the run's reports show (one per report's mermaid
    block), named as the reports' image lines name them."""
    if record.evaluation is None:  # a replicate series or a plan: no chart
        return {}
    charts = {names.convergence_chart(m.test_type): _png(partial(_convergence, metrics=m))
              for m in recorded_metrics(record) if m.convergence is not None}
    if record.mode == Mode.CALIBRATION:
        calibration = Calibration.from_json(record.documents[names.CALIBRATION_ARTIFACT])
        charts[names.CALIBRATION_CHART] = _png(partial(_calibration, calibration=calibration))
    return charts


def _png(draw: Callable[[Axes], None]) -> bytes:
    """One chart as a PNG (matplotlib, imported only here). A bare Figure, never pyplot:
    choosing a backend would change the caller's (a notebook's plots)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4), dpi=100)
    axes = figure.subplots()
    draw(axes)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    png = io.BytesIO()
    figure.savefig(png, format="png", metadata={"Software": None})
    return png.getvalue()


def _calibration(axes: Axes, calibration: Calibration) -> None:
    from matplotlib.ticker import MaxNLocator

    ks = [p.k for p in calibration.points]
    axes.plot(ks, [p.rate for p in calibration.points], marker="o", label="pass rate")
    axes.axvline(calibration.recommended, color="grey", linestyle="--",
                 label=f"recommended k = {calibration.recommended}")
    axes.set(xlabel="repeat count k", ylabel="repeatability pass rate", ylim=(0, 1.02),
             title="Repeatability pass rate by repeat count")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend(loc="lower left")


def _convergence(axes: Axes, metrics: TypeMetrics) -> None:
    from matplotlib.ticker import MaxNLocator

    samples = range(1, len(metrics.cumulative_accuracy) + 1)
    axes.plot(samples, metrics.cumulative_accuracy, label="accuracy")
    axes.plot(samples, metrics.cumulative_f1, label="F1")
    axes.set(xlabel="samples", ylabel="score", ylim=(0, 1.02),
             title=f"{metrics.test_type}: cumulative accuracy and F1")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend(loc="lower right")
