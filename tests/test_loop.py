"""The call loop on its own: calls in flight at once, finishing out of order, kept in order.

Fast (no MLflow, no model): these are among the tests ``make mutation`` runs.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from evalkit import Call, Entry
from evalkit._secrets import Redactor
from evalkit.run._loop import CallRecord, RawResultsLog, run_calls
from tests.conftest import entry, plan_of


def raw_order(path: Path) -> list[tuple[str, int]]:
    return [(r["entry_id"], r["repeat"]) for r in map(json.loads, path.open())]


def test_repeats_finishing_out_of_order_come_back_in_dataset_then_repeat_order(
        tmp_path: Path) -> None:
    # Entry "a" (first in the dataset) has three repeats; repeat 0 is held back until every
    # other call has finished, so it is the last line appended to the raw results.
    plan = plan_of(tmp_path, {"a": entry("repeatability"), "b": entry("functional"),
                              "c": entry("functional")})
    others_done = threading.Event()
    finished: list[CallRecord] = []
    appended: list[list[tuple[str, int]]] = []
    raw = tmp_path / "raw.jsonl"

    def component(item: Entry, call: Call) -> str:
        if (item.id, call.repeat) == ("a", 0):
            assert others_done.wait(timeout=30), "the other calls never finished"
        return f"{item.id}-{call.repeat}"

    def on_call(record: CallRecord) -> None:
        finished.append(record)
        appended.append(raw_order(raw))
        if len(finished) == plan.total_calls - 1:
            others_done.set()

    with RawResultsLog(raw) as log:
        outputs = run_calls(plan, component, {}, log, Redactor(), concurrency=5,
                            on_call=on_call)

    assert [(r.entry_id, r.repeat) for r in finished][-1] == ("a", 0)
    assert appended[-1][-1] == ("a", 0)  # the file really was written out of order
    assert raw_order(raw) == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("c", 0)]
    assert [[c.output for c in o.calls] for o in outputs] == [
        ["a-0", "a-1", "a-2"], ["b-0"], ["c-0"]]
