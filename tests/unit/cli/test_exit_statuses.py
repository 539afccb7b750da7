"""The exit status each error ends a command with: chosen by the command line's one table
(``evalkit.cli._exit``), never carried by the library's errors, and the same for a subclass as
for the class it derives from."""

from __future__ import annotations

from pathlib import Path

import pytest

import evalkit
from evalkit._errors import RawResultsDamaged, WorkerSetupError
from evalkit.cli._exit import ExitStatus, exit_status_of


class _Findings:
    def render(self) -> str:
        return "data/a.json: not valid JSON"


ERRORS = [
    (evalkit.EvalkitError("disk full"), ExitStatus.RUNTIME_FAILURE),
    (evalkit.ConfigError("MAX_CONCURRENCY must be a positive integer"), ExitStatus.USAGE),
    (evalkit.NotFound("run 0000 not found"), ExitStatus.USAGE),
    (evalkit.DatasetInvalid(_Findings()), ExitStatus.DATASET_INVALID),
    (evalkit.ImportInvalid("rows.csv", ["rows.csv:2: expected: missing"]),
     ExitStatus.DATASET_INVALID),
    (evalkit.LabelFileInvalid(Path("labels.csv"), "labels.csv", ()), ExitStatus.USAGE),
    (RawResultsDamaged("raw-results.jsonl", 2, "not JSON"), ExitStatus.RUNTIME_FAILURE),
    (evalkit.ProviderError("judge unreachable"), ExitStatus.RUNTIME_FAILURE),
    (evalkit.TrackingError("MLflow unreachable"), ExitStatus.RUNTIME_FAILURE),
    (evalkit.TrackingOffline([Path("bundle")], "http://mlflow"), ExitStatus.TRACKING_OFFLINE),
    (evalkit.RunInterrupted("interrupted"), ExitStatus.INTERRUPTED),
    (evalkit.BudgetExhausted("stopped for budget"), ExitStatus.BUDGET),
    (evalkit.OverBudget("estimated above MAX_COST_USD"), ExitStatus.BUDGET),
    (WorkerSetupError("setup_component() raised"), ExitStatus.RUNTIME_FAILURE),
]


@pytest.mark.parametrize(("error", "status"), ERRORS, ids=[type(e).__name__ for e, _ in ERRORS])
def test_each_error_ends_the_process_with_its_documented_status(
        error: evalkit.EvalkitError, status: ExitStatus) -> None:
    assert exit_status_of(error) == status
    assert not hasattr(error, "exit_status")  # the library's errors know nothing of processes


def test_an_error_of_a_subclass_takes_the_status_of_its_nearest_class_in_the_table() -> None:
    class UnknownExperiment(evalkit.NotFound):
        pass

    assert exit_status_of(UnknownExperiment("no experiment x")) == ExitStatus.USAGE == 2
