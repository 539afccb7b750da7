"""Hostile components a process must survive (slow): a call that never returns times out and
the process still exits; a hung call, two stops, a torn line and two resumes.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from evalkit.records import names
from evalkit.tracking import Tracker
from tests.support.builders import entry, write_dataset, write_eval_script
from tests.support.processes import run_eval, start_eval, wait_for

pytestmark = pytest.mark.slow


# --- what acts on the process: eval.py in processes of its own --------------------------------

COMPONENT = """
import os, threading

def invoke_component(entry, call):
    if entry.input == "hang-unless-resumed" and os.path.exists("hang.flag"):
        threading.Event().wait()  # never returns
    return "a"
"""


def hostile_project(folder: Path, behaviours: list[str], **constants: Any) -> None:
    write_dataset(folder / "ds", {b: entry("functional", input=b) for b in behaviours})
    write_eval_script(folder, {"EXPERIMENT_NAME": "hostile/components", "DATASET_PATH": "ds",
                               "EVAL_MIN_ACCURACY": 0.0, "MAX_CONCURRENCY": 8, **constants},
                      COMPONENT)


def test_a_call_that_never_returns_times_out_and_the_process_still_exits(
        tmp_path: Path) -> None:
    """Its thread can never be stopped: the run records the timeout and finishes, and the
    process ends all the same (were it to wait for that thread, run_eval would time out)."""
    hostile_project(tmp_path, ["ok0", "hang-unless-resumed"], CALL_TIMEOUT=1)
    (tmp_path / "hang.flag").touch()
    done = run_eval(tmp_path, "--type=functional", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    (raw,) = (tmp_path / ".evalkit" / "runs").glob("*/raw-results.jsonl")
    records = {r["entry_id"]: r for r in map(json.loads, raw.read_text().splitlines())}
    assert records["ok0"]["output"] == "a"
    assert records["hang-unless-resumed"]["error"].startswith(
        "CallTimeout: no result within CALL_TIMEOUT = 1 s; the call was abandoned")
    stored = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}").reader.stored(raw.parent.name)
    assert stored.status == "FINISHED" and stored.metrics["component_errors"] == 1


def stop_twice(process: Any, log: Path, stop_signal: signal.Signals) -> None:
    """Stop, then stop again once the first is acknowledged; the process then ends although
    its hung call never returns: the call was abandoned."""
    process.send_signal(stop_signal)
    wait_for(lambda: "stopping: waiting for 1 call(s) in flight to finish and be kept (stop "
             "again, e.g. Ctrl-C, to abandon them)" in log.read_text(), "the first stop")
    assert process.poll() is None  # still waiting for the hung call, as it says
    process.send_signal(stop_signal)
    process.wait(timeout=120)
    assert "abandoned 1 call(s) in flight; a resume makes them again" in log.read_text()


def test_a_hung_call_two_stops_a_torn_line_and_two_resumes(tmp_path: Path) -> None:
    """A job started with SIGINT ignored (``make eval &``) stopped by Ctrl-C twice while a
    call hangs; its last raw-results line torn; one resume while another works on the run;
    that resume stopped by SIGTERM twice; a last resume finishes the run."""
    oks = [f"ok{i}" for i in range(4)]
    hostile_project(tmp_path, [*oks, "hang-unless-resumed"])
    (tmp_path / "hang.flag").touch()
    log = tmp_path / "eval.log"
    process = start_eval(tmp_path, "--type=functional", log=log,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    runs = tmp_path / ".evalkit" / "runs"
    try:
        wait_for(lambda: any(len(p.read_text().splitlines()) == 4
                             for p in runs.glob("*/raw-results.jsonl")), "the four quick calls")
        stop_twice(process, log, signal.SIGINT)
    finally:
        process.kill()
    assert process.returncode == 130
    (run_dir,) = runs.iterdir()
    run_id = run_dir.name
    text = log.read_text()
    assert "Traceback" not in text and f"--resume {run_id}" in text
    reader = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}").reader
    assert reader.stored(run_id).status == "KILLED"
    uploaded = reader.read_text(run_id, names.RAW_RESULTS_ARTIFACT).splitlines()
    assert sorted(json.loads(line)["entry_id"] for line in uploaded) == oks  # all kept

    # Killed mid-write: the last line is cut in half.
    raw = run_dir / "raw-results.jsonl"
    text = raw.read_text()
    raw.write_text(text[:len(text) - len(text.splitlines()[-1]) // 2 - 1])

    first_log = tmp_path / "resume.log"
    first = start_eval(tmp_path, "--resume", run_id, log=first_log)  # the call still hangs
    try:
        wait_for(lambda: f"resuming run {run_id}: 3 of 5 calls recorded, 2 to make"
                 in first_log.read_text(), "the resume")
        assert "was cut mid-write" in first_log.read_text()
        second = run_eval(tmp_path, "--resume", run_id)
        assert second.returncode == 2
        assert f"run {run_id} is being worked on by another process" in second.stderr
        assert f"holds .evalkit/runs/{run_id}/run.lock" in second.stderr  # names the lock
        assert "Traceback" not in second.stderr
        stop_twice(first, first_log, signal.SIGTERM)
    finally:
        first.kill()
    assert first.returncode == 130

    (tmp_path / "hang.flag").unlink()
    resumed = run_eval(tmp_path, "--resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    stored = reader.stored(run_id)
    assert stored.status == "FINISHED"
    assert stored.tags["resume_calls_made"] == "1"  # the torn call was re-made by the first
    lines = raw.read_text().splitlines()
    assert [json.loads(line)["entry_id"] for line in lines] == [
        "hang-unless-resumed", *oks]  # each call once, in dataset order
