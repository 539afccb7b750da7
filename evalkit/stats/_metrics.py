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

from evalkit.records import MetricPoint, Threshold, TypeResult, history_keys
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

    @classmethod
    def from_result(cls, result: TypeResult, threshold: Threshold) -> TypeMetrics:
        scores = [item.passed for item in result.items]
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
        if self.accuracy < self.threshold.min_accuracy:
            missed.append(f"{self.test_type}_accuracy {self.accuracy:.3f} < "
                          f"{self.threshold.min_accuracy:g}")
        if self.threshold.min_f1 is not None and self.f1 < self.threshold.min_f1:
            missed.append(f"{self.test_type}_f1 {self.f1:.3f} < {self.threshold.min_f1:g}")
        return tuple(missed)

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_mlflow(self) -> list[MetricPoint]:
        t = self.test_type
        points: list[MetricPoint] = [
            (f"{t}_samples", self.samples, 0), (f"{t}_correct", self.correct, 0),
            (f"{t}_errors", self.errors, 0),
        ]
        if self.samples:
            convergence = self.convergence
            assert convergence is not None and self.ci_low is not None \
                and self.ci_high is not None
            points += [
                (f"{t}_accuracy", self.accuracy, 0), (f"{t}_precision", self.precision, 0),
                (f"{t}_recall", self.recall, 0), (f"{t}_f1", self.f1, 0),
                (f"{t}_accuracy_ci_lower", self.ci_low, 0),
                (f"{t}_accuracy_ci_upper", self.ci_high, 0),
                (f"{t}_accuracy_change_pp", convergence.accuracy_change_pp, 0),
                (f"{t}_f1_change_pp", convergence.f1_change_pp, 0),
            ]
        points += [(f"{t}_cumulative_accuracy", v, i + 1)
                   for i, v in enumerate(self.cumulative_accuracy)]
        points += [(f"{t}_cumulative_f1", v, i + 1) for i, v in enumerate(self.cumulative_f1)]
        return points

    @classmethod
    def from_mlflow(cls, test_type: str, metrics: Mapping[str, float],
                    histories: Mapping[str, Sequence[float]], threshold: Threshold) -> TypeMetrics:
        t = test_type
        samples = int(metrics[f"{t}_samples"])
        accuracy_key, f1_key = history_keys(t)
        return cls(
            test_type=t, samples=samples, correct=int(metrics[f"{t}_correct"]),
            errors=int(metrics[f"{t}_errors"]),
            accuracy=metrics.get(f"{t}_accuracy", 0.0),
            precision=metrics.get(f"{t}_precision", 0.0),
            recall=metrics.get(f"{t}_recall", 0.0), f1=metrics.get(f"{t}_f1", 0.0),
            ci_low=metrics.get(f"{t}_accuracy_ci_lower"),
            ci_high=metrics.get(f"{t}_accuracy_ci_upper"),
            cumulative_accuracy=tuple(histories.get(accuracy_key, ())),
            cumulative_f1=tuple(histories.get(f1_key, ())), threshold=threshold)


def threshold_params(test_type: str, threshold: Threshold) -> dict[str, str]:
    """The threshold a type was judged against, as MLflow params."""
    params = {f"{test_type}_min_accuracy": repr(threshold.min_accuracy)}
    if threshold.min_f1 is not None:
        params[f"{test_type}_min_f1"] = repr(threshold.min_f1)
    return params


def threshold_from_params(test_type: str, params: Mapping[str, str]) -> Threshold:
    min_f1 = params.get(f"{test_type}_min_f1")
    return Threshold(float(params[f"{test_type}_min_accuracy"]),
                     None if min_f1 is None else float(min_f1))
