"""`load_side`: one side of `evalkit compare` read back from a real local MLflow store.

Fast (no subprocess, no component): the runs are written straight into the session's sqlite
store with MLflow's client, in the layout evalkit logs (``records`` names the artifacts).
Among the tests ``make mutation`` runs.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

from evalkit.records import (
    EVALUATION_ARTIFACT,
    STABILITY_ARTIFACT,
    STABILITY_ITEMS_ARTIFACT,
    ItemResult,
    ScoredRun,
    TypeResult,
)
from evalkit.run import load_side
from evalkit.run._compare import Side
from evalkit.tracking import Tracker


class Store:
    """A fresh experiment in the session's store; runs are logged into it finished."""

    def __init__(self, tracking_uri: str, tmp_path: Path) -> None:
        self.client = MlflowClient(tracking_uri)
        self.experiment = f"sides/{uuid.uuid4().hex[:8]}"
        self.experiment_id = self.client.create_experiment(
            self.experiment, artifact_location=(tmp_path / "artifacts").as_uri())
        self.tracker = Tracker(tracking_uri)

    def run(self, name: str, tags: dict[str, str], metrics: dict[str, float],
            artifacts: dict[str, Any]) -> str:
        run = self.client.create_run(self.experiment_id, tags=tags, run_name=name)
        run_id = str(run.info.run_id)
        for key, value in metrics.items():
            self.client.log_metric(run_id, key, value)
        for path, document in artifacts.items():
            self.client.log_dict(run_id, document, path)
        self.client.set_terminated(run_id)
        return run_id


@pytest.fixture
def store(tracking_uri: str, tmp_path: Path) -> Store:
    return Store(tracking_uri, tmp_path)


def item(item_id: str, passed: bool, expected_pass: bool = True) -> ItemResult:
    return ItemResult(item_id, passed, expected_pass, "q", "a", ("a" if passed else "b",),
                      (item_id,))


def evaluation(**types: tuple[ItemResult, ...]) -> dict[str, Any]:
    return {EVALUATION_ARTIFACT: ScoredRun(tuple(
        TypeResult(t, "exact", items) for t, items in types.items())).to_json()}


def pairs(*rates: tuple[float, int]) -> list[dict[str, Any]]:
    return [{"replicates": [0, k + 1], "shared": shared, "disagree": round(rate * shared),
             "rate": rate} for k, (rate, shared) in enumerate(rates)]


def cells(*verdicts: bool | None) -> list[dict[str, Any] | None]:
    return [None if v is None else {"correct": v} for v in verdicts]


REPLICATE_DOCUMENTS = {
    STABILITY_ARTIFACT: {"metrics": [
        # The largest rate over pairs that shared an item: 0.2 (0.5 shared none).
        {"metric": "functional_accuracy", "pairwise": pairs((0.1, 10), (0.5, 0), (0.2, 10))},
        # Replicates that shared no item: no floor at all, not a floor of 0.
        {"metric": "smoke_accuracy", "pairwise": pairs((0.0, 0))},
        # A type that is not among the run's test types has no floor on this side.
        {"metric": "bias_accuracy", "pairwise": pairs((0.4, 6))}]},
    STABILITY_ITEMS_ARTIFACT: {
        "functional": {"x": cells(True, True, False), "tie": cells(True, False),
                       "y": cells(None, False, False), "z": cells(False, True, True, None)},
        "smoke": {"s": cells(True, True, True)}},
}


def test_an_ordinary_run_read_by_experiment_name(store: Store) -> None:
    older = store.run("older", {"test_types": "functional"}, {"functional_accuracy": 0.1},
                      evaluation(functional=(item("x", False),)))
    run_id = store.run(
        "r0-latest", {"test_types": "functional,smoke,bias"},
        {"functional_accuracy": 0.75, "smoke_accuracy": 1.0, "calls": 9.0},
        evaluation(functional=(item("x", True), item("y", False), item("z", False, False)),
                   smoke=(item("s", True),)))
    side = load_side(store.tracker, store.experiment)
    # bias is a test type without an accuracy metric: not compared; no replicates: no floor.
    assert side == Side(run_id, f"{store.experiment} / r0-latest",
                        {"functional": 0.75, "smoke": 1.0},
                        {"functional": {"x": True, "y": False, "z": True}, "smoke": {"s": True}},
                        {})
    assert load_side(store.tracker, older).accuracy == {"functional": 0.1}


def test_a_replicate_series_counts_items_by_majority_with_its_own_floor(store: Store) -> None:
    parent = store.run("replicates-x", {"test_types": "functional,smoke", "mode": "replicates"},
                       {"functional_accuracy": 0.6, "smoke_accuracy": 1.0}, REPLICATE_DOCUMENTS)
    side = load_side(store.tracker, store.experiment)
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
    side = load_side(store.tracker, child)
    assert side == Side(child, f"{store.experiment} / r1", {"functional": 0.5},
                        {"functional": {"x": True, "y": False}}, {"functional": 0.2})
    # The experiment's latest evaluation is the series, not its child.
    assert load_side(store.tracker, store.experiment).run_id == parent


def test_test_types_tag_missing_or_with_empty_names(store: Store) -> None:
    untyped = store.run("untyped", {}, {"functional_accuracy": 0.5},
                        evaluation(functional=(item("x", True),)))
    assert load_side(store.tracker, untyped).accuracy == {}
    gappy = store.run("gappy", {"test_types": ",functional,,"}, {"functional_accuracy": 0.5,
                                                                 "_accuracy": 0.9},
                      evaluation(functional=(item("x", True),)))
    assert load_side(store.tracker, gappy).accuracy == {"functional": 0.5}
