"""A predicted total with its interval: what the tokens and the cost of calls not yet made
come to, from the figures of calls already made (:func:`predicted_total`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean, stdev

LEVEL = 0.95
"""The level of every interval an estimate states."""


@dataclass(frozen=True)
class Spread:
    """A predicted total and its interval (``low``/``high`` are ``None`` when the last run
    made a single call of the kind: one call gives no spread)."""

    estimate: float
    low: float | None
    high: float | None

    def contains(self, value: float) -> bool:
        """Whether ``value`` is inside the interval (within float rounding)."""
        low = self.estimate if self.low is None else self.low
        high = self.estimate if self.high is None else self.high
        slack = 1e-9 * max(1.0, abs(high))
        return low - slack <= value <= high + slack

    def to_json(self) -> dict[str, float | None]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high}


def predicted_total(per_call: Sequence[float], calls: int, level: float = LEVEL) -> Spread:
    """The total of ``calls`` new calls, from the figure (tokens or dollars) of each of the
    ``n = len(per_call)`` calls of the last run, taken as draws from one distribution.

    Estimate ``calls * mean``; interval ``calls * mean ± t · s · sqrt(calls · (1 + calls/n))``
    (clamped at 0), with ``s`` the sample standard deviation and ``t`` Student's quantile at
    ``(1 + level) / 2`` with ``n - 1`` degrees of freedom: the prediction interval of a sum of
    ``calls`` future draws, whose variance is ``calls · σ²`` (the new draws) plus
    ``calls² · σ² / n`` (the mean is itself estimated); see e.g. Hahn & Meeker, *Statistical
    Intervals* (1991), section 4.7 (prediction of a future total).

    Example, hand-worked: per-call costs 1, 2, 3 (mean 2, s 1) and 3 calls: estimate 6;
    t(0.975, 2) = 4.3027, sqrt(3 · (1 + 1)) = 2.4495, half-width 10.539, so [0, 16.539]::

        >>> spread = predicted_total([1.0, 2.0, 3.0], 3)
        >>> spread.estimate, spread.low, round(spread.high, 3)
        (6.0, 0.0, 16.539)
    """
    if not per_call:
        raise ValueError("no call to predict from")
    mean = fmean(per_call)
    estimate = calls * mean
    if len(per_call) < 2:
        return Spread(estimate, None, None)
    half = _half_width(per_call, calls, level)
    return Spread(estimate, max(0.0, estimate - half), estimate + half)


def _half_width(per_call: Sequence[float], calls: int, level: float) -> float:
    from scipy.stats import t as student_t

    n = len(per_call)
    quantile = float(student_t.ppf((1 + level) / 2, n - 1))
    return quantile * stdev(per_call) * math.sqrt(calls * (1 + calls / n))


def summed(spreads: Sequence[Spread]) -> Spread:
    """Totals of independent parts (the component's calls, the judge's) added: estimates
    add, and half-widths add in quadrature (each part's own Student quantile kept). A part
    without a spread leaves the sum without one."""
    estimate = sum(s.estimate for s in spreads)
    if any(s.low is None or s.high is None for s in spreads):
        return Spread(estimate, None, None)
    half = math.sqrt(sum(((s.high or 0.0) - s.estimate) ** 2 for s in spreads))
    return Spread(estimate, max(0.0, estimate - half), estimate + half)
