"""The bridge's books (:mod:`evalkit.calls.ray._bridge`): its workers, the calls out on them, which
worker takes the next call and which call a one-call slot is running. No Ray here."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalkit.records import CallRecord

ATTEMPTS = 3
"""How many workers a call is tried on before its worker loss is its recorded error."""


@dataclass
class Worker:
    """One worker slot: its actor handle and the calls sent to it."""

    handle: Any
    busy: int = 0
    """Calls sent to it and not yet answered or abandoned."""
    ended: bool = False
    """Ended by the bridge, for a call past its timeout: its other calls are charged no try."""
    sent: int = 0
    """Calls sent so far: a slot makes its calls in the order they were sent."""
    order: threading.Lock = field(default_factory=threading.Lock)
    """Held while a call is sent and numbered, so the numbers follow Ray's order."""


@dataclass(frozen=True)
class Flight:
    """A call out on a worker."""

    ref: Any
    future: Any
    worker: Worker
    args: tuple[Any, ...]
    attempt: int
    number: int
    """Its place in its worker's order (:attr:`Worker.sent` when it was sent)."""
    started: float


def taker(live: Sequence[Worker], calls_per_slot: int) -> Worker | None:
    """The least busy worker, if it can take a call: its ``calls_per_slot`` and one waiting
    behind them, so a slot has its next call when one ends. Past that a call is held by the
    bridge, not queued on a slot: queued behind a call that hangs, it would time out with it."""
    worker = min(live, key=lambda w: w.busy, default=None)
    return worker if worker is not None and worker.busy <= calls_per_slot else None


def is_running(flight: Flight, flights: Iterable[Flight], calls_per_slot: int) -> bool:
    """Whether ``flight``'s one-call slot is making it now (``False`` for a shared worker,
    whose calls run side by side): a slot makes its calls in order, so the first of its
    worker's not yet answered is the one running."""
    return calls_per_slot == 1 and not any(
        f.worker is flight.worker and f.number < flight.number and not f.future.done()
        for f in flights)


def lost_record(flight: Flight, error: Exception) -> CallRecord:
    """The record of a call whose workers died :data:`ATTEMPTS` times while making it."""
    entry_id, repeat = flight.args[0], flight.args[1]
    return CallRecord(entry_id, repeat, None, f"WorkerLost: the Ray worker making this call died "
                      f"{ATTEMPTS} times ({type(error).__name__}); the call was not made again",
                      (time.perf_counter() - flight.started) * 1000)
