"""Vote errors, measured disagreement, the items-vs-replicates optimum and contrast
intervals: the seeds' tables and hand-worked values, exhaustive enumeration, Monte Carlo."""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import t as student_t

from evalkit.stats import (
    VarianceComponents,
    allocate,
    disagreement,
    nested_bootstrap_variance,
    replicate_mean_t_interval,
    replicates_for_half_width,
    vote_table,
    whole_replicate_bootstrap,
    whole_replicate_bootstrap_variance,
)
from evalkit.stats._budget import variance_times_budget
from evalkit.stats._contrasts import nested_to_true_variance_ratio, z_for
from evalkit.stats._votes import Rule, Ties, smallest_n, vote_error


@pytest.mark.parametrize(("rule", "n", "ties", "expected", "tolerance"), [
    # seeds/003's table at p = 0.10 (printed to three or four significant figures)
    (Rule.MAJORITY, 3, Ties.WRONG, 0.02800, 5e-6),
    (Rule.MAJORITY, 5, Ties.WRONG, 0.00856, 5e-6),
    (Rule.MAJORITY, 10, Ties.RIGHT, 0.000147, 5e-7),
    (Rule.UNANIMOUS, 3, Ties.WRONG, 0.2710, 5e-5),
    (Rule.UNANIMOUS, 10, Ties.WRONG, 0.6513, 5e-5),
    (Rule.ANY_OF, 3, Ties.WRONG, 0.0010, 5e-5),
    (Rule.ANY_OF, 10, Ties.WRONG, 1.000e-10, 5e-14),
    # the even-N tie as an explicit policy
    (Rule.MAJORITY, 4, Ties.RIGHT, 0.00370, 5e-6),
    (Rule.MAJORITY, 4, Ties.WRONG, 0.0523, 5e-5),
])
def test_seed_vote_table_at_p_one_tenth(rule: Rule, n: int, ties: Ties, expected: float,
                                        tolerance: float) -> None:
    assert vote_error(rule, n, 0.10, ties) == pytest.approx(expected, abs=tolerance)


def test_majority_by_hand() -> None:
    p = 0.1
    assert vote_error(Rule.MAJORITY, 3, p) == pytest.approx(3 * p**2 * (1 - p) + p**3)
    # N = 10 with ties wrong counts X = 5 too: the seed's formula P(X >= ceil(N/2)).
    assert vote_error(Rule.MAJORITY, 10, p, Ties.WRONG) == pytest.approx(
        sum(math.comb(10, k) * p**k * (1 - p) ** (10 - k) for k in range(5, 11)))
    # Odd N has no ties: both policies agree.
    assert vote_error(Rule.MAJORITY, 7, p, Ties.RIGHT) == vote_error(Rule.MAJORITY, 7, p)


def test_even_n_beats_the_odd_n_above_it_when_ties_count_right() -> None:
    assert vote_error(Rule.MAJORITY, 4, 0.1, Ties.RIGHT) < vote_error(Rule.MAJORITY, 5, 0.1)


def test_unanimity_gets_worse_with_more_runs() -> None:
    errors = [vote_error(Rule.UNANIMOUS, n, 0.1) for n in range(1, 21)]
    assert errors == sorted(errors)
    assert smallest_n(Rule.UNANIMOUS, 0.1, 0.05) is None
    assert smallest_n(Rule.UNANIMOUS, 0.1, 0.1) == 1


def test_smallest_n_for_a_target() -> None:
    assert smallest_n(Rule.MAJORITY, 0.1, 0.01) == 5  # 0.028 at 3, 0.0523 at 4, 0.00856 at 5
    # With ties counted right, two runs are wrong only when both are: p^2 = 0.01 at N = 2.
    assert smallest_n(Rule.MAJORITY, 0.1, 0.01, Ties.RIGHT) == 2
    assert smallest_n(Rule.MAJORITY, 0.1, 0.005, Ties.RIGHT) == 4  # 0.028 at 3, 0.0037 at 4
    assert smallest_n(Rule.ANY_OF, 0.1, 1e-6) == 6
    assert smallest_n(Rule.MAJORITY, 0.5, 0.01) is None  # a coin stays a coin


def test_vote_table_recommends_per_rule() -> None:
    table = vote_table(0.1, 0.01)
    assert table.recommended == {"majority (ties wrong)": 5, "majority (ties right)": 2,
                                 "unanimous": None, "any-of": 2}
    assert len(table.errors["any-of"]) == 20


@given(st.floats(0, 1), st.integers(1, 40))
def test_vote_errors_are_probabilities(p: float, n: int) -> None:
    for rule in Rule:
        for ties in Ties:
            assert 0 <= vote_error(rule, n, p, ties) <= 1
    assert vote_error(Rule.MAJORITY, n, p, Ties.RIGHT) <= vote_error(Rule.MAJORITY, n, p,
                                                                      Ties.WRONG)


def test_disagreement_counts_minority_answers() -> None:
    measured = disagreement("repeats", [
        ["billing"] * 5,  # 0
        ["billing"] * 4 + ["technical"],  # 1
        ["a", "a", "b", "b", "c"],  # 3
        ["solo"],  # one answer: no information, skipped
    ])
    assert measured is not None
    assert (measured.minority, measured.observations, measured.groups) == (4, 15, 3)
    assert measured.p == pytest.approx(4 / 15)
    assert measured.interval.low < 4 / 15 < measured.interval.high
    assert disagreement("none", [["x"]]) is None


def test_a_tie_counts_half_the_group() -> None:
    measured = disagreement("replicates", [[True, False], [True, True]])
    assert measured is not None and measured.p == 0.25


def test_allocation_on_the_seed_example() -> None:
    # seeds/000: completion 0.01375 at two trials (tau2 = 0.0275), item 0.022425.
    components = VarianceComponents(0.01375, 0.022425, 0.036175, 2.0, 200)
    plan = allocate(components, replicate_cost=1.0, item_cost=1.0)
    assert plan.tau2 == pytest.approx(0.0275)
    assert plan.optimum == pytest.approx(math.sqrt(0.0275 / 0.022425))  # 1.107
    # Between 1 and 2: both evaluated, 1 is cheaper for the same precision.
    assert variance_times_budget(0.022425, 0.0275, 1, 1, 1) == pytest.approx(0.09985)
    assert variance_times_budget(0.022425, 0.0275, 1, 1, 2) == pytest.approx(0.108525)
    assert plan.best_whole == 1
    assert plan.buy == "items"  # "That plan wants more items."
    assert plan.floor == pytest.approx((math.sqrt(0.0275) + math.sqrt(0.022425)) ** 2)
    assert plan.floor <= variance_times_budget(0.022425, 0.0275, 1, 1, plan.optimum) + 1e-12


def test_allocation_buys_replicates_when_calls_are_cheap_and_noisy() -> None:
    components = VarianceComponents(0.1, 0.001, 0.101, 2.0, 100)
    plan = allocate(components, replicate_cost=0.1, item_cost=5.0)
    assert plan.optimum == pytest.approx(math.sqrt(5.0 * 0.2 / (0.1 * 0.001)))
    assert plan.buy == "replicates"
    assert "should buy replicates" in plan.advice()


@given(st.floats(1e-4, 1), st.floats(1e-4, 1), st.floats(0.01, 100), st.floats(0.01, 100))
def test_optimum_minimises_variance_times_budget(sigma2: float, tau2: float, a: float,
                                                 b: float) -> None:
    plan = allocate(VarianceComponents(tau2 / 2, sigma2, sigma2 + tau2 / 2, 2.0, 10), a, b)
    assert plan.optimum is not None
    at_optimum = variance_times_budget(sigma2, tau2, a, b, plan.optimum)
    assert at_optimum == pytest.approx(plan.floor, rel=1e-9)
    for other in (plan.optimum * 0.7, plan.optimum * 1.4):
        assert variance_times_budget(sigma2, tau2, a, b, other) >= at_optimum * (1 - 1e-12)


def nested_resamples_of_2x2(d: list[list[float]]) -> list[float]:
    """Every equally likely outcome of the nested bootstrap of a 2 x 2 matrix: two row draws,
    then two column draws inside each drawn row (4 x 4 x 4 = 64 outcomes)."""
    means = []
    for rows in itertools.product(range(2), repeat=2):
        for cols in itertools.product(itertools.product(range(2), repeat=2), repeat=2):
            means.append(statistics.fmean(
                statistics.fmean(d[row][c] for c in picked) for row, picked in zip(rows, cols,
                                                                                    strict=True)))
    return means


@pytest.mark.parametrize("d", [[[0.0, 1.0], [2.0, 5.0]], [[1.0, 1.0], [0.0, 0.0]],
                               [[0.3, -0.2], [0.1, 0.9]]])
def test_nested_variance_matches_exhaustive_enumeration(d: list[list[float]]) -> None:
    outcomes = nested_resamples_of_2x2(d)
    assert len(outcomes) == 64
    assert nested_bootstrap_variance(d) == pytest.approx(statistics.pvariance(outcomes))
    whole = [statistics.fmean(statistics.fmean(d[r]) for r in rows)
             for rows in itertools.product(range(2), repeat=2)]
    assert whole_replicate_bootstrap_variance(d) == pytest.approx(statistics.pvariance(whole))


def test_nested_to_true_ratio_when_within_noise_dominates() -> None:
    assert nested_to_true_variance_ratio(5, 2048, tau2=0.0, sigma2=1.0) == pytest.approx(
        1.7995, abs=5e-5)
    assert nested_to_true_variance_ratio(50, 2048, 0.0, 1.0) == pytest.approx(2, abs=0.03)
    # Training variability dominating: only the (n-1)/n factor is left.
    assert nested_to_true_variance_ratio(5, 2048, tau2=1.0, sigma2=1e-6) == pytest.approx(0.8)


def test_z_and_planning_table() -> None:
    assert z_for(7) == pytest.approx(2.690, abs=5e-4)
    # n = max(2, ceil((z SD / w)^2)) with z = 2.690 for seven contrasts
    assert [replicates_for_half_width(sd, 0.01, contrasts=7) for sd in
            (0.002, 0.005, 0.01, 0.02, 0.03)] == [2, 2, 8, 29, 66]
    assert replicates_for_half_width(0.01, 0.01) == 4  # z = 1.96


def test_t_interval_by_hand() -> None:
    a = [0.02, 0.05, -0.01, 0.04, 0.03]
    interval = replicate_mean_t_interval(a, contrasts=7)
    half = float(student_t.ppf(1 - 0.05 / 14, 4)) * statistics.stdev(a) / math.sqrt(5)
    assert interval.estimate == pytest.approx(0.026)
    assert (interval.low, interval.high) == pytest.approx((0.026 - half, 0.026 + half))
    assert interval.confidence == pytest.approx(1 - 0.05 / 7)


def test_bootstrap_is_seeded_and_narrower_than_t_at_small_n() -> None:
    a = [0.02, 0.05, -0.01, 0.04, 0.03]
    first, second = whole_replicate_bootstrap(a, seed=3), whole_replicate_bootstrap(a, seed=3)
    assert first == second
    t = replicate_mean_t_interval(a)
    assert first.high - first.low < t.high - t.low  # (n-1)/n and no t tail


def test_t_interval_covers_near_nominal_on_normal_data() -> None:
    rng = np.random.default_rng(2026)
    trials, n, true_mean = 2000, 5, 0.3
    covered = 0
    for _ in range(trials):
        sample = rng.normal(true_mean, 1.0, size=n).tolist()
        interval = replicate_mean_t_interval(sample)
        covered += interval.low <= true_mean <= interval.high
    # 95% nominal; 2000 trials give a Monte Carlo SD of about 0.5 points.
    assert covered / trials == pytest.approx(0.95, abs=0.015)
