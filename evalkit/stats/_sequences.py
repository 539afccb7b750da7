"""Anytime-valid intervals for a run that looks after every entry and may stop at any look:
confidence sequences for an accuracy and for the paired gap of two runs.

An ordinary 95% interval looked at after every entry, with the run stopped at the first look
that clears the threshold, is no 95% procedure: at a true accuracy equal to the threshold it
passes in about one run of five (issue 31; ``benchmarks/sequential.py``). A confidence sequence
holds the truth at every look at once, with chance at least 1 - alpha, so the look at which a
run stops may depend on the data. Two questions are asked of the same stream of outcomes
(:class:`Scope`):

- the whole dataset (``Scope.DATASET``): the entries are drawn in random order without
  replacement from the ``total`` entries, and the target is the mean over all of them. The
  sequence is the betting one of Waudby-Smith & Ramdas (2020), cut to the deterministic bounds
  (every unseen entry 0, or every one 1), so it reaches the exact mean at the last entry;
- the population the dataset samples (``Scope.POPULATION``): the entries are i.i.d. draws and
  the target is their expectation; the hedged capital sequence of Waudby-Smith & Ramdas
  (2024), which may end undecided (INCONCLUSIVE).

The betting itself, its bets, truncation and grid are in :mod:`evalkit.stats._betting`. Each
look's interval is intersected with the previous ones, so the intervals are nested and a
verdict once reached stays (unless, without replacement, the deterministic bounds prove that
the bets missed: then those bounds are reported).

References
----------
I. Waudby-Smith, A. Ramdas, "Confidence sequences for sampling without replacement",
NeurIPS 33 (2020), section 3 (the hedged capital process without replacement).
I. Waudby-Smith, A. Ramdas, "Estimating means of bounded random variables by betting",
JRSS-B 86 (2024), 1-27, section 4 (hedged capital, predictable plug-in bets).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from evalkit.stats._betting import BettingSequence

DEFAULT_GRID = 1000
"""Candidate means m = j / 1000 the capitals are kept on: a bound is conservative by at most
0.001 (0.002 on the paired gap's [-1, 1] scale)."""


class Scope(StrEnum):
    """What a sequence's interval is about."""

    DATASET = "the whole dataset"
    """The mean over all ``total`` entries (a finite population): settles at the last one."""
    POPULATION = "the population the dataset samples"
    """The expectation of i.i.d. entries: may end undecided."""


class SequentialVerdict(StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    BETTER = "better"
    WORSE = "worse by more than the margin"
    WITHIN_MARGIN = "within the margin"
    UNSETTLED = "unsettled"
    """Not yet: more entries may settle it."""
    INCONCLUSIVE = "INCONCLUSIVE"
    """Every entry was seen and the interval still straddles the threshold (or margin)."""

    @property
    def settled(self) -> bool:
        return self not in (SequentialVerdict.UNSETTLED, SequentialVerdict.INCONCLUSIVE)

    @property
    def gate(self) -> str:
        """The gate's answer: PASS (PASS, better, within the margin), FAIL (FAIL, worse by
        more than the margin), else INCONCLUSIVE (not settled)."""
        if self in (SequentialVerdict.FAIL, SequentialVerdict.WORSE):
            return "FAIL"
        return "PASS" if self.settled else "INCONCLUSIVE"


@dataclass(frozen=True)
class Look:
    """A sequence after ``n`` of ``total`` entries: the interval of the mean (of the gap
    candidate - baseline for :class:`PairedSequence`) and the verdict it gives."""

    scope: Scope
    n: int
    total: int
    estimate: float
    """The mean of the entries seen (0.0 before the first)."""
    low: float
    high: float
    verdict: SequentialVerdict
    settled_at: int | None
    """The first look whose interval settled the verdict (``None`` while unsettled)."""
    confidence: float
    grid: int

    def to_json(self) -> dict[str, Any]:
        return {"scope": self.scope.name.lower(), "n": self.n, "total": self.total,
                "estimate": self.estimate, "low": self.low, "high": self.high,
                "verdict": str(self.verdict), "settled_at": self.settled_at,
                "confidence": self.confidence, "grid": self.grid, "method":
                f"betting confidence sequence (Waudby-Smith & Ramdas), grid 1/{self.grid}"}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Look:
        """A look as :meth:`to_json` wrote it (a run's ``sequential.json``)."""
        return cls(Scope[doc["scope"].upper()], doc["n"], doc["total"], doc["estimate"],
                   doc["low"], doc["high"], SequentialVerdict(doc["verdict"]),
                   doc["settled_at"], doc["confidence"], doc.get("grid", DEFAULT_GRID))


class _Sequence:
    """What both sequences share: the betting interval on [0, 1], the look, the first settled
    look. A subclass maps its values onto [0, 1] and says which intervals settle what."""

    lowest = 0.0
    """The smallest value an entry may take (it is mapped onto [0, 1])."""

    def __init__(self, total: int, scope: Scope, confidence: float, grid: int) -> None:
        if total < 1:
            raise ValueError(f"a sequence needs at least one entry, got total={total}")
        if not 0 < confidence < 1:
            raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
        if grid < 2:
            raise ValueError(f"the grid needs at least 2 steps, got {grid}")
        self.total, self.scope, self.confidence, self.grid = total, scope, confidence, grid
        self._betting = BettingSequence(1 - confidence, total, scope is Scope.DATASET, grid)
        self._settled_at: int | None = None

    def update(self, values: float | Iterable[float]) -> Look:
        """Take one value or several, in the order drawn; the look after the last of them."""
        x = np.atleast_1d(np.asarray(values, dtype=float))
        if x.ndim != 1 or not np.all((x >= self.lowest) & (x <= 1)):
            raise ValueError(f"every value must be a number in [{self.lowest:g}, 1]")
        if self._betting.n + len(x) > self.total:
            raise ValueError(f"{self._betting.n + len(x)} values for a sequence of "
                             f"{self.total} entries")
        unit = (x - self.lowest) / (1 - self.lowest)
        low, high = self._betting.extend(unit)
        if self._settled_at is None and len(x):
            settled = np.flatnonzero(self._decide(low, high) != SequentialVerdict.UNSETTLED)
            if len(settled):
                self._settled_at = self._betting.n - len(x) + int(settled[0]) + 1
        return self.look

    @property
    def settled_at(self) -> int | None:
        """The first look whose interval settled a verdict, whatever later looks say
        (``None`` while none has): where a run that stops once settled stops."""
        return self._settled_at

    @property
    def look(self) -> Look:
        """The sequence now."""
        b = self._betting
        verdict = SequentialVerdict(str(self._decide(np.array([b.low]), np.array([b.high]))[0]))
        if verdict is SequentialVerdict.UNSETTLED and b.n == self.total:
            verdict = SequentialVerdict.INCONCLUSIVE
        return Look(self.scope, b.n, self.total, self._scale(b.sum / b.n) if b.n else 0.0,
                    self._scale(b.low), self._scale(b.high), verdict,
                    self._settled_at if verdict.settled else None, self.confidence, self.grid)

    def _scale(self, unit: float) -> float:
        """A mean on [0, 1] back on the values' own scale."""
        return self.lowest + (1 - self.lowest) * unit

    def _decide(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """The verdict of each look's interval on [0, 1]."""
        raise NotImplementedError


class MeanSequence(_Sequence):
    """An accuracy (the mean of values in [0, 1]) against a threshold, at every look.

    Notes
    -----
    After t of N entries with interval [L_t, U_t] at level 1 - alpha (``confidence``), the
    verdict is PASS when L_t >= threshold, FAIL when U_t < threshold, else unsettled; after
    the last entry an unsettled verdict is INCONCLUSIVE (only ``Scope.POPULATION`` can end so:
    ``Scope.DATASET`` reaches the exact mean). The interval is the running intersection of::

        {m : max(K+_t(m), K-_t(m)) / 2 < 1 / alpha}          (on the grid, module _betting)
        [S_t / N, (S_t + N - t) / N]                          (Scope.DATASET only)

    so P(the truth leaves it at any look) <= alpha, and a verdict contradicts the truth with
    chance at most alpha at any look, a stopping look chosen by the data included.

    References
    ----------
    I. Waudby-Smith, A. Ramdas, "Confidence sequences for sampling without replacement",
    NeurIPS 33 (2020); "Estimating means of bounded random variables by betting", JRSS-B 86
    (2024), 1-27. Values equal the authors' ``confseq.betting.hedged_cs`` (tests).

    Examples
    --------
    300 entries, 85% right, threshold 0.8: the whole dataset is sure to pass after 174 of
    them; whether the population it samples passes, 300 entries cannot tell.

    >>> from evalkit.stats import MeanSequence, Scope
    >>> outcomes = ([1.0] * 17 + [0.0] * 3) * 15
    >>> dataset = MeanSequence(300, 0.8, scope=Scope.DATASET)
    >>> look = dataset.update(outcomes[:100])
    >>> print(look.verdict, f"{look.low:.3f} {look.high:.3f}")
    unsettled 0.777 0.950
    >>> look = dataset.update(outcomes[100:])
    >>> print(look.verdict, look.settled_at, f"{look.low:.3f} {look.high:.3f}")
    PASS 174 0.850 0.850
    >>> population = MeanSequence(300, 0.8, scope=Scope.POPULATION)
    >>> look = population.update(outcomes)
    >>> print(look.verdict, f"{look.low:.3f} {look.high:.3f}")
    INCONCLUSIVE 0.790 0.933
    """

    def __init__(self, total: int, threshold: float, *, scope: Scope = Scope.DATASET,
                 confidence: float = 0.95, grid: int = DEFAULT_GRID) -> None:
        if not 0 <= threshold <= 1:
            raise ValueError(f"the threshold must lie in [0, 1], got {threshold}")
        super().__init__(total, scope, confidence, grid)
        self.threshold = threshold

    def _decide(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        return np.select([low >= self.threshold, high < self.threshold],
                         [SequentialVerdict.PASS, SequentialVerdict.FAIL],
                         SequentialVerdict.UNSETTLED)


class PairedSequence(_Sequence):
    """The paired gap of two runs over the same items (candidate - baseline, each item's
    difference in [-1, 1]) against a non-inferiority margin, at every look.

    Notes
    -----
    The differences d are mapped to (d + 1) / 2 in [0, 1] and the sequence of
    :class:`MeanSequence` is run on them; its interval [L, U] is mapped back, d = 2 m - 1.
    With the margin delta >= 0 the verdict is::

        WORSE          U < -delta     (worse than the baseline by more than the margin)
        BETTER         L > 0
        WITHIN_MARGIN  -delta <= L and U <= delta

    checked in that order (comparisons on the [0, 1] scale, where an exact mean such as
    950/2000 meets the margin exactly), else unsettled, INCONCLUSIVE after the last entry.

    References
    ----------
    I. Waudby-Smith, A. Ramdas, "Confidence sequences for sampling without replacement",
    NeurIPS 33 (2020); "Estimating means of bounded random variables by betting", JRSS-B 86
    (2024), 1-27.

    Examples
    --------
    400 shared items, margin 0.05: the candidate agrees with the baseline on every item seen.

    >>> from evalkit.stats import PairedSequence, Scope
    >>> gate = PairedSequence(400, margin=0.05, scope=Scope.DATASET)
    >>> look = gate.update([0.0] * 60)
    >>> print(look.verdict, look.n, f"{look.low:+.3f} {look.high:+.3f}")
    unsettled 60 -0.104 +0.104
    >>> look = gate.update([0.0] * 140)
    >>> print(look.verdict, look.settled_at, f"{look.low:+.3f} {look.high:+.3f}")
    within the margin 119 -0.026 +0.026
    """

    lowest = -1.0

    def __init__(self, total: int, margin: float = 0.0, *, scope: Scope = Scope.DATASET,
                 confidence: float = 0.95, grid: int = DEFAULT_GRID) -> None:
        if not 0 <= margin < 1:
            raise ValueError(f"the margin must lie in [0, 1), got {margin}")
        super().__init__(total, scope, confidence, grid)
        self.margin = margin

    def _decide(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        worse, equal, better = (1 - self.margin) / 2, 0.5, (1 + self.margin) / 2
        return np.select([high < worse, low > equal, (low >= worse) & (high <= better)],
                         [SequentialVerdict.WORSE, SequentialVerdict.BETTER,
                          SequentialVerdict.WITHIN_MARGIN],
                         SequentialVerdict.UNSETTLED)
