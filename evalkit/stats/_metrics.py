"""Per-type metrics of a run: :class:`TypeMetrics`, the figures of one test type.

They are computed here from scored items (:meth:`TypeMetrics.from_result`); their names in
MLflow, the threshold check that names them, and the reading back of a past run's figures
live with the other MLflow names (:mod:`evalkit.records`, :mod:`evalkit.tracking`,
:mod:`evalkit.reports`).
"""

from __future__ import annotations

from dataclasses import dataclass

from evalkit.records import Threshold, TypeResult, meets_threshold, threshold_failures
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
        """The figures of one scored type.

        Notes
        -----
        :func:`confusion_matrix` of the items' counted verdicts against their expectations
        (accuracy, precision, recall, F1), the :func:`wilson_interval` of the correct items,
        and the :func:`cumulative_series` behind :func:`convergence`.

        References
        ----------
        E. B. Wilson (1927) for the interval; docs/reports.md (Metrics and reports) for the
        metrics logged.

        Examples
        --------
        >>> from evalkit.records import ItemResult, Threshold, TypeResult
        >>> from evalkit.stats import TypeMetrics
        >>> items = tuple(ItemResult(f"e{i}", i != 3, True, "q", "a", ("a",), (f"e{i}",))
        ...               for i in range(8))
        >>> m = TypeMetrics.from_result(TypeResult("functional", "exact_match", items),
        ...                             Threshold(min_accuracy=0.8))
        >>> print(m.samples, m.correct, f"{m.accuracy:.3f} {m.ci_low:.3f} {m.ci_high:.3f}")
        8 7 0.875 0.529 0.978
        """
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
        """Why this type misses its threshold, each miss named by the metric it was checked on;
        empty when it meets it (:func:`evalkit.records.threshold_failures`)."""
        return threshold_failures(self)

    @property
    def passed(self) -> bool:
        """This type meets its threshold."""
        return meets_threshold(self)
