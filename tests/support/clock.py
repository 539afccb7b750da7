"""A clock the test moves: what depends on time (a timeout, a time left) depends on what the
test did, not on how busy the machine is."""

from __future__ import annotations

import threading


class FakeClock:
    """Stands for ``time.monotonic``: reads :attr:`now`, which only :meth:`advance` (safe from
    any thread) or the test itself moves on."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds
