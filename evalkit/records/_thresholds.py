"""A test type's thresholds as a run records them: the params that hold them, and the misses
of a type's figures against them, each named by the metric it was checked on
(``functional_accuracy 0.750 < 0.8``).

The figures come from :class:`evalkit.stats.TypeMetrics`; records import no other wing, so
:class:`JudgedFigures` says what the check reads of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from evalkit.records._results import Threshold
from evalkit.records.names import TypeNames


class Estimate(Protocol):
    """An accuracy corrected for the scorer by people's labels."""

    @property
    def estimate(self) -> float: ...


class JudgedFigures(Protocol):
    """What the threshold check reads of one type's figures in one run."""

    @property
    def test_type(self) -> str: ...

    @property
    def samples(self) -> int: ...

    @property
    def accuracy(self) -> float: ...

    @property
    def f1(self) -> float: ...

    @property
    def threshold(self) -> Threshold: ...

    @property
    def corrected(self) -> Estimate | None:
        """Once given, the threshold is checked against it instead of the raw accuracy."""


def threshold_failures(figures: JudgedFigures) -> tuple[str, ...]:
    """Why a type misses its threshold; empty when it meets it."""
    if not figures.samples:
        return (f"{figures.test_type}: no samples were scored",)
    missed = []
    n = TypeNames.of(figures.test_type)
    threshold = figures.threshold
    name, accuracy = ((n.accuracy_corrected, figures.corrected.estimate) if figures.corrected
                      else (n.accuracy, figures.accuracy))
    if accuracy < threshold.min_accuracy:
        missed.append(f"{name} {accuracy:.3f} < {threshold.min_accuracy:g}")
    if threshold.min_f1 is not None and figures.f1 < threshold.min_f1:
        missed.append(f"{n.f1} {figures.f1:.3f} < {threshold.min_f1:g}")
    return tuple(missed)


def meets_threshold(figures: JudgedFigures) -> bool:
    """The type meets its threshold: :func:`threshold_failures` finds nothing."""
    return not threshold_failures(figures)


def threshold_params(test_type: str, threshold: Threshold) -> dict[str, str]:
    """The threshold a type was judged against, as MLflow params."""
    n = TypeNames.of(test_type)
    params = {n.min_accuracy: repr(threshold.min_accuracy)}
    if threshold.min_f1 is not None:
        params[n.min_f1] = repr(threshold.min_f1)
    return params


def threshold_from_params(test_type: str, params: Mapping[str, str]) -> Threshold:
    """The threshold a type was judged against, read back from its run's params."""
    n = TypeNames.of(test_type)
    min_f1 = params.get(n.min_f1)
    return Threshold(float(params[n.min_accuracy]), None if min_f1 is None else float(min_f1))
