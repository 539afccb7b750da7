"""How whoever called a run asks it to stop: :class:`Stop`.

The library never installs a signal handler. The command line turns Ctrl-C and SIGTERM into
:meth:`Stop.request` (see :mod:`evalkit.cli`); a notebook's kernel interrupt, which raises
``KeyboardInterrupt`` in the thread waiting for the calls, is turned into the same request
there; any other caller (a web service, a test) calls :meth:`Stop.request` itself.

The first request starts no new call and waits for those in flight, which are kept; the second
abandons them (``--resume`` makes them). Either way the run ends ``KILLED`` with
:class:`~evalkit.RunInterrupted`, every finished call kept.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from evalkit._errors import RunInterrupted


class Stop:
    """Stop requests for the runs it is given to. Safe to call from any thread and from a
    signal handler: requesting takes no lock, and what it wakes is reentrant."""

    def __init__(self) -> None:
        self._requests = 0
        self._open_runs = 0
        self._wakers: list[Callable[[], None]] = []

    def request(self) -> bool:
        """Ask the run to stop: the first time gently, the second at once. Returns whether a
        call window heard it (else the run is past its calls: it ends at its next step)."""
        self._requests += 1
        wakers = list(self._wakers)
        for wake in wakers:
            wake()
        return bool(wakers)

    def abandon(self) -> None:
        """Stop at once, as a second request would: what runs the calls is gone."""
        self._requests = max(self._requests, 1)
        self.request()

    @property
    def requested(self) -> bool:
        """No new call may start."""
        return self._requests >= 1

    @property
    def abandons(self) -> bool:
        """Calls in flight are abandoned, not waited for."""
        return self._requests >= 2

    @property
    def run_open(self) -> bool:
        """Whether a run takes requests now. Before a run exists (the dataset is linted, the
        judge checked) nothing is paid for yet, so a caller that stops then may simply
        interrupt, as the command line does."""
        return self._open_runs > 0

    def raise_if_requested(self) -> None:
        """Between the steps of a run: end it here if a stop was requested."""
        if self.requested:
            raise RunInterrupted("interrupted")

    @contextlib.contextmanager
    def open_run(self) -> Iterator[None]:
        """While a run is open, requests are its to take (see :attr:`run_open`); once it has
        ended, the requests it took are spent, so the same Stop serves the next run (a
        resume in the same notebook) from a clear start."""
        self._open_runs += 1
        try:
            yield
        finally:
            self._open_runs -= 1
            if not self._open_runs:
                self._requests = 0

    @contextlib.contextmanager
    def waking(self, wake: Callable[[], None]) -> Iterator[None]:
        """Call ``wake`` (which must be reentrant) on every request while inside."""
        self._wakers.append(wake)
        try:
            yield
        finally:
            self._wakers.remove(wake)
