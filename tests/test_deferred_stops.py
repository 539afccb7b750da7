"""A stop signal never lands between the two halves of the loop's bookkeeping: inside a step it
waits for the step's end (a call handed out is also counted as in flight, or neither), and a
stop that lands while a result is being kept still ends the run with every finished call."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from evalkit import Call, Entry
from evalkit._secrets import Redactor
from evalkit.run._loop import run_calls
from evalkit.run._raw import RawResultsLog, read_raw_results
from evalkit.run._signals import DeferredStops
from tests.conftest import entry, plan_of


def test_a_signal_inside_a_section_waits_for_its_end() -> None:
    steps: list[str] = []
    with DeferredStops() as stops, pytest.raises(KeyboardInterrupt):
        with stops.section():
            os.kill(os.getpid(), signal.SIGINT)
            steps.append("after the signal, still inside")
        steps.append("never: the signal is handled as the section ends")
    assert steps == ["after the signal, still inside"]


def test_outside_a_section_a_signal_interrupts_at_once() -> None:
    steps: list[str] = []
    with DeferredStops(), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        steps.append("never")
    assert steps == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_a_stop_while_a_result_is_kept_ends_the_loop_with_every_call(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, {f"e{i}": entry("functional") for i in range(6)})
    made: list[str] = []

    def component(item: Entry, call: Call) -> str:
        made.append(item.id)
        return "a"

    kept_so_far: list[object] = []

    def on_call(record: object) -> None:
        kept_so_far.append(record)
        if len(kept_so_far) == 2:  # Ctrl-C in the middle of keeping the second result
            os.kill(os.getpid(), signal.SIGINT)

    with RawResultsLog(tmp_path / "raw.jsonl") as log, pytest.raises(KeyboardInterrupt):
        run_calls(plan, component, {}, log, Redactor(), concurrency=2, on_call=on_call)
    kept = [r.entry_id for r in read_raw_results(tmp_path / "raw.jsonl").records]
    assert 2 <= len(kept) < 6
    assert sorted(kept) == sorted(made)  # every call made is kept; none is waited for in vain
