"""Statistics of one run: reference values worked by hand, and properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalkit import (
    ConfusionMatrix,
    chart_points,
    confusion_matrix,
    convergence,
    cumulative_series,
    wilson_interval,
)
from evalkit.stats._one_run import (
    MIN_CONVERGENCE_SAMPLES,
    STABLE_RECOMMENDATION,
    UNSTABLE_RECOMMENDATION,
)

Z95 = 1.959963984540054


def wilson_by_hand(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The textbook formula, written independently of the implementation (which uses scipy)."""
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_wilson_22_of_25_matches_the_worked_value() -> None:
    interval = wilson_interval(22, 25)
    assert (round(interval.low, 3), round(interval.high, 3)) == (0.700, 0.958)
    assert interval.low == pytest.approx(0.700442, abs=1e-6)
    assert interval.high == pytest.approx(0.958332, abs=1e-6)


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 10), (10, 10), (3, 7), (45, 50),
                                      (500, 1000)])
def test_wilson_agrees_with_the_formula(k: int, n: int) -> None:
    low, high = wilson_by_hand(k, n)
    interval = wilson_interval(k, n)
    assert interval.low == pytest.approx(low, abs=1e-9)
    assert interval.high == pytest.approx(high, abs=1e-9)


def test_wilson_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError):
        wilson_interval(0, 0)
    with pytest.raises(ValueError):
        wilson_interval(6, 5)


@given(st.integers(1, 2000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_contains_the_estimate_and_is_symmetric(counts: tuple[int, int]) -> None:
    k, n = counts
    interval = wilson_interval(k, n)
    assert 0 <= interval.low <= k / n <= interval.high <= 1
    mirror = wilson_interval(n - k, n)
    assert interval.low == pytest.approx(1 - mirror.high, abs=1e-9)


def test_all_expected_pass_gives_recall_accuracy_and_precision_one() -> None:
    matrix = confusion_matrix([True] * 22 + [False] * 3, [True] * 25)
    assert matrix == ConfusionMatrix(tp=22, fp=0, tn=0, fn=3)
    assert matrix.accuracy == matrix.recall == 0.88
    assert matrix.precision == 1.0
    assert matrix.f1 == pytest.approx(2 * 0.88 / 1.88)


def test_confusion_matrix_with_annotated_negatives() -> None:
    # scores   T T F F T ; expected T F F T T  ->  TP 2 (0, 4), FP 1 (1), TN 1 (2), FN 1 (3)
    matrix = confusion_matrix([True, True, False, False, True], [True, False, False, True, True])
    assert (matrix.tp, matrix.fp, matrix.tn, matrix.fn) == (2, 1, 1, 1)
    assert matrix.accuracy == pytest.approx(0.6)
    assert matrix.precision == pytest.approx(2 / 3)
    assert matrix.recall == pytest.approx(2 / 3)
    assert matrix.f1 == pytest.approx(2 / 3)


def test_nothing_passes_gives_f1_zero() -> None:
    matrix = confusion_matrix([False] * 4, [True] * 4)
    assert (matrix.accuracy, matrix.precision, matrix.recall, matrix.f1) == (0.0, 1.0, 0.0, 0.0)


@given(st.lists(st.booleans(), min_size=1, max_size=200))
def test_spec_rule_holds_for_any_scores_when_all_expected_pass(scores: list[bool]) -> None:
    matrix = confusion_matrix(scores, [True] * len(scores))
    assert matrix.recall == matrix.accuracy == sum(scores) / len(scores)
    assert matrix.precision == 1.0


def test_cumulative_series_by_hand() -> None:
    accuracy, f1 = cumulative_series([True, False, True, True], [True] * 4)
    assert accuracy == pytest.approx((1.0, 0.5, 2 / 3, 0.75))
    # Precision stays 1, so F1 = 2R / (1 + R).
    assert f1 == pytest.approx((1.0, 2 / 3, 0.8, 1.5 / 1.75))


def test_short_unsettled_run_is_too_short_to_judge() -> None:
    result = convergence(*cumulative_series([True, False, True, True], [True] * 4))
    assert result.window == 4
    assert result.accuracy_change_pp == pytest.approx(50.0)
    assert result.f1_change_pp == pytest.approx(100 / 3)
    assert not result.stable
    assert result.recommendation.startswith("Too few samples to judge convergence")


@pytest.mark.parametrize("n", [1, 2, 5, MIN_CONVERGENCE_SAMPLES - 1])
def test_below_ten_samples_never_claims_sufficiency(n: int) -> None:
    # All passes: the cumulative series is flat (0 pp change), which alone would read as
    # settled; at n = 2 the Wilson interval of 2/2 still spans [0.34, 1].
    result = convergence(*cumulative_series([True] * n, [True] * n))
    assert result.accuracy_change_pp == 0.0
    assert not result.stable
    assert "Too few samples" in result.recommendation
    assert result.recommendation != STABLE_RECOMMENDATION


def test_ten_flat_samples_are_enough_to_judge() -> None:
    result = convergence(*cumulative_series([True] * 10, [True] * 10))
    assert result.stable
    assert result.recommendation == STABLE_RECOMMENDATION


def test_change_is_measured_over_the_last_ten_samples() -> None:
    # Two early failures, then passes. At n=30 the last ten accuracies run 19/21 .. 28/30.
    thirty = convergence(*cumulative_series([False, False] + [True] * 28, [True] * 30))
    assert thirty.window == 10
    assert thirty.accuracy_change_pp == pytest.approx((28 / 30 - 19 / 21) * 100)  # 2.857 pp
    assert thirty.recommendation == UNSTABLE_RECOMMENDATION
    # At n=50 they run 39/41 .. 48/50: 0.878 pp, F1 0.459 pp.
    fifty = convergence(*cumulative_series([False, False] + [True] * 48, [True] * 50))
    assert fifty.accuracy_change_pp == pytest.approx((48 / 50 - 39 / 41) * 100)
    f1 = [2 * r / (1 + r) for r in (39 / 41, 48 / 50)]
    assert fifty.f1_change_pp == pytest.approx((f1[1] - f1[0]) * 100)
    assert fifty.stable
    assert fifty.recommendation == STABLE_RECOMMENDATION


def test_exactly_two_points_counts_as_stable_despite_float_noise() -> None:
    assert (0.92 - 0.90) * 100 > 2  # the float noise the rounding absorbs
    series = [0.90] * 9 + [0.92]
    result = convergence(series, series)
    assert result.accuracy_change_pp == 2.0
    assert result.stable


@pytest.mark.parametrize(("n", "expected"), [
    (1, (1,)),
    (5, (1, 2, 3, 4, 5)),
    (50, tuple(range(1, 51))),
    (51, (1, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 51)),
    (73, (1, 7, 14, 21, 28, 35, 42, 49, 56, 63, 70, 73)),
    (200, (1, 20, 40, 60, 80, 100, 120, 140, 160, 180, 200)),
])
def test_chart_points(n: int, expected: tuple[int, ...]) -> None:
    assert chart_points(n) == expected


@given(st.integers(1, 100_000))
def test_chart_points_properties(n: int) -> None:
    points = chart_points(n)
    assert points[0] == 1 and points[-1] == n
    assert list(points) == sorted(set(points))
    assert len(points) == n if n <= 50 else len(points) <= 13  # <= 11 multiples + first + last
