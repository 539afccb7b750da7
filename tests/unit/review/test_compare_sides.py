"""`load_side`: one side of `evalkit compare` read back from a store.

Fast (no subprocess, no component, no MLflow store): the runs are written straight into an
in-memory store through its backend, in the layout evalkit logs (``records.names`` names the
artifacts). Among the tests ``make mutation`` runs.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest

from evalkit.records import (
    ItemCell,
    ItemResult,
    RunUsage,
    ScoredRun,
    SeriesItems,
    TypeResult,
    names,
)
from evalkit.review import Side, load_side
from evalkit.stats import StabilityDocument, StabilitySummary
from evalkit.stats._stability import PairDisagreement
from evalkit.stats._stability_document import FlipCounts
from evalkit.tracking import RunReader
from evalkit.tracking._journal import LoggedPoint
from evalkit.tracking._memory import MemoryBackend


class Store:
    """A fresh experiment in a memory store; runs are logged into it finished."""

    def __init__(self) -> None:
        self.backend = MemoryBackend()
        self.experiment = f"sides/{uuid.uuid4().hex[:8]}"
        experiment_id = self.backend.experiment_id(self.experiment)
        assert experiment_id is not None
        self.experiment_id = experiment_id
        self.reader = RunReader(self.backend)

    def run(self, name: str, tags: dict[str, str], metrics: dict[str, float],
            artifacts: dict[str, Any]) -> str:
        run_id = self.backend.create_run(self.experiment_id, name, tags).run_id
        now = int(time.time() * 1000)
        self.backend.log_batch(run_id, metrics=[LoggedPoint(k, v, 0, now)
                                                for k, v in metrics.items()])
        for path, document in artifacts.items():
            self.backend.log_artifact(run_id, path, json.dumps(document).encode())
        self.backend.set_status(run_id, "FINISHED")
        return run_id


@pytest.fixture
def store() -> Store:
    return Store()


def item(item_id: str, passed: bool, expected_pass: bool = True) -> ItemResult:
    return ItemResult(item_id, passed, expected_pass, "q", "a", ("a" if passed else "b",),
                      (item_id,))


def evaluation(**types: tuple[ItemResult, ...]) -> dict[str, Any]:
    return {names.EVALUATION_ARTIFACT: ScoredRun(tuple(
        TypeResult(t, "exact", items) for t, items in types.items())).to_json()}


def summary(metric: str, *pairs: tuple[int, int]) -> StabilitySummary:
    """A metric's statistics as a series stores them; only its pairs matter here: (items the
    two replicates shared, how many of them they disagreed on)."""
    return StabilitySummary(
        metric, {}, 0.5, None, 0.0, 0, 0, None, None, None,
        tuple(PairDisagreement(0, k + 1, shared, disagree)
              for k, (shared, disagree) in enumerate(pairs)),
        FlipCounts(0, 0, 0, 0, ()))


def cells(*verdicts: bool | None) -> tuple[ItemCell | None, ...]:
    return tuple(None if v is None else ItemCell(v, v, ("a" if v else "b",), None)
                 for v in verdicts)


REPLICATE_DOCUMENTS = {
    names.STABILITY_ARTIFACT: StabilityDocument("pack", 0, (11, 12, 13), (
        # The largest rate over pairs that shared an item: 0.2 (2 of 10).
        summary("functional_accuracy", (10, 1), (0, 0), (10, 2)),
        # Replicates that shared no item: no floor at all, not a floor of 0.
        summary("smoke_accuracy", (0, 0)),
        # A type that is not among the run's test types has no floor on this side.
        summary("bias_accuracy", (6, 2)))).to_json(),
    names.STABILITY_ITEMS_ARTIFACT: SeriesItems({
        "functional": {"x": cells(True, True, False), "tie": cells(True, False),
                       "y": cells(None, False, False), "z": cells(False, True, True, None)},
        "smoke": {"s": cells(True, True, True)}}).to_json(),
}


def test_an_ordinary_run_read_by_experiment_name(store: Store) -> None:
    older = store.run("older", {"test_types": "functional"}, {"functional_accuracy": 0.1},
                      evaluation(functional=(item("x", False),)))
    run_id = store.run(
        "r0-latest", {"test_types": "functional,smoke,bias"},
        {"functional_accuracy": 0.75, "smoke_accuracy": 1.0, "calls": 9.0},
        evaluation(functional=(item("x", True), item("y", False), item("z", False, False)),
                   smoke=(item("s", True),)))
    side = load_side(store.reader, store.experiment)
    # bias is a test type without an accuracy metric: not compared; no replicates: no floor.
    assert side == Side(run_id, f"{store.experiment} / r0-latest",
                        {"functional": 0.75, "smoke": 1.0},
                        {"functional": {"x": True, "y": False, "z": True}, "smoke": {"s": True}},
                        {})
    assert load_side(store.reader, older).accuracy == {"functional": 0.1}


def test_a_side_carries_the_tokens_and_cost_its_run_logged(store: Store) -> None:
    usage = RunUsage(tokens=1200, cost_usd=0.03, judge_tokens=400, judge_cost_usd=0.01)
    run_id = store.run("r0", {"test_types": "functional"},
                       {"functional_accuracy": 1.0, **usage.to_metrics()},
                       evaluation(functional=(item("x", True),)))
    assert load_side(store.reader, run_id).usage == usage
    unpriced = store.run("r1", {"test_types": "functional"}, {"functional_accuracy": 1.0},
                         evaluation(functional=(item("x", True),)))
    assert load_side(store.reader, unpriced).usage == RunUsage()


def test_a_replicate_series_counts_items_by_majority_with_its_own_floor(store: Store) -> None:
    parent = store.run("replicates-x", {"test_types": "functional,smoke", "mode": "replicates"},
                       {"functional_accuracy": 0.6, "smoke_accuracy": 1.0}, REPLICATE_DOCUMENTS)
    side = load_side(store.reader, store.experiment)
    assert side == Side(parent, f"{store.experiment} / replicates-x",
                        {"functional": 0.6, "smoke": 1.0},
                        {"functional": {"x": True, "tie": None, "y": False, "z": True},
                         "smoke": {"s": True}},
                        {"functional": 0.2})


def test_a_replicate_child_takes_its_items_and_its_parents_floor(store: Store) -> None:
    parent = store.run("replicates-x", {"test_types": "functional,smoke", "mode": "replicates"},
                       {"functional_accuracy": 0.6, "smoke_accuracy": 1.0}, REPLICATE_DOCUMENTS)
    child = store.run("r1", {"test_types": "functional", "mlflow.parentRunId": parent},
                      {"functional_accuracy": 0.5},
                      evaluation(functional=(item("x", True), item("y", False))))
    side = load_side(store.reader, child)
    assert side == Side(child, f"{store.experiment} / r1", {"functional": 0.5},
                        {"functional": {"x": True, "y": False}}, {"functional": 0.2})
    # The experiment's latest evaluation is the series, not its child.
    assert load_side(store.reader, store.experiment).run_id == parent


def test_test_types_tag_missing_or_with_empty_names(store: Store) -> None:
    untyped = store.run("untyped", {}, {"functional_accuracy": 0.5},
                        evaluation(functional=(item("x", True),)))
    assert load_side(store.reader, untyped).accuracy == {}
    gappy = store.run("gappy", {"test_types": ",functional,,"}, {"functional_accuracy": 0.5,
                                                                 "_accuracy": 0.9},
                      evaluation(functional=(item("x", True),)))
    assert load_side(store.reader, gappy).accuracy == {"functional": 0.5}
