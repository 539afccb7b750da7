"""The statistics' edges: refusals, degenerate inputs and the JSON they are stored as.

Written against the mutants ``make mutation`` found surviving; each assertion pins a
behaviour a user sees (an error message, an artifact's field, an advice line).
"""

from __future__ import annotations

import pytest

from evalkit.stats import (
    StabilitySummary,
    VarianceComponents,
    allocate,
    latency_percentiles,
    replicate_stability,
    wilson_interval,
)
from evalkit.stats._budget import Allocation, variance_times_budget
from evalkit.stats._contrasts import (
    bonferroni_tail,
    nested_bootstrap_variance,
    replicate_mean_t_interval,
    replicates_for_half_width,
    whole_replicate_bootstrap,
    whole_replicate_bootstrap_variance,
)
from evalkit.stats._one_run import (
    chart_points,
    confusion_matrix,
    convergence,
    cumulative_series,
)
from evalkit.stats._stability import (
    FlipPartition,
    effective_interval,
    flip_partition,
    variance_components,
)
from evalkit.stats._votes import Rule, Ties, disagreement, smallest_n, vote_error, vote_table


@pytest.mark.parametrize(("n", "p", "message"), [
    (0, 0.1, "a vote needs at least one run"),
    (3, 1.5, "p must be a probability, got 1.5"),
    (3, -0.1, "p must be a probability, got -0.1"),
])
def test_vote_error_refuses_with_a_message(n: int, p: float, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        vote_error(Rule.MAJORITY, n, p)
    assert str(refused.value) == message


def test_vote_error_at_the_edges_of_p() -> None:
    assert vote_error(Rule.UNANIMOUS, 3, 1.0) == 1.0
    assert vote_error(Rule.UNANIMOUS, 3, 0.0) == 0.0
    assert vote_error(Rule.MAJORITY, 2, 1.0) == 1.0  # p = 1 is allowed: always wrong
    # n = 1: the single run is the verdict, whatever the rule or tie policy.
    for rule in Rule:
        for ties in Ties:
            assert vote_error(rule, 1, 0.3, ties) == pytest.approx(0.3)


def test_smallest_n_searches_up_to_its_limit_inclusive() -> None:
    # ANY_OF errs p**n: at p = 0.5 it needs exactly n = 10 for 0.5**10.
    assert smallest_n(Rule.ANY_OF, 0.5, 0.5**10, limit=10) == 10
    assert smallest_n(Rule.ANY_OF, 0.5, 0.5**10, limit=9) is None
    assert smallest_n(Rule.ANY_OF, 0.5, 0.5**3) == 3  # meeting the target exactly is enough


def test_vote_table_columns_use_their_own_rule_and_tie_policy() -> None:
    table = vote_table(0.1, 0.01, max_n=4)
    assert table.p == 0.1 and table.target == 0.01
    expected = {name: tuple(vote_error(rule, n, 0.1, ties) for n in range(1, 5))
                for name, rule, ties in [
                    ("majority (ties wrong)", Rule.MAJORITY, Ties.WRONG),
                    ("majority (ties right)", Rule.MAJORITY, Ties.RIGHT),
                    (str(Rule.UNANIMOUS), Rule.UNANIMOUS, Ties.WRONG),
                    (str(Rule.ANY_OF), Rule.ANY_OF, Ties.WRONG)]}
    assert table.errors == expected
    # At n = 2 a tie counts: wrong with ties wrong (1 - 0.81 = 0.19), right with ties right.
    assert table.errors["majority (ties wrong)"][1] == pytest.approx(0.19)
    assert table.errors["majority (ties right)"][1] == pytest.approx(0.01)


def test_disagreement_skips_groups_of_one_and_keeps_going() -> None:
    found = disagreement("repeats", [["a"], ["a", "a", "b"], ["x"], ["c", "d"]])
    assert found is not None
    assert (found.source, found.minority, found.observations, found.groups) == (
        "repeats", 1 + 1, 5, 2)
    assert found.p == pytest.approx(2 / 5)
    assert disagreement("none", [["a"], ["b"]]) is None


def test_variance_components_round_trip_through_json() -> None:
    components = VarianceComponents(0.01, 0.02, 0.03, 2.5, 40)
    doc = components.to_json()
    assert set(doc) == {"completion", "item", "total", "trials", "items", "estimator",
                        "reference"}
    assert VarianceComponents.from_json(doc) == components


def test_width_change_without_variance_is_none() -> None:
    assert VarianceComponents(0.0, 0.0, 0.0, 2.0, 10).width_change_if_trials_scaled(2) == 0.0


def test_calls_that_never_varied_are_never_told_to_buy_replicates() -> None:
    # Every item right in all 3 replicates: no variance at all, between or within items.
    flat = allocate(VarianceComponents(0.0, 0.0, 0.0, 3.0, 20))
    assert not flat.varied and flat.buy == "items"
    assert flat.chances == 40 and flat.unseen_rate_bound == pytest.approx(1 - 0.05 ** (1 / 40))
    assert flat.advice() == (
        "no run-to-run variance seen: each of the 20 items scored the same in all 3 "
        "replicates, so more replicates have no noise measured so far to average away; the "
        "items scored alike too: an interval over them narrows only with more items, so the "
        "next unit of budget should buy items. This does not show the component is "
        "deterministic: a per-call change rate up to 0.072 (one-sided 95% bound for no change "
        "in 40 chances) could go unseen at this size")
    # Items that differ, each always the same: tau2 = 0, sigma2 > 0.
    steady = allocate(VarianceComponents(0.0, 0.25, 0.25, 3.0, 20))
    assert steady.buy == "items" and steady.advice() == (
        "no run-to-run variance seen: each of the 20 items scored the same in all 3 "
        "replicates, so more replicates have no noise measured so far to average away; the "
        "items differ from each other (sigma² > 0): the next unit of budget should buy items. "
        "This does not show the component is deterministic: a per-call change rate up to "
        "0.072 (one-sided 95% bound for no change in 40 chances) could go unseen at this size")
    # A plan.json written before the items were kept reads back without the bound.
    doc = flat.to_json()
    del doc["items"]
    old = Allocation.from_json(doc)
    assert old.items is None and old.unseen_rate_bound is None
    assert old.advice().startswith("no run-to-run variance seen: each item scored the same")
    assert old.advice().endswith("This does not show the component is deterministic")


def test_allocation_advice_when_items_do_not_vary() -> None:
    plan = allocate(VarianceComponents(0.02, 0.0, 0.02, 2.0, 30))
    assert plan.optimum is None and plan.buy == "replicates"
    assert plan.advice() == ("all the measured variance is completion noise: more replicates "
                             "narrow the interval, more items of the same kind do not")


@pytest.mark.parametrize(("replicate_cost", "item_cost"), [(0.0, 1.0), (1.0, 0.0), (-1.0, 1.0)])
def test_allocate_refuses_costs_that_are_not_positive(replicate_cost: float,
                                                      item_cost: float) -> None:
    with pytest.raises(ValueError) as refused:
        allocate(VarianceComponents(0.01, 0.02, 0.03, 2.0, 10), replicate_cost, item_cost)
    assert str(refused.value) == "costs must be positive"


def test_allocation_by_hand() -> None:
    # sigma2 = 0.02, tau2 = completion x trials = 0.045 x 2 = 0.09; a = 1, b = 1:
    # N* = sqrt(b tau2 / (a sigma2)) = sqrt(4.5) = 2.1213; floor = (0.3 + 0.14142)^2.
    components = VarianceComponents(0.045, 0.02, 0.065, 2.0, 30)
    plan = allocate(components)
    assert plan == Allocation(0.02, pytest.approx(0.09), 1.0, 1.0, 2.0,
                              pytest.approx(4.5 ** 0.5), 2,
                              pytest.approx((0.3 + 0.02 ** 0.5) ** 2), items=30)
    # N* = 2.9 (tau2 = 0.1682): the ceiling, 3, has the smaller variance x budget.
    high = allocate(VarianceComponents(0.0841, 0.02, 0.1041, 2.0, 30))
    assert high.optimum == pytest.approx(2.9) and high.best_whole == 3
    assert variance_times_budget(0.02, 0.1682, 1, 1, 3) < variance_times_budget(
        0.02, 0.1682, 1, 1, 2)
    assert high.buy == "replicates"
    assert high.advice() == ("optimum 2.90 replicates per item (best whole number 3) against "
                             "2 now: the next unit of budget should buy replicates")
    flat = allocate(VarianceComponents(0.02, 0.0, 0.02, 2.0, 30), 2.0, 3.0)
    assert flat == Allocation(0.0, pytest.approx(0.04), 2.0, 3.0, 2.0, None, None,
                              pytest.approx(0.08), items=30)
    # plan.json carries the reading as well as the numbers, under these names
    assert high.to_json() == {
        "sigma2_item": 0.02, "tau2_replicate": pytest.approx(0.1682), "replicate_cost": 1.0,
        "item_cost": 1.0, "current_replicates": 2.0, "optimum": pytest.approx(2.9),
        "best_whole": 3, "variance_times_budget_floor": high.floor, "buy": "replicates",
        "advice": high.advice(), "items": 30}
    assert Allocation.from_json(high.to_json()) == high


@pytest.mark.parametrize(("successes", "n", "message"), [
    (0, 0, "a Wilson interval needs at least one observation"),
    (3, 2, "successes must lie in [0, 2], got 3"),
    (-1, 2, "successes must lie in [0, 2], got -1"),
])
def test_wilson_refuses_with_a_message(successes: int, n: int, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        wilson_interval(successes, n)
    assert str(refused.value) == message


def test_wilson_keeps_its_inputs_and_uses_its_confidence() -> None:
    narrow, wide = wilson_interval(22, 25, 0.90), wilson_interval(22, 25)
    assert (narrow.successes, narrow.n, narrow.confidence) == (22, 25, 0.90)
    assert wide.confidence == 0.95
    assert wide.low == pytest.approx(0.700, abs=5e-4) and wide.high == pytest.approx(
        0.958, abs=5e-4)  # the docstring's example
    assert wide.low < narrow.low < narrow.high < wide.high


def test_confusion_matrix_counts_each_cell() -> None:
    matrix = confusion_matrix([True, True, True, False, False, False, False],
                              [True, True, False, False, False, False, True])
    assert (matrix.tp, matrix.fp, matrix.tn, matrix.fn) == (2, 1, 3, 1)
    with pytest.raises(ValueError) as refused:
        confusion_matrix([True], [True, False])
    assert str(refused.value) == "scores and expectations differ in length"
    with pytest.raises(ValueError):
        cumulative_series([True], [True, False])


@pytest.mark.parametrize(("accuracy", "f1"), [([], []), ([1.0], []), ([1.0, 1.0], [1.0])])
def test_convergence_refuses_uneven_or_empty_series(accuracy: list[float],
                                                    f1: list[float]) -> None:
    with pytest.raises(ValueError) as refused:
        convergence(accuracy, f1)
    assert str(refused.value) == "convergence needs two equally long, non-empty series"


def test_convergence_keeps_its_series() -> None:
    result = convergence([0.5, 0.6], [0.4, 0.7])
    assert (result.accuracy, result.f1, result.window) == ((0.5, 0.6), (0.4, 0.7), 2)
    assert result.accuracy_change_pp == 10.0 and result.f1_change_pp == 30.0


def test_latency_percentiles_by_hand() -> None:
    assert latency_percentiles([]) == {}
    assert latency_percentiles([7.0]) == {"p50": 7.0, "p90": 7.0, "p99": 7.0}
    # Inclusive method: the k-th percentile of sorted x_0..x_{m-1} is at (m-1)k/100.
    assert latency_percentiles([20.0, 10.0]) == pytest.approx(
        {"p50": 15.0, "p90": 19.0, "p99": 19.9})
    assert latency_percentiles([50.0, 10.0, 40.0, 20.0, 30.0]) == pytest.approx(
        {"p50": 30.0, "p90": 46.0, "p99": 49.6})


def test_stability_json_by_hand() -> None:
    # a always right, c always wrong, b flips, d seen in replicate 0 only.
    table = {"a": {0: True, 1: True}, "b": {0: True, 1: False}, "c": {0: False, 1: False},
             "d": {0: True}}
    result = replicate_stability("correct", table)
    doc = StabilitySummary.of(result).to_json()
    assert result.components is not None and result.interval is not None
    interval = result.interval
    assert doc == {
        "metric": "correct",
        "rates": {"0": [3, 4], "1": [1, 3]},
        "mean": pytest.approx((3 / 4 + 1 / 3) / 2),
        "sd": pytest.approx((3 / 4 - 1 / 3) / 2 ** 0.5),
        "spread": pytest.approx(3 / 4 - 1 / 3),
        "unstable_items": 1,
        "repeated_items": 3,
        "components": result.components.to_json(),
        "interval": {"p": interval.p, "n_eff": interval.n_eff,
                     "confidence": 0.95, "low": interval.low, "high": interval.high},
        "noise_floor": pytest.approx(1 / 3),
        "pairwise": [{"replicates": [0, 1], "shared": 3, "disagree": 1,
                      "rate": pytest.approx(1 / 3)}],
        "partition": {"always_right": 1, "always_wrong": 1, "changed": 1, "seen_once": 1,
                      "changed_items": ["b"]},
        "reliability": result.reliability.to_json(),
    }
    # pass^2 over the three items seen twice: a 1, b 0, c 0; d (seen once) counts at k = 1 only
    (one, two) = doc["reliability"]["by_k"]
    assert (one["k"], one["items"], two["k"], two["items"]) == (1, 4, 2, 3)
    assert two["pass_hat_k"]["value"] == pytest.approx(1 / 3)
    assert one["pass_at_k"]["value"] == pytest.approx((1 + 1 / 2 + 0 + 1) / 4)
    lone = StabilitySummary.of(replicate_stability("correct", {"a": {0: True}})).to_json()
    assert lone["components"] is None and lone["interval"] is None
    assert lone["sd"] is None and lone["noise_floor"] is None and lone["pairwise"] == []


@pytest.mark.parametrize(("alpha", "contrasts"), [(0.05, 0), (0.0, 1), (1.0, 1), (1.5, 2)])
def test_bonferroni_refuses_with_a_message(alpha: float, contrasts: int) -> None:
    with pytest.raises(ValueError) as refused:
        bonferroni_tail(alpha, contrasts)
    assert str(refused.value) == "need K >= 1 contrasts and 0 < alpha < 1"


def test_contrast_intervals_need_two_replicates_and_name_their_method() -> None:
    with pytest.raises(ValueError) as refused:
        replicate_mean_t_interval([0.5])
    assert str(refused.value) == "a t interval needs at least two replicates"
    with pytest.raises(ValueError) as refused:
        whole_replicate_bootstrap([0.5])
    assert str(refused.value) == "a bootstrap needs at least two replicates"
    # Two replicates are enough: mean 0.5, s = 0.1414, t(0.975, 1) = 12.706.
    t = replicate_mean_t_interval([0.4, 0.6])
    assert (t.estimate, t.n, t.method) == (pytest.approx(0.5), 2, "replicate-mean t")
    assert t.confidence == pytest.approx(0.95)
    assert t.high - t.estimate == pytest.approx(12.706 * 0.02 ** 0.5 / 2 ** 0.5, rel=1e-4)
    boot = whole_replicate_bootstrap([0.0, 1.0], draws=400)
    assert (boot.estimate, boot.n, boot.method) == (
        0.5, 2, "whole-replicate percentile bootstrap (400 draws)")
    assert boot.confidence == pytest.approx(0.95)
    # Either replicate can be drawn: resample means of 0, 0.5 and 1 all occur.
    assert (boot.low, boot.high) == (0.0, 1.0)
    assert whole_replicate_bootstrap([0.1, 0.4, 0.3]) == whole_replicate_bootstrap(
        [0.1, 0.4, 0.3])  # seeded: the same interval every time
    # twelve distinct replicates: another seed (or none) would move the percentiles
    spread = [0.013 * k - 0.05 * (k % 3) for k in range(12)]
    same = whole_replicate_bootstrap(spread, seed=1)
    assert same == whole_replicate_bootstrap(spread, seed=1)
    assert same != whole_replicate_bootstrap(spread, seed=2)


def test_cumulative_series_with_negatives_by_hand() -> None:
    # scores / expected: (1,1) (1,0) (0,0) (0,1)
    accuracy, f1 = cumulative_series([True, True, False, False], [True, False, False, True])
    assert accuracy == pytest.approx((1.0, 0.5, 2 / 3, 0.5))
    # k=2: tp 1, fp 1 -> precision 0.5, recall 1 -> F1 2/3; k=4: tp 1 fp 1 fn 1 -> 0.5
    assert f1 == pytest.approx((1.0, 2 / 3, 2 / 3, 0.5))


@pytest.mark.parametrize(("sd", "width"), [(-0.1, 0.05), (0.1, 0.0), (0.1, -0.05)])
def test_replicates_for_half_width_refuses(sd: float, width: float) -> None:
    with pytest.raises(ValueError) as refused:
        replicates_for_half_width(sd, width)
    assert str(refused.value) == "need SD >= 0 and a positive half-width"


def test_replicates_for_half_width_by_hand() -> None:
    assert replicates_for_half_width(0.0, 0.05) == 2  # no spread: the minimum of two
    # z(0.05, K=1) = 1.95996: (1.96 x 0.1 / 0.02)^2 = 96.04 -> 97; at alpha 0.2, z = 1.2816.
    assert replicates_for_half_width(0.1, 0.02) == 97
    assert replicates_for_half_width(0.1, 0.02, familywise_alpha=0.2) == 42


def test_bootstrap_variances_by_hand() -> None:
    d = [[1, 0, 1], [0, 0, 0]]  # integers: read as floats; row means 2/3 and 0
    assert whole_replicate_bootstrap_variance(d) == pytest.approx((1 / 3) ** 2 / 2)
    # + mean of row variances (2/9 and 0) / (n m) = (1/9) / 6
    assert nested_bootstrap_variance(d) == pytest.approx((1 / 3) ** 2 / 2 + (1 / 9) / 6)


def test_an_empty_replicate_table_is_refused_by_name() -> None:
    with pytest.raises(ValueError) as refused:
        replicate_stability("smoke_correct", {"a": {}})
    assert str(refused.value) == "smoke_correct: the replicate table has no observations"


def test_effective_interval_without_variance_or_at_the_edges_uses_the_item_count() -> None:
    still = VarianceComponents(0.0, 0.0, 0.0, 2.0, 10)
    for p in (0.0, 0.5, 1.0):
        interval = effective_interval(p, still)
        assert interval is not None and interval.n_eff == 10.0
        assert 0.0 <= interval.low <= p + 1e-12 and p <= interval.high + 1e-12 <= 1.0 + 1e-12
    varied = VarianceComponents(0.01, 0.04, 0.05, 2.0, 10)
    for p in (0.0, 1.0):
        edge = effective_interval(p, varied)
        assert edge is not None and edge.n_eff == 10.0
    assert effective_interval(0.5, None) is None
    # at p = 1 with 16 items, centre + half is 1.0000000000000002 in floating point: clamped
    sixteen = effective_interval(1.0, VarianceComponents(0.0, 0.0, 0.0, 2.0, 16))
    assert sixteen is not None and sixteen.high == 1.0


def test_two_items_seen_twice_are_enough_for_components_and_the_partition_names_items() -> None:
    table = {"a": {0: True, 1: True}, "b": {0: False, 1: False}}
    components = variance_components(table)
    assert components is not None and components.items == 2
    assert components.total == pytest.approx(0.5) and components.completion == 0.0
    partition = flip_partition({**table, "c": {0: True, 1: False}, "d": {1: True}})
    assert partition == FlipPartition(("a",), ("b",), ("c",), ("d",))
    assert replicate_stability("m", table, confidence=0.9).interval.confidence == 0.9


def test_chart_points_never_pass_the_last_sample() -> None:
    assert chart_points(59) == (1, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 59)
    assert chart_points(3) == (1, 2, 3)
