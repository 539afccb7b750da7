"""The statistics' edges: refusals, degenerate inputs and the JSON they are stored as.

Written against the mutants ``make mutation`` found surviving; each assertion pins a
behaviour a user sees (an error message, an artifact's field, an advice line).
"""

from __future__ import annotations

import pytest

from evalkit.stats import VarianceComponents, allocate
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


def test_allocation_advice_when_items_do_not_vary() -> None:
    plan = allocate(VarianceComponents(0.02, 0.0, 0.02, 2.0, 30))
    assert plan.optimum is None and plan.buy == "replicates"
    assert plan.advice() == ("all the measured variance is completion noise: more replicates "
                             "narrow the interval, more items of the same kind do not")
