"""What a run has spent while it runs, against ``MAX_COST_USD``: :class:`Spending`.

Every component call and every early judgement is priced by ``TOKEN_PRICES`` as it is kept.
The rule: once the spent cost plus the expected cost of one more call (the mean cost per call
so far) is above the limit, and a call is still to come, the run is asked to stop, as an
interrupt would ask it: no new call starts, the calls in flight finish and are kept (so a run
can end above the limit by what those calls cost: at most ``MAX_CONCURRENCY`` calls), and
``--resume`` continues it.

Example, hand-worked: a limit of $0.10 and calls of $0.03 each. After the third call $0.09 is
spent and one more is expected to cost $0.03: $0.12 is over the limit, so the run stops after
three calls, never starting a fourth that would have ended at $0.12::

    >>> from evalkit.calls import Stop
    >>> from evalkit.records import TokenPrice, TokenUsage
    >>> stop = Stop()
    >>> spending = Spending(0.10, {"m": TokenPrice(30_000.0, 0.0)}, stop, planned_calls=10)
    >>> for _ in range(3):
    ...     spending.add([TokenUsage(1, 0, "m")])
    >>> round(spending.spent_usd, 2), spending.calls, spending.exhausted, stop.requested
    (0.09, 3, True, True)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from evalkit.calls import Stop
from evalkit.records import Prices, TokenUsage, cost_of, usd

logger = logging.getLogger("evalkit")


class Spending:
    """The cost of the calls kept so far, checked against ``limit_usd`` (``None``: no limit,
    the cost is still summed). Safe to add to from the window's thread and the judge's."""

    def __init__(self, limit_usd: float | None, prices: Prices, stop: Stop,
                 planned_calls: int = 0) -> None:
        self.limit_usd = limit_usd
        self.planned_calls = planned_calls
        """The calls this attempt makes at most: past the last one, nothing is left to stop."""
        self._prices = prices
        self._stop = stop
        self._lock = threading.Lock()
        self.spent_usd = 0.0
        self.calls = 0
        """Calls priced so far (component calls and judge calls alike)."""
        self.exhausted = False
        """The limit stopped the run."""
        self.stopped_at_usd: float | None = None
        """What was spent when the limit stopped the run (before the calls then in flight
        came back)."""

    def add(self, usages: Iterable[TokenUsage]) -> None:
        """Count one call's usage (one per model; none when it reported none: it costs 0)
        and ask the run to stop once one more call is expected to pass the limit."""
        cost = cost_of(usages, self._prices)
        with self._lock:
            self.spent_usd += 0.0 if cost is None else cost.total_usd
            self.calls += 1
            expected_next = self.spent_usd / self.calls
            stopping = (self.limit_usd is not None and not self.exhausted
                        and self.calls < self.planned_calls
                        and self.spent_usd + expected_next > self.limit_usd)
            if stopping:
                self.exhausted = True
                self.stopped_at_usd = self.spent_usd
        if stopping:
            logger.warning("MAX_COST_USD = %g: %s spent on %d calls, and the next is expected "
                           "to cost %s: no new call starts", self.limit_usd, usd(self.spent_usd),
                           self.calls, usd(expected_next))
            self._stop.request()
