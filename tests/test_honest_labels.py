"""Statistics shown with the labels they need: a floor measured on no shared item is no floor,
and the contrast intervals say what they cover."""

from __future__ import annotations

from typing import Any

from evalkit.records import STABILITY_ARTIFACT, RunRecord
from evalkit.run._compare import Side, Verdict, compare, shared_item_floors
from evalkit.stats import replicate_stability


def _parent(pairwise: dict[str, list[dict[str, Any]]]) -> RunRecord:
    metrics = [{"metric": f"{t}_accuracy", "pairwise": pairs} for t, pairs in pairwise.items()]
    return RunRecord("p", "parent", "1", "exp", 0, "FINISHED", {}, {"mode": "replicates"}, {},
                     {}, None, {STABILITY_ARTIFACT: {"metrics": metrics}})


def test_replicates_sharing_no_item_measure_no_floor() -> None:
    # Replicate 0 saw a and b, replicate 1 saw c and d: no pair of observations to compare.
    result = replicate_stability("functional_accuracy", {
        "a": {0: True}, "b": {0: False}, "c": {1: True}, "d": {1: True}})
    assert [p.shared for p in result.pairwise] == [0]
    assert result.noise_floor is None


def test_floor_counts_only_pairs_that_shared_items() -> None:
    floors = shared_item_floors(_parent({
        "functional": [{"replicates": [0, 1], "shared": 0, "disagree": 0, "rate": 0.0}],
        "smoke": [{"replicates": [0, 1], "shared": 0, "disagree": 0, "rate": 0.0},
                  {"replicates": [0, 2], "shared": 10, "disagree": 1, "rate": 0.1},
                  {"replicates": [1, 2], "shared": 10, "disagree": 3, "rate": 0.3}]}))
    assert floors == {"smoke": 0.3}


def test_compare_refuses_a_gap_when_the_floor_shared_no_item() -> None:
    floors = shared_item_floors(_parent({
        "functional": [{"replicates": [0, 1], "shared": 0, "disagree": 0, "rate": 0.0}]}))
    a = Side("a", "A", {"functional": 0.9}, {"functional": {"x": True}}, floors)
    b = Side("b", "B", {"functional": 0.1}, {"functional": {"x": False}}, {})
    (result,) = compare(a, b)
    assert result.floor is None
    assert result.verdict is Verdict.NO_FLOOR and not result.verdict.decided
