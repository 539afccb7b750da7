"""The hedged capital process behind :mod:`evalkit.stats._sequences`: a betting confidence
sequence for the mean of values in [0, 1], over i.i.d. draws (the superpopulation) or over a
finite population of ``total`` fixed values drawn without replacement.

For a candidate mean m, a gambler bets against m on every value x_t. Two bets run side by side,
one that m is too low and one that it is too high::

    K+_t(m) = prod_{i<=t} (1 + l+_i (x_i - mu_i(m)))
    K-_t(m) = prod_{i<=t} (1 - l-_i (x_i - mu_i(m)))

``mu_i(m)`` is m for i.i.d. draws and, without replacement, the mean of the values not yet
drawn were the whole population's mean m: ``(total m - S_{i-1}) / (total - i + 1)``, S the
running sum. Under the truth both are nonnegative martingales, so by Ville's inequality
``max(K+/2, K-/2)`` reaches 1/alpha with probability at most alpha at any time at all: the
candidate means whose capital stays below are a 1 - alpha confidence sequence.

The bets are the predictable plug-in of Waudby-Smith & Ramdas (2024), equation (26), with
the regularised running mean and variance of their section 5.1 (one pseudo-observation at
mean 1/2, variance 1/4), truncated at half the bet that could lose everything::

    mu^_t    = (1/2 + S_t) / (t + 1)            (capped at 1)
    s2_t     = (1/4 + sum_{i<=t} (x_i - mu^_i)^2) / (t + 1)
    l_t      = sqrt(2 log(2 / alpha) / (s2_{t-1} t log(1 + t)))
    l+_t     = min(l_t, 1 / (2 mu_t(m))),   l-_t = min(l_t, 1 / (2 (1 - mu_t(m))))

These are the choices of the authors' reference code (``confseq.betting.hedged_cs``: theta 1/2,
trunc_scale 1/2, bets ``lambda_predmix_eb``), whose values the tests hold.

The grid. The capitals are kept on the candidate means ``m = j / grid``. Every factor is
nonincreasing in m for K+ and nondecreasing for K- (the truncation keeps it so), so each side's
surviving set is an interval; the bound reported is the last grid point each side excluded,
i.e. the first surviving point widened by one grid step: conservative by at most 1/grid. A
grid point outside the running interval never returns, so only the points inside are updated
(a look costs O(points still in the interval)). Without replacement the interval is also cut
to the deterministic bounds ``[S_t / total, (S_t + total - t) / total]``.
"""

from __future__ import annotations

import math

import numpy as np

TRUNCATION = 0.5
"""The largest share of the capital a bet may put at risk (``trunc_scale`` of ``confseq``)."""
PRIOR_MEAN, PRIOR_VARIANCE = 0.5, 0.25
CHUNK = 512
"""Looks computed in one matrix of (looks x grid points): bounds the memory of a long batch."""


class BettingSequence:
    """The running interval of a betting confidence sequence at level 1 - ``alpha``;
    ``total`` values in all, drawn without replacement when ``finite``."""

    def __init__(self, alpha: float, total: int, finite: bool, grid: int) -> None:
        self.alpha, self.total, self.finite = alpha, total, finite
        self.points = np.arange(grid + 1) / grid
        self.limit = math.log(2 / alpha)  # log(1 / (alpha theta)), theta = 1/2
        self.first, self.last = 0, grid  # the grid points still inside the interval
        self.log_plus = np.zeros(grid + 1)
        self.log_minus = np.zeros(grid + 1)
        self.n, self.sum, self.squares = 0, 0.0, 0.0
        self.variance = PRIOR_VARIANCE  # s2 at the last look
        self.low, self.high = 0.0, 1.0
        self.missed = False
        """Without replacement: the bets' interval left the deterministic bounds, which the
        truth never leaves, so the bets missed (chance at most alpha) and only the bounds are
        reported from then on."""

    def extend(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Take ``values`` in order; the running (low, high) after each of them."""
        lows, highs = [], []
        for start in range(0, len(values), CHUNK):
            low, high = self._extend(values[start:start + CHUNK])
            lows.append(low)
            highs.append(high)
        if not lows:
            return np.empty(0), np.empty(0)
        return np.concatenate(lows), np.concatenate(highs)

    def _extend(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = self.n + np.arange(1, len(x) + 1)
        sums = self.sum + np.cumsum(x)
        before = np.concatenate(([self.sum], sums[:-1]))  # S_{t-1}
        if self.finite:
            sure_low, sure_high = sums / self.total, (sums + (self.total - t)) / self.total
        else:
            sure_low, sure_high = np.zeros(len(x)), np.ones(len(x))
        squares = self.squares + np.cumsum(
            (x - np.minimum((PRIOR_MEAN + sums) / (t + 1), 1.0)) ** 2)
        variances = (PRIOR_VARIANCE + squares) / (t + 1)  # s2_t
        if self.missed or self.first > self.last:  # no grid point left to bet on
            bet_low, bet_high = np.zeros(len(x)), np.ones(len(x))
        else:
            previous = np.concatenate(([self.variance], variances[:-1]))
            bet_low, bet_high = self._bet(x, t, before, previous)
        self.n, self.sum, self.squares = int(t[-1]), float(sums[-1]), float(squares[-1])
        self.variance = float(variances[-1])
        low, high = self._intersect(np.maximum(bet_low, sure_low),
                                    np.minimum(bet_high, sure_high), sure_low, sure_high)
        self.first = int(np.searchsorted(self.points, self.low, side="left"))
        self.last = int(np.searchsorted(self.points, self.high, side="right")) - 1
        return low, high

    def _bet(self, x: np.ndarray, t: np.ndarray, before: np.ndarray,
             previous: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each look's interval from the capitals on the grid points still inside; ``before``
        the sums and ``previous`` the variances s2 of the look before each."""
        bets = np.sqrt(2 * self.limit / (previous * t * np.log1p(t)))[:, None]
        inside = slice(self.first, self.last + 1)
        m = self.points[inside][None, :]
        if self.finite:
            # inside the deterministic bounds mu lies in [0, 1]; the clip holds off rounding
            mu = np.clip((self.total * m - before[:, None]) / (self.total - t + 1)[:, None],
                         0.0, 1.0)
        else:
            mu = np.broadcast_to(m, (len(x), m.shape[1]))
        gain = x[:, None] - mu
        with np.errstate(divide="ignore"):
            plus = np.minimum(bets, TRUNCATION / mu)
            minus = np.minimum(bets, TRUNCATION / (1 - mu))
        log_plus = self.log_plus[inside] + np.cumsum(np.log1p(plus * gain), axis=0)
        log_minus = self.log_minus[inside] + np.cumsum(np.log1p(-minus * gain), axis=0)
        self.log_plus[inside], self.log_minus[inside] = log_plus[-1], log_minus[-1]
        kept_plus, kept_minus = log_plus <= self.limit, log_minus <= self.limit
        # first point K+ keeps (one past the last point when it keeps none), one step down
        first = np.where(kept_plus.any(axis=1), kept_plus.argmax(axis=1), m.shape[1])
        last = np.where(kept_minus.any(axis=1),
                        m.shape[1] - 1 - kept_minus[:, ::-1].argmax(axis=1), -1)
        grid = len(self.points) - 1
        low = self.points[np.clip(self.first + first - 1, 0, grid)]
        high = self.points[np.clip(self.first + last + 1, 0, grid)]
        return low, high

    def _intersect(self, low: np.ndarray, high: np.ndarray, sure_low: np.ndarray,
                   sure_high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The running intersection of the looks' intervals. At a look whose interval misses
        the running one, the look is set aside; without replacement, where the deterministic
        bounds miss it too, the bets missed and the bounds take over."""
        low, high = low.copy(), high.copy()
        start = 0
        while start < len(low):
            low[start:] = np.maximum.accumulate(np.maximum(low[start:], self.low))
            high[start:] = np.minimum.accumulate(np.minimum(high[start:], self.high))
            empty = np.flatnonzero(low[start:] > high[start:])
            if not len(empty):
                break
            at = start + int(empty[0])
            low[at] = max(float(low[at - 1]) if at else self.low, sure_low[at])
            high[at] = min(float(high[at - 1]) if at else self.high, sure_high[at])
            if low[at] > high[at]:  # only without replacement: [0, 1] holds any interval
                self.missed = True
                low[at:], high[at:] = sure_low[at:], sure_high[at:]
                break
            self.low, self.high = float(low[at]), float(high[at])
            start = at + 1
        self.low, self.high = float(low[-1]), float(high[-1])
        return low, high
