"""``evalkit plan`` on a real local store, in this process.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from evalkit import (
    Call,
    Entry,
    EvalConfig,
    RunContext,
    Selection,
    evaluate,
)
from evalkit.evaluation import evaluate_replicates
from evalkit.tracking import Tracker
from tests.support.builders import entry, write_dataset
from tests.support.commands import evalkit_command


def sampled(entry: Entry, call: Call) -> Any:
    """Right about 80% of the time, the same answer for the same seed, entry and repeat."""
    rng = random.Random(f"{call.seed}:{entry.id}:{call.repeat}")
    return "a" if rng.random() < 0.8 else "b"


def test_plan_command_on_a_local_store(tmp_path: Path, tracking_uri: str,
                                       capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking_uri)  # the command's store
    dataset = write_dataset(tmp_path / "ds", {
        **{f"r{i}": entry("repeatability") for i in range(5)},
        **{f"f{i}": entry("functional") for i in range(10)}})
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "plan/cli", "DATASET_PATH": str(dataset), "EVAL_MIN_ACCURACY": 0.0,
        "REPORTS_DIR": str(tmp_path / "reports"), "REPEAT_COUNT": 4,
        "EVAL_MIN_ACCURACY_REPEATABILITY": 0.0, "REPLICATES": 3, "TRACE_CALLS": False},
        "eval.py")
    tracker = Tracker(tracking_uri)
    evaluate(config, sampled, Selection("all"),
             RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    evaluate_replicates(config, sampled, Selection("all"),
                        RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    capsys.readouterr()
    assert evalkit_command("plan", "plan/cli", "--json") == 0  # reports/ in the working folder
    document = json.loads(capsys.readouterr().out)
    assert [m["source"] for m in document["measured_p"]] == ["repeats", "replicates"]
    for m in document["measured_p"]:
        assert m["ci_lower"] <= m["p"] <= m["ci_upper"]
        assert len(m["vote_error"]["errors"]["any-of"]) == 20
    assert set(document["items_vs_replicates"]["types"]) <= {"functional", "repeatability"}
    report = (tmp_path / "reports" / "report-planning.md").read_text()
    assert "## Items or Replicates" in report
    planning = tracker.reader.stored(document["run_id"])
    assert planning.status == "FINISHED" and planning.tags["mode"] == "planning"
    assert tracker.reader.read_text(document["run_id"], "reports/report-planning.md") == report
