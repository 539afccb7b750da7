"""The figures of a run's statistics as the MLflow metrics it logs.

Each test type's figures (:class:`~evalkit.stats.TypeMetrics`) under ``<type>_accuracy``,
``<type>_f1``, ..., with the cumulative series as stepped metrics so that the MLflow UI charts
convergence; each scorer's check against people's labels (:class:`~evalkit.stats.JudgeCheck`)
under ``<type>_accuracy_corrected``, ``<type>_judge_kappa``, .... The names are those of
:class:`~evalkit.records.TypeNames`; the reports read them back with the same names
(:func:`evalkit.reports.recorded_metrics`).
"""

from __future__ import annotations

from evalkit.records import MetricPoint, TypeNames
from evalkit.stats import JudgeCheck, TypeMetrics


def type_points(metrics: TypeMetrics) -> list[MetricPoint]:
    """One type's figures as MLflow metrics."""
    n = TypeNames.of(metrics.test_type)
    points = [MetricPoint(n.samples, metrics.samples), MetricPoint(n.correct, metrics.correct),
              MetricPoint(n.errors, metrics.errors)]
    if metrics.samples:
        convergence = metrics.convergence
        assert convergence is not None and metrics.ci_low is not None \
            and metrics.ci_high is not None
        points += [MetricPoint(key, value) for key, value in (
            (n.accuracy, metrics.accuracy), (n.precision, metrics.precision),
            (n.recall, metrics.recall), (n.f1, metrics.f1), (n.ci_lower, metrics.ci_low),
            (n.ci_upper, metrics.ci_high), (n.accuracy_change, convergence.accuracy_change_pp),
            (n.f1_change, convergence.f1_change_pp))]
    points += [MetricPoint(n.cumulative_accuracy, v, i + 1)
               for i, v in enumerate(metrics.cumulative_accuracy)]
    points += [MetricPoint(n.cumulative_f1, v, i + 1)
               for i, v in enumerate(metrics.cumulative_f1)]
    return points


def judge_points(check: JudgeCheck) -> list[MetricPoint]:
    """The check's MLflow metrics (``<type>_accuracy_corrected`` and its bounds once a
    correction is given, the judge's rates and kappa once labels allow them)."""
    n = TypeNames.of(check.test_type)
    points = [MetricPoint(n.labels_drawn, len(check.drawn_labels)),
              MetricPoint(n.labels_by_choice, len(check.chosen_labels))]
    if check.corrected is not None:
        c = check.corrected
        points += [MetricPoint(n.accuracy_corrected, c.estimate),
                   MetricPoint(n.accuracy_corrected_low, c.low),
                   MetricPoint(n.accuracy_corrected_high, c.high)]
    if check.stability is not None:
        points.append(MetricPoint(n.judge_flip_rate, check.stability.flip_rate))
    a = check.agreement
    if a is not None:
        points += [MetricPoint(key, rate.successes / rate.n) for key, rate in (
            (n.judge_tpr, a.tpr), (n.judge_tnr, a.tnr)) if rate is not None]
        if a.kappa is not None:
            points.append(MetricPoint(n.judge_kappa, a.kappa.value))
    return points
