"""The runs the outage promises share, in memory (promises/test_server_outage.py,
test_series_outage.py) and against a real team server (e2e/test_team_server.py,
test_traces_outage.py): one evaluation of functional entries right when the id ends in 0-6,
and a replicate series of three whose flaky entry changes in replicate 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalkit import Call, Entry, EvalConfig
from tests.support.builders import entry, write_dataset
from tests.support.servers import Outage


def right_when_0_to_6(item: Entry, call: Call) -> str:
    return "a" if item.id[-1] in "0123456" else "b"


def project_config(tmp_path: Path, experiment: str, entries: int = 12,
                   reports: str = "reports", **constants: Any) -> EvalConfig:
    """``entries`` functional entries (right when the id ends in 0-6) and one repeatability
    entry of three repeats; the reports in ``tmp_path/reports``."""
    dataset = write_dataset(tmp_path / "ds", {
        **{f"e{i:02d}": entry("functional") for i in range(entries)},
        "rep": entry("repeatability")})
    return EvalConfig.from_constants({
        "EXPERIMENT_NAME": experiment, "DATASET_PATH": str(dataset),
        "REPORTS_DIR": str(tmp_path / reports), "EVAL_MIN_ACCURACY": 0.5, "REPEAT_COUNT": 3,
        "EVAL_MIN_ACCURACY_REPEATABILITY": 0.5, "MAX_CONCURRENCY": 1, **constants}, "eval.py")


SERIES = {"steady": entry("functional"), "flaky": entry("functional"),
          "wrong": entry("functional")}
STABILITY = {
    "steady": [("always right", "r0: right (a); r1: right (a); r2: right (a)")],
    "flaky": [("changed", "r0: right (a); r1: wrong (b); r2: right (a)")],
    "wrong": [("always wrong", "r0: wrong (b); r1: wrong (b); r2: wrong (b)")]}


def series_config(tmp_path: Path, experiment: str) -> EvalConfig:
    return EvalConfig.from_constants({
        "EXPERIMENT_NAME": experiment, "DATASET_PATH": str(write_dataset(tmp_path / "ds",
                                                                         SERIES)),
        "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.0,
        "REPLICATES": 3, "MAX_CONCURRENCY": 1}, "eval.py")


def series_answer(outage: Outage) -> Any:
    def answer(item: Entry, call: Call) -> str:
        outage.tick(item, call)
        right = item.id == "steady" or (item.id == "flaky" and call.replicate != 1)
        return "a" if right else "b"
    return answer
