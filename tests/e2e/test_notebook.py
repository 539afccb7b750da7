"""evalkit from a Jupyter notebook, run for real by nbclient in an IPython kernel: the
library leaves the process to its caller, so in a notebook it shows its progress in the cell,
and an interrupt of the kernel stops a run as Ctrl-C does: KILLED, every finished call kept,
and ``resume`` finishes it."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

from tests.support.builders import REPO, entry, write_dataset

SETUP = f'''
import json, os, sys, time
sys.path.insert(0, {str(REPO)!r})
import evalkit
from evalkit import EvalConfig, RunContext, Selection, ProgressDisplay, evaluate, resume
from evalkit.tracking import Tracker

def config(name):
    return EvalConfig.from_constants({{
        "EXPERIMENT_NAME": f"notebook/{{name}}", "DATASET_PATH": "ds", "EVAL_MIN_ACCURACY": 0.5,
        "REPORTS_DIR": "reports", "TRACE_CALLS": False}}, "notebook")

def component(entry, call):
    open(f"made/{{entry.id}}", "w").close()  # what the test waits for
    if entry.id >= "e3" and os.path.exists("hold"):
        time.sleep(0.5)  # slow enough to be interrupted among them
    return "a"

os.makedirs("made", exist_ok=True)
tracker = Tracker()
'''

FULL_RUN = '''
outcome = evaluate(config("full"), component, Selection.parse("all"),
                   RunContext(tracker=tracker, progress=ProgressDisplay()))
print("passed", outcome.passed, "calls", outcome.scored.calls)
'''

INTERRUPTED_RUN = '''
open("hold", "w").close()
evaluate(config("stopped"), component, Selection.parse("all"), RunContext(tracker=tracker))
'''

RESUME = '''
os.remove("hold")
killed = tracker.reader.runs("notebook/stopped")[0]
print(json.dumps({"status": killed.status, "run_id": killed.run_id}))
again = resume(config("stopped"), component, killed.run_id, RunContext(tracker=tracker))
print(json.dumps({"status": tracker.reader.stored(again.run_id).status,
                  "made": again.scored.calls,
                  "resumed": tracker.reader.stored(again.run_id).tags["resume_calls_made"]}))
'''


def notebook() -> Any:
    import nbformat  # the dev extra's: imported here, so collecting needs no notebook tools

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in
                (SETUP, FULL_RUN, INTERRUPTED_RUN, RESUME)]
    return nb


def text_of(cell: Any) -> str:
    parts = []
    for output in cell.get("outputs", []):
        parts.append(output.get("text", ""))
        parts += [str(v) for v in output.get("data", {}).values()]
        parts += [output.get("ename", ""), output.get("evalue", "")]
    return "\n".join(parts)


def test_a_notebook_shows_progress_and_a_kernel_interrupt_stops_a_run_resumably(
        tmp_path: Path) -> None:
    from nbclient import NotebookClient

    write_dataset(tmp_path / "ds", {f"e{i}": entry("functional") for i in range(8)})
    nb = notebook()
    client = NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}})
    with client.setup_kernel(cwd=str(tmp_path)):
        client.execute_cell(nb.cells[0], 0)
        client.execute_cell(nb.cells[1], 1)
        assert "passed True calls 8" in text_of(nb.cells[1])
        assert "calls 8/8" in text_of(nb.cells[1])  # the progress display, in the cell

        for marker in (tmp_path / "made").iterdir():
            marker.unlink()
        running = threading.Thread(target=client.execute_cell, args=(nb.cells[2], 2))
        running.start()
        deadline = time.monotonic() + 120
        while len(list((tmp_path / "made").iterdir())) < 4:  # e3 is in flight
            assert time.monotonic() < deadline, "the interrupted run never started its calls"
            time.sleep(0.05)
        asyncio.run(client.km.interrupt_kernel())  # the notebook's stop button
        running.join(timeout=120)
        assert not running.is_alive()
        stopped = text_of(nb.cells[2])
        assert "RunInterrupted" in stopped and "marked KILLED" in stopped
        made_before = len(list((tmp_path / "made").iterdir()))

        client.execute_cell(nb.cells[3], 3)
    printed = "".join(o.get("text", "") for o in nb.cells[3]["outputs"] if o["name"] == "stdout")
    killed, resumed = (json.loads(line) for line in printed.splitlines())
    assert killed["status"] == "KILLED"
    assert resumed["status"] == "FINISHED" and resumed["made"] == 8
    assert int(resumed["resumed"]) == 8 - made_before  # only the calls not kept were made
