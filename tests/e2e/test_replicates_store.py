"""``evalkit compare`` and ``evalkit history`` over replicate series on a real local store and
on a tracking server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalkit import EvalConfig, RunContext, Selection
from evalkit.evaluation import evaluate
from evalkit.tracking import Tracker
from tests.support.builders import entry, write_dataset
from tests.support.commands import evalkit_command
from tests.support.processes import free_port
from tests.support.team_server import MlflowServer
from tests.unit.evaluation.test_replicates import run_pack

# --- the commands, on real stores (slow) --------------------------------------------------------

@pytest.fixture
def command(capsys: pytest.CaptureFixture[str]) -> Any:
    """``evalkit ARGS`` in this process against ``MLFLOW_TRACKING_URI``: (status, stdout)."""
    def run(*args: str) -> tuple[int, str]:
        capsys.readouterr()
        status = evalkit_command(*args)
        return status, capsys.readouterr().out
    return run


def test_compare_and_history_commands_on_the_local_store(
        tmp_path: Path, tracking_uri: str, command: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking_uri)  # the commands' store
    tracker = Tracker(tracking_uri)
    untraced = {"TRACE_CALLS": False}  # what the commands read is the runs, not their traces
    single = run_pack(tmp_path, tracker, 0.7, "cli/a", replicated=False, **untraced)
    run_pack(tmp_path, tracker, 0.7, "cli/a", **untraced)
    run_pack(tmp_path, tracker, 0.7, "cli/b", root_seed=1, **untraced)
    run_pack(tmp_path, tracker, 0.2, "cli/weak", **untraced)

    status, out = command("compare", "cli/a", "cli/b")
    assert status == 5, out  # refused: inside the noise
    assert "verdict: inside the noise" in out
    status, out = command("compare", "cli/a", "cli/weak", "--json")
    assert status == 0, out
    (metric,) = json.loads(out)["metrics"]
    assert metric["verdict"] == "A better" and metric["gap"] > 2 * metric["noise_floor"] > 0
    single_weak = run_pack(tmp_path, tracker, 0.2, "cli/single-weak", replicated=False,
                           **untraced)
    status, out = command("compare", single, single_weak)
    assert status == 0, out  # no replicates: shown, not gated
    assert "verdict: not gated: no noise floor measured (no replicates)" in out

    status, out = command("history", "cli/a")
    assert status == 0
    lines = out.splitlines()
    assert len(lines) == 6
    assert [line.split()[3] for line in lines[2::2]] == ["replicates", "evaluation"]
    status, out = command("history", "cli/a", "--json")
    rows = json.loads(out)
    assert [r["replicates"] for r in rows] == [3, None]
    assert all(r["verdict"] == "PASS" for r in rows)


@pytest.fixture
def mlflow_server(tmp_path: Path) -> Iterator[str]:
    """A real MLflow tracking server on loopback (SQLite behind it)."""
    server = MlflowServer(f"sqlite:///{tmp_path / 'server.db'}", tmp_path / "server-artifacts",
                          free_port())
    server.start()
    try:
        yield server.uri
    finally:
        server.stop()


def test_history_lists_runs_from_a_tracking_server(
        tmp_path: Path, mlflow_server: str, command: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    dataset = write_dataset(tmp_path / "ds", {f"q{i}": entry("functional") for i in range(5)})
    cfg = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "hist/server", "DATASET_PATH": str(dataset),
        "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.5}, "eval.py")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)  # as its users export it
    for _ in range(2):
        evaluate(cfg, lambda item, call: "a", Selection("all"),
                 RunContext(tracker=Tracker(), runs_dir=tmp_path / "runs"))
    status, out = command("history", "hist/server", "--json")
    assert status == 0
    rows = json.loads(out)
    assert len(rows) == 2 and all(r["verdict"] == "PASS" for r in rows)
    assert rows[0]["accuracy"]["functional"]["accuracy"] == 1.0
    assert not (tmp_path / "mlflow.db").exists()  # everything went to the server
