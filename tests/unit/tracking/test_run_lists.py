"""What MLflow's run lists show of a run without opening it: its verdict heading its name, the
dot's colour, the accuracies as the first metric columns (fast, memory tracker; the rendered
lists are checked in tests/e2e/test_ui.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalkit import EvalConfig, RunContext, Selection
from evalkit.evaluation import evaluate, evaluate_replicates
from evalkit.records import names
from evalkit.tracking import Tracker
from tests.support.builders import entry, write_dataset

ENTRIES = {**{f"f{i}": entry("functional") for i in range(4)},
           **{f"s{i}": entry("smoke") for i in range(2)}}


def config(tmp_path: Path, **extra: Any) -> EvalConfig:
    return EvalConfig.from_constants({
        "EXPERIMENT_NAME": "lists/x", "DATASET_PATH": str(write_dataset(tmp_path / "ds", ENTRIES)),
        "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.5, **extra},
        "test_eval.py")


@pytest.mark.parametrize(("answer", "verdict", "color"), [
    ("a", "PASS", "#2e7d32"), ("wrong", "FAIL", "#d32f2f")])
def test_a_finished_run_is_named_and_coloured_by_its_verdict(
        tmp_path: Path, tracker: Tracker, answer: str, verdict: str, color: str) -> None:
    outcome = evaluate(config(tmp_path), lambda e, c: answer, Selection("all"),
                       RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    run = tracker.reader.stored(outcome.run_id)
    assert run.status == "FINISHED"  # the process's outcome, whatever the verdict
    assert run.tags["verdict"] == verdict and run.tags["mlflow.runColor"] == color
    head, kind, day, minute = run.run_name.split(" ")
    assert (head, kind) == (verdict, "all") and len(run.run_name) <= 20
    assert (len(day), len(minute)) == (5, 5)  # 12-01 20:03
    assert tracker.reader.fetch(outcome.run_id).run_name == run.run_name  # reports say it too
    logged = [p.key for p in tracker.backend.journals[outcome.run_id].metrics]
    assert logged[:2] == ["functional_accuracy", "smoke_accuracy"]  # the first columns


def test_a_series_heads_its_parent_and_each_replicate_with_its_verdict(
        tmp_path: Path, tracker: Tracker) -> None:
    # replicate 1 answers wrong: it fails, and with it the series
    series = evaluate_replicates(config(tmp_path, REPLICATES=2),
                                 lambda e, c: "wrong" if c.replicate else "a", Selection("all"),
                                 RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    parent = tracker.reader.stored(series.parent_run_id)
    assert parent.run_name.startswith("FAIL ×2 all ")
    assert parent.tags["mlflow.runColor"] == "#d32f2f"
    logged = [p.key for p in tracker.backend.journals[series.parent_run_id].metrics]
    assert logged[:2] == ["functional_accuracy", "smoke_accuracy"]
    assert [tracker.reader.stored(c.run_id).run_name for c in series.replicates] == [
        "PASS r0", "FAIL r1"]


def test_a_new_verdict_replaces_the_one_heading_the_name() -> None:
    assert names.verdict_tags("PASS", "FAIL all 12-01 20:03") == {
        "verdict": "PASS", "mlflow.runName": "PASS all 12-01 20:03",
        "mlflow.runColor": "#2e7d32"}
    assert names.verdict_tags("FAIL", "r1")["mlflow.runName"] == "FAIL r1"
