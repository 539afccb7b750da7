"""Statistics shown with the labels they need: a floor measured on no shared item is no floor,
and the contrast intervals say what they cover."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy.stats import t as student_t

from evalkit.records import RunRecord
from evalkit.records.names import STABILITY_ARTIFACT
from evalkit.review import Side, compare
from evalkit.review._compare import ComparisonVerdict as Verdict
from evalkit.review._compare import shared_item_floors
from evalkit.stats import (
    WHOLE_REPLICATE_BOOTSTRAP_COVERAGE,
    ContrastInterval,
    StabilityDocument,
    StabilitySummary,
    bootstrap_coverage,
    items_and_replicates_t_interval,
    replicate_mean_t_interval,
    replicate_stability,
    whole_replicate_bootstrap,
)
from evalkit.stats._stability import PairDisagreement


def _parent(pairwise: dict[str, list[PairDisagreement]]) -> RunRecord:
    """A series' parent whose stability.json holds these pairwise disagreements per type."""
    lone = StabilitySummary.of(replicate_stability("x", {"a": {0: True}}))
    metrics = tuple(replace(lone, metric=f"{t}_accuracy", pairwise=tuple(pairs))
                    for t, pairs in pairwise.items())
    document = StabilityDocument("pack", 0, (1, 2, 3), metrics)
    return RunRecord("p", "parent", "1", "exp", 0, "FINISHED", {}, {"mode": "replicates"}, {},
                     {}, None, {STABILITY_ARTIFACT: document.to_json()})


def test_replicates_sharing_no_item_measure_no_floor() -> None:
    # Replicate 0 saw a and b, replicate 1 saw c and d: no pair of observations to compare.
    result = replicate_stability("functional_accuracy", {
        "a": {0: True}, "b": {0: False}, "c": {1: True}, "d": {1: True}})
    assert [p.shared for p in result.pairwise] == [0]
    assert result.noise_floor is None


def test_floor_counts_only_pairs_that_shared_items() -> None:
    floors = shared_item_floors(_parent({
        "functional": [PairDisagreement(0, 1, 0, 0)],
        "smoke": [PairDisagreement(0, 1, 0, 0), PairDisagreement(0, 2, 10, 1),
                  PairDisagreement(1, 2, 10, 3)]}))
    assert floors == {"smoke": 0.3}


def test_compare_refuses_a_gap_when_the_floor_shared_no_item() -> None:
    floors = shared_item_floors(_parent({"functional": [PairDisagreement(0, 1, 0, 0)]}))
    a = Side("a", "A", {"functional": 0.9}, {"functional": {"x": True}}, floors)
    b = Side("b", "B", {"functional": 0.1}, {"functional": {"x": False}}, {})
    (result,) = compare(a, b)
    assert result.floor is None
    assert result.verdict is Verdict.NO_FLOOR and not result.verdict.decided


def test_items_and_replicates_interval_by_hand() -> None:
    # Rows are replicates, columns items. Grand mean 3/6. Item means (0.5, 0, 1): sample
    # variance 0.25, / m = 1/12, with t(0.975, 2) = 4.302653. Replicate means (2/3, 1/3):
    # sample variance 1/18, / n = 1/36, with t(0.975, 1) = 12.706205.
    # half = sqrt(4.302653² / 12 + 12.706205² / 36) = sqrt(1.542736 + 4.484657) = 2.455075.
    interval = items_and_replicates_t_interval([[1, 0, 1], [0, 0, 1]])
    assert interval.estimate == pytest.approx(0.5)
    assert (interval.low, interval.high) == pytest.approx((0.5 - 2.455075, 0.5 + 2.455075))
    # Bonferroni over 2 contrasts widens both quantiles to 0.9875.
    two = items_and_replicates_t_interval([[1, 0, 1], [0, 0, 1]], contrasts=2)
    assert two.high - two.estimate == pytest.approx(math.sqrt(
        student_t.ppf(0.9875, 2) ** 2 / 12 + student_t.ppf(0.9875, 1) ** 2 / 36))


def test_items_and_replicates_interval_with_three_replicates_by_hand() -> None:
    # Item means (2/3, 1/3): sample variance 1/18, / m = 1/36, df 1. Replicate means
    # (1/2, 0, 1): sample variance 1/4, / n = 1/12, df 2. At 0.9875 (two contrasts):
    # t(1) = 25.451700, t(2) = 6.205347; half = sqrt(647.789/36 + 38.5063/12) = 4.604672.
    interval = items_and_replicates_t_interval([[1, 0], [0, 0], [1, 1]], contrasts=2)
    assert interval == ContrastInterval(0.5, pytest.approx(0.5 - 4.604672),
                                        pytest.approx(0.5 + 4.604672), 3, 0.975,
                                        "items-and-replicates t")


def test_a_shift_every_replicate_shares_is_covered_with_few_replicates() -> None:
    # 2 and 3 replicates of 100 items, item effects and call noise of sd 1, and a shift of
    # sd 0.3 shared by every item of a replicate: a single Welch-Satterthwaite t covered
    # the population difference about 0.90 (2) and 0.93 (3) of the time; this one over 0.95.
    rng = np.random.default_rng(11)
    for n in (2, 3):
        covered = 0
        for _ in range(600):
            d = (rng.normal(0, 1, 100)[None, :] + rng.normal(0, 0.3, n)[:, None]
                 + rng.normal(0, 1, (n, 100)))
            interval = items_and_replicates_t_interval(d)
            covered += interval.low <= 0 <= interval.high
        assert covered / 600 > 0.94  # standard error about 0.009


def test_items_and_replicates_interval_needs_two_of_each() -> None:
    with pytest.raises(ValueError, match="two replicates and two items"):
        items_and_replicates_t_interval([[1.0, 0.0]])
    with pytest.raises(ValueError, match="two replicates and two items"):
        items_and_replicates_t_interval([[1.0], [0.0]])
    constant = items_and_replicates_t_interval([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]],
                                               contrasts=5)
    assert constant == ContrastInterval(0.5, 0.5, 0.5, 3, 0.99, "items-and-replicates t")


def _population_coverage(runs: int, seed: int) -> tuple[float, float]:
    """Item effects as large as the call noise, 5 replicates of 50 items: how often each
    interval covers the population difference 0 (benchmarks/contrast_coverage.py, smaller)."""
    rng = np.random.default_rng(seed)
    fixed = wide = 0
    for _ in range(runs):
        d = rng.normal(0, 1, 50)[None, :] + rng.normal(0, 1, (5, 50))
        t = replicate_mean_t_interval(d.mean(axis=1))
        fixed += t.low <= 0 <= t.high
        both = items_and_replicates_t_interval(d)
        wide += both.low <= 0 <= both.high
    return fixed / runs, wide / runs


def test_only_the_items_and_replicates_interval_covers_the_population() -> None:
    fixed, wide = _population_coverage(2000, seed=7)
    # 10,000 runs give 0.686 and 0.968; 2,000 runs have a standard error near 0.01.
    assert 0.63 < fixed < 0.74
    assert 0.94 < wide < 0.99


@pytest.mark.parametrize(("n", "measured"), [(3, 0.75), (5, 0.84)])
def test_whole_replicate_bootstrap_undercovers_as_labelled(n: int, measured: float) -> None:
    assert bootstrap_coverage(n) == measured == WHOLE_REPLICATE_BOOTSTRAP_COVERAGE[n]
    rng = np.random.default_rng(n)
    runs, covered = 1500, 0
    for run in range(runs):
        interval = whole_replicate_bootstrap(rng.standard_normal(n), draws=500, seed=run)
        covered += interval.low <= 0 <= interval.high
    assert covered / runs == pytest.approx(measured, abs=0.04)


def test_bootstrap_coverage_table_lookup() -> None:
    assert bootstrap_coverage(1) is None
    assert bootstrap_coverage(7) == WHOLE_REPLICATE_BOOTSTRAP_COVERAGE[6]
    assert bootstrap_coverage(50) == WHOLE_REPLICATE_BOOTSTRAP_COVERAGE[10]
