"""Progress of a run's calls, as figures for whoever shows them: :class:`Progress`.

The library counts and estimates; it draws nothing. The command line shows the figures on a
terminal (or in a notebook) and logs plain lines in CI; any caller may pass its own callback.

The time left is estimated from the calls after the first one: the first call pays for
warm-up (a model load, a connection), which would otherwise make the first estimate many
times too long. Until :data:`MIN_CALLS_FOR_ETA` calls are done no estimate is given.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

MIN_CALLS_FOR_ETA = 3


@dataclass(frozen=True)
class Progress:
    """Where a run's calls stand."""

    calls_done: int
    calls_total: int
    entries_done: int
    entries_total: int
    errors: int
    retries: int
    """Judge retries so far."""
    elapsed_s: float
    seconds_left: float | None
    """``None`` until enough calls are done to estimate it."""
    finished: bool = False
    """The calls have stopped (all made, or the run was stopped)."""


ProgressCallback = Callable[[Progress], None]


def estimate_seconds_left(done: int, total: int, first_done_at: float | None,
                          now: float) -> float | None:
    """Seconds left at the rate of the calls finished after the first one:
    (now - first_done_at) / (done - 1) x (total - done); ``None`` before
    :data:`MIN_CALLS_FOR_ETA` calls, or when no time has passed since the first."""
    if done >= total:
        return 0.0
    if done < MIN_CALLS_FOR_ETA or first_done_at is None or now <= first_done_at:
        return None
    return (now - first_done_at) / (done - 1) * (total - done)


class ProgressCounter:
    """Counts finished calls (entries done, errors) and reports a :class:`Progress` to
    ``report`` after each one, and once more when the calls stop."""

    def __init__(self, calls_per_entry: Mapping[str, int], report: ProgressCallback | None, *,
                 retries: Callable[[], int] = lambda: 0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._expected = dict(calls_per_entry)
        self._total = sum(self._expected.values())
        self._done: Counter[str] = Counter()
        self._calls = 0
        self._errors = 0
        self._entries = 0
        self._report = report
        self._retries = retries
        self._clock = clock
        self._started = clock()
        self._first_done_at: float | None = None
        self._lock = threading.Lock()

    def call_done(self, entry_id: str, error: bool) -> None:
        with self._lock:
            self._calls += 1
            self._errors += error
            self._done[entry_id] += 1
            self._entries += self._done[entry_id] == self._expected[entry_id]
            if self._first_done_at is None:
                self._first_done_at = self._clock()
            progress = self.now()
        if self._report is not None:
            self._report(progress)

    def finish(self) -> None:
        if self._report is not None:
            self._report(self.now(finished=True))

    def now(self, finished: bool = False) -> Progress:
        now = self._clock()
        return Progress(self._calls, self._total, self._entries, len(self._expected),
                        self._errors, self._retries(), now - self._started,
                        estimate_seconds_left(self._calls, self._total, self._first_done_at,
                                              now), finished)
