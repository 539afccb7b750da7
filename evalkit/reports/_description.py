"""The run's description in MLflow (``mlflow.note.content``): its verdict at a glance.

Shown on the run page above everything else: per test type the accuracy with its 95% interval,
the threshold and pass/fail, then the report names. Rendered from the run's metrics like the
reports, so it says nothing the run does not hold.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalkit.reports._markdown import cell, table
from evalkit.stats import TypeMetrics


def run_description(metrics: Sequence[TypeMetrics], reports: Sequence[str]) -> str:
    """Markdown: the verdict table across types, and the reports the run holds."""
    verdict = "PASS" if all(m.passed for m in metrics) else "FAIL"
    rows = []
    for m in metrics:
        interval = ("" if m.ci_low is None or m.ci_high is None
                    else f" [{m.ci_low:.3f}, {m.ci_high:.3f}]")
        accuracy = f"{m.accuracy:.3f}{interval}" if m.samples else "no samples"
        if m.corrected is not None:
            c = m.corrected
            accuracy += (f"; corrected by {c.labels} labels {c.estimate:.3f} "
                         f"[{c.low:.3f}, {c.high:.3f}]")
        threshold = f">= {m.threshold.min_accuracy:g}" + (
            "" if m.threshold.min_f1 is None else f", F1 >= {m.threshold.min_f1:g}")
        rows.append([cell(m.test_type), accuracy, str(m.samples), threshold,
                     "pass" if m.passed else "**FAIL**"])
    lines = [f"**evalkit verdict: {verdict}**", "",
             table(["test type", "accuracy [95% CI]", "n", "threshold", "verdict"], rows)]
    if reports:
        lines += ["", "Reports (artifacts, `reports/`): " + ", ".join(
            f"`{cell(name)}`" for name in reports)]
    return "\n".join(lines) + "\n"
