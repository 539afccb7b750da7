"""Per-type metrics of a run, and their names in MLflow.

This module is the contract between a run and its history: :meth:`TypeMetrics.from_result`
computes the figures from scored items, :meth:`TypeMetrics.to_mlflow` names them as logged
(``<type>_accuracy``, ``<type>_f1``, ...; the cumulative series as stepped metrics so the
MLflow UI charts convergence), and :meth:`TypeMetrics.from_mlflow` reads them back for the
reports of any past run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evalkit.records import MetricPoint, RunRecord, Threshold, TypeNames, TypeResult
from evalkit.stats._corrected import CorrectedAccuracy
from evalkit.stats._one_run import (
    Convergence,
    confusion_matrix,
    convergence,
    cumulative_series,
    wilson_interval,
)


@dataclass(frozen=True)
class TypeMetrics:
    """The figures of one test type in one run."""

    test_type: str
    samples: int
    """Entries, or bias groups for ``bias``."""
    correct: int
    errors: int
    accuracy: float
    precision: float
    recall: float
    f1: float
    ci_low: float | None
    ci_high: float | None
    cumulative_accuracy: tuple[float, ...]
    cumulative_f1: tuple[float, ...]
    threshold: Threshold
    corrected: CorrectedAccuracy | None = None
    """The accuracy corrected for the scorer's errors by people's labels, once enough labels
    allow it (:func:`evalkit.stats.check_judge`): then the threshold is checked against it."""

    @classmethod
    def from_result(cls, result: TypeResult, threshold: Threshold) -> TypeMetrics:
        scores = [item.counted_pass for item in result.items]
        expected = [item.expected_pass for item in result.items]
        matrix = confusion_matrix(scores, expected)
        interval = wilson_interval(matrix.correct, matrix.n) if matrix.n else None
        accuracy_series, f1_series = cumulative_series(scores, expected)
        return cls(
            test_type=result.test_type, samples=matrix.n, correct=matrix.correct,
            errors=sum(item.error is not None for item in result.items),
            accuracy=matrix.accuracy, precision=matrix.precision, recall=matrix.recall,
            f1=matrix.f1, ci_low=interval.low if interval else None,
            ci_high=interval.high if interval else None,
            cumulative_accuracy=accuracy_series, cumulative_f1=f1_series, threshold=threshold)

    @property
    def convergence(self) -> Convergence | None:
        if not self.samples:
            return None
        return convergence(self.cumulative_accuracy, self.cumulative_f1)

    @property
    def failures(self) -> tuple[str, ...]:
        """Why this type misses its threshold; empty when it meets it."""
        if not self.samples:
            return (f"{self.test_type}: no samples were scored",)
        missed = []
        n = TypeNames.of(self.test_type)
        name, accuracy = ((n.accuracy_corrected, self.corrected.estimate) if self.corrected
                          else (n.accuracy, self.accuracy))
        if accuracy < self.threshold.min_accuracy:
            missed.append(f"{name} {accuracy:.3f} < {self.threshold.min_accuracy:g}")
        if self.threshold.min_f1 is not None and self.f1 < self.threshold.min_f1:
            missed.append(f"{n.f1} {self.f1:.3f} < {self.threshold.min_f1:g}")
        return tuple(missed)

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_mlflow(self) -> list[MetricPoint]:
        n = TypeNames.of(self.test_type)
        points = [MetricPoint(n.samples, self.samples), MetricPoint(n.correct, self.correct),
                  MetricPoint(n.errors, self.errors)]
        if self.samples:
            convergence = self.convergence
            assert convergence is not None and self.ci_low is not None \
                and self.ci_high is not None
            points += [MetricPoint(key, value) for key, value in (
                (n.accuracy, self.accuracy), (n.precision, self.precision),
                (n.recall, self.recall), (n.f1, self.f1), (n.ci_lower, self.ci_low),
                (n.ci_upper, self.ci_high), (n.accuracy_change, convergence.accuracy_change_pp),
                (n.f1_change, convergence.f1_change_pp))]
        points += [MetricPoint(n.cumulative_accuracy, v, i + 1)
                   for i, v in enumerate(self.cumulative_accuracy)]
        points += [MetricPoint(n.cumulative_f1, v, i + 1)
                   for i, v in enumerate(self.cumulative_f1)]
        return points

    @classmethod
    def from_mlflow(cls, test_type: str, metrics: Mapping[str, float],
                    histories: Mapping[str, Sequence[float]], threshold: Threshold) -> TypeMetrics:
        n = TypeNames.of(test_type)
        return cls(
            test_type=test_type, samples=int(metrics[n.samples]), correct=int(metrics[n.correct]),
            errors=int(metrics[n.errors]), accuracy=metrics.get(n.accuracy, 0.0),
            precision=metrics.get(n.precision, 0.0), recall=metrics.get(n.recall, 0.0),
            f1=metrics.get(n.f1, 0.0), ci_low=metrics.get(n.ci_lower),
            ci_high=metrics.get(n.ci_upper),
            cumulative_accuracy=tuple(histories.get(n.cumulative_accuracy, ())),
            cumulative_f1=tuple(histories.get(n.cumulative_f1, ())), threshold=threshold)


def recorded_metrics(record: RunRecord) -> tuple[TypeMetrics, ...]:
    """Each scored type's metrics as a run holds them, with the threshold it logged."""
    assert record.evaluation is not None
    return tuple(TypeMetrics.from_mlflow(r.test_type, record.metrics, record.histories,
                                         threshold_from_params(r.test_type, record.params))
                 for r in record.evaluation.types)


def threshold_params(test_type: str, threshold: Threshold) -> dict[str, str]:
    """The threshold a type was judged against, as MLflow params."""
    n = TypeNames.of(test_type)
    params = {n.min_accuracy: repr(threshold.min_accuracy)}
    if threshold.min_f1 is not None:
        params[n.min_f1] = repr(threshold.min_f1)
    return params


def threshold_from_params(test_type: str, params: Mapping[str, str]) -> Threshold:
    n = TypeNames.of(test_type)
    min_f1 = params.get(n.min_f1)
    return Threshold(float(params[n.min_accuracy]), None if min_f1 is None else float(min_f1))
