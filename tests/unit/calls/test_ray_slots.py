"""The Ray bridge's books, without Ray: which worker takes the next call, which call a one-call
slot is running, and the record of a call whose workers kept dying."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from evalkit.calls.ray._settings import RaySettings
from evalkit.calls.ray._slots import ATTEMPTS, Flight, Worker, is_running, lost_record, taker


def flight(worker: Worker, number: int, answered: bool = False) -> Flight:
    future: Future[Any] = Future()
    if answered:
        future.set_result(b"record")
    return Flight(object(), future, worker, ("e1", 2, b"payload"), 0, number, 0.0)


def test_the_least_busy_worker_takes_a_call_while_it_has_at_most_one_waiting() -> None:
    a, b = Worker("a", busy=2), Worker("b", busy=1)
    assert taker([a, b], calls_per_slot=1) is b
    b.busy = 2  # each running one call with one waiting: the call is held by the bridge
    assert taker([a, b], calls_per_slot=1) is None
    assert taker([a, b], calls_per_slot=8) is a  # a shared worker takes its MAX_CONCURRENCY
    assert taker([], calls_per_slot=1) is None


def test_a_one_call_slot_runs_the_first_of_its_calls_not_yet_answered() -> None:
    a, b = Worker("a"), Worker("b")
    first, second, elsewhere = flight(a, 0), flight(a, 1), flight(b, 0)
    flights = [first, second, elsewhere]
    assert is_running(first, flights, 1) and is_running(elsewhere, flights, 1)
    assert not is_running(second, flights, 1)  # queued behind the first
    answered = flight(a, 0, answered=True)  # its reply not yet handled: no longer running
    assert is_running(second, [answered, second], 1)
    assert not is_running(first, flights, 8)  # a shared worker: Ray cannot stop one call


def test_a_call_whose_workers_kept_dying_is_recorded_as_its_error() -> None:
    record = lost_record(flight(Worker("a"), 0), ConnectionError("gone"))
    assert (record.entry_id, record.repeat, record.output) == ("e1", 2, None)
    assert record.error == (f"WorkerLost: the Ray worker making this call died {ATTEMPTS} times "
                            "(ConnectionError); the call was not made again")


def test_the_start_message_says_how_many_calls_a_slot_makes_at_once() -> None:
    def pace(cpu: float) -> str:
        return RaySettings(None, "/p", "eval.py", "invoke_component", {"CPU": cpu}, 8).pace
    assert pace(1) == "one call at a time each"
    assert pace(0) == "up to 8 calls at once each"
