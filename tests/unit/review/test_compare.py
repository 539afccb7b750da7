"""The comparison of two evaluations, without MLflow: the noise gate, flips, majorities.

Fast: among the tests ``make mutation`` runs. Loading sides from MLflow, and ties across an
even number of replicates end to end, are in test_replicates.py.
"""

from __future__ import annotations

import pytest

from evalkit.records import ItemCell
from evalkit.review import FLOOR_MULTIPLE, MetricComparison, Side, compare
from evalkit.review._compare import ComparisonVerdict as Verdict
from evalkit.review._compare import _majority, noise_gate
from evalkit.stats import paired_gap


def test_noise_gate() -> None:
    assert noise_gate(0.2, None) is Verdict.NO_FLOOR
    assert noise_gate(0.05, 0.03) is Verdict.INSIDE_NOISE
    assert noise_gate(0.06, 0.03) is Verdict.INSIDE_NOISE  # must clear twice the floor
    assert noise_gate(0.07, 0.03) is Verdict.BETTER
    assert noise_gate(-0.07, 0.03) is Verdict.WORSE
    assert noise_gate(-0.06, 0.03) is Verdict.INSIDE_NOISE  # on either side
    assert noise_gate(0.0, 0.0) is Verdict.INSIDE_NOISE


def test_compare_counts_flips_in_each_direction() -> None:
    a = Side("a", "A", {"functional": 0.75}, {"functional": {"x": True, "y": True, "z": False,
                                                             "w": None}}, {"functional": 0.1})
    b = Side("b", "B", {"functional": 0.5, "smoke": 1.0},
             {"functional": {"x": True, "y": False, "z": True, "w": True}}, {})
    (result,) = compare(a, b)
    assert (result.right_in_a_only, result.right_in_b_only) == (("y",), ("z",))
    assert result.shared_items == 3  # w split evenly across A's replicates
    assert result.gap == 0.25 and result.floor == 0.1 and result.verdict is Verdict.BETTER
    assert result.undecided_items == 1
    assert result.paired is not None and result.paired.items == 3
    assert (result.paired.a_only, result.paired.b_only, result.paired.gap) == (1, 1, 0.0)
    assert result.to_json()["paired_gap"] == result.paired.to_json()


def test_the_paired_interval_counts_items_right_in_both_and_wrong_in_both_apart() -> None:
    # 3 right in both, 1 in A only, 1 in B only, 2 wrong in both: Newcombe's interval depends
    # on all four counts (with none wrong in both it could not tell the first from the last).
    verdicts_a = {"r1": True, "r2": True, "r3": True, "a": True, "b": False, "n1": False,
                  "n2": False}
    verdicts_b = {**verdicts_a, "a": False, "b": True}
    (result,) = compare(Side("a", "A", {"t": 4 / 7}, {"t": verdicts_a}, {}),
                        Side("b", "B", {"t": 4 / 7}, {"t": verdicts_b}, {}))
    assert result.paired == paired_gap(3, 1, 1, 2)
    assert result.paired != paired_gap(0, 1, 1, 5)


def test_only_a_floor_inside_which_the_gap_falls_refuses() -> None:
    assert Verdict.INSIDE_NOISE.refused
    assert not any(v.refused for v in (Verdict.BETTER, Verdict.WORSE, Verdict.NO_FLOOR))
    assert not Verdict.NO_FLOOR.decided


@pytest.mark.parametrize(("floor", "too_high"), [(None, False), (0.49, False), (0.5, True),
                                                  (2 / 3, True)])
def test_a_floor_of_half_or_more_can_never_be_cleared(floor: float | None,
                                                      too_high: bool) -> None:
    assert MetricComparison("t", 1.0, 0.0, floor, 3, (), ()).floor_too_high is too_high




def test_the_larger_floor_of_the_two_sides_gates_and_unshared_items_are_ignored() -> None:
    a = Side("a", "A", {"functional": 0.9, "smoke": 0.5},
             {"functional": {"x": True, "only-a": True}}, {"functional": 0.02, "smoke": 0.3})
    b = Side("b", "B", {"functional": 0.8}, {"functional": {"x": False, "only-b": False}},
             {"functional": 0.06})
    (result,) = compare(a, b)
    assert result.test_type == "functional" and result.floor == 0.06
    assert result.shared_items == 1 and result.right_in_a_only == ("x",)
    assert result.right_in_b_only == ()
    assert result.verdict is Verdict.INSIDE_NOISE  # 0.1 <= 2 x 0.06
    (no_items,) = compare(Side("a", "A", {"smoke": 1.0}, {}, {}),
                          Side("b", "B", {"smoke": 0.0}, {}, {}))
    assert no_items.shared_items == 0 and no_items.floor is None
    assert no_items.verdict is Verdict.NO_FLOOR and not no_items.verdict.decided


def test_flip_lists_are_sorted() -> None:
    a = Side("a", "A", {"t": 1.0}, {"t": {"z": True, "a": True, "m": False}}, {})
    b = Side("b", "B", {"t": 0.0}, {"t": {"z": False, "a": False, "m": True}}, {})
    (result,) = compare(a, b)
    assert result.right_in_a_only == ("a", "z") and result.right_in_b_only == ("m",)


def test_comparison_json() -> None:
    decided = MetricComparison("functional", 0.9, 0.5, 0.1, 10, ("x",), ("y", "z"))
    assert decided.to_json() == {
        "metric": "functional_accuracy", "a": 0.9, "b": 0.5, "gap": pytest.approx(0.4),
        "noise_floor": 0.1, "required_gap": FLOOR_MULTIPLE * 0.1, "shared_items": 10,
        "right_in_a_only": ["x"], "right_in_b_only": ["y", "z"], "undecided_items": 0,
        "paired_gap": None, "corrected_gap": None, "verdict": "A better", "margin": None}
    assert decided.verdict.decided and Verdict.WORSE.decided
    unfloored = MetricComparison("smoke", 0.5, 0.9, None, 0, (), ()).to_json()
    assert unfloored["required_gap"] is None
    assert unfloored["verdict"] == "not gated: no noise floor measured (no replicates)"


@pytest.mark.parametrize(("votes", "majority"), [
    ([True, True, False], True), ([True, False, False], False), ([True, False], None),
    ([True, True, False, False], None), ([True, True, True, False], True), ([False], False),
    ([True], True), ([True, True, False, False, False], False),
    ([True, True, True, False, False], True),
])
def test_an_item_counts_by_strict_majority_and_a_tie_is_undecided(
        votes: list[bool], majority: bool | None) -> None:
    cells = [ItemCell(v, v, ("out",), None) for v in votes]
    assert _majority(cells) is majority
    assert _majority([*cells, None]) is majority  # a replicate without the item has no vote


def test_a_type_with_items_on_one_side_only_shares_none() -> None:
    a = Side("a", "A", {"t": 1.0}, {"t": {"x": True}}, {})
    b = Side("b", "B", {"t": 0.0}, {}, {})
    (result,) = compare(a, b)
    assert (result.shared_items, result.right_in_a_only, result.right_in_b_only) == (0, (), ())
