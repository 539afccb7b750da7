"""A type's threshold as a run records it: the check at its boundary, the words of a miss, and
the params that carry the threshold to every later reader (compare, report, plan)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from evalkit.records import (
    Threshold,
    TypeNames,
    meets_threshold,
    threshold_failures,
    threshold_from_params,
    threshold_params,
)


@dataclass(frozen=True)
class Corrected:
    estimate: float


@dataclass(frozen=True)
class Figures:
    """One type's figures as the check reads them (``TypeMetrics`` has these and more)."""

    threshold: Threshold
    accuracy: float = 1.0
    f1: float = 1.0
    samples: int = 10
    test_type: str = "functional"
    corrected: Corrected | None = None


def test_a_figure_equal_to_its_minimum_meets_it() -> None:
    at = Figures(Threshold(0.8, min_f1=0.6), accuracy=0.8, f1=0.6)
    assert threshold_failures(at) == () and meets_threshold(at)


def test_each_miss_is_named_by_the_metric_it_was_checked_on() -> None:
    below = Figures(Threshold(0.8, min_f1=0.6), accuracy=0.75, f1=0.5)
    assert threshold_failures(below) == ("functional_accuracy 0.750 < 0.8",
                                         "functional_f1 0.500 < 0.6")
    assert not meets_threshold(below)
    only_f1 = Figures(Threshold(0.8, min_f1=0.6), f1=0.59)
    assert threshold_failures(only_f1) == ("functional_f1 0.590 < 0.6",)


def test_an_f1_is_checked_only_against_a_minimum_that_was_set() -> None:
    assert threshold_failures(Figures(Threshold(0.8), f1=0.0)) == ()


def test_labels_move_the_check_to_the_corrected_accuracy() -> None:
    corrected = Figures(Threshold(0.8), accuracy=1.0, corrected=Corrected(0.7))
    assert threshold_failures(corrected) == ("functional_accuracy_corrected 0.700 < 0.8",)
    assert meets_threshold(Figures(Threshold(0.8), accuracy=0.5, corrected=Corrected(0.8)))


def test_a_type_with_nothing_scored_misses_whatever_its_minimum() -> None:
    assert threshold_failures(Figures(Threshold(0.0), samples=0)) == (
        "functional: no samples were scored",)


@pytest.mark.parametrize("threshold", [Threshold(0.8), Threshold(0.8, min_f1=0.65),
                                       Threshold(0.1 + 0.2, min_f1=0.0)])
def test_a_threshold_reads_back_from_its_params_exactly(threshold: Threshold) -> None:
    params = threshold_params("bias", threshold)
    n = TypeNames.of("bias")
    assert params[n.min_accuracy] == repr(threshold.min_accuracy)
    assert params.get(n.min_f1) == (None if threshold.min_f1 is None
                                    else repr(threshold.min_f1))
    assert threshold_from_params("bias", params) == threshold
    # Other types' params beside them are not read.
    assert threshold_from_params("bias", {**threshold_params("smoke", Threshold(0.5, 0.5)),
                                          **params}) == threshold
