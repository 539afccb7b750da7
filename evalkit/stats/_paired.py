"""An interval for the gap between two runs scored on the same items (paired proportions).

Two ordinary runs of a component over the same items give, per shared item, a pair of
verdicts: right in both (``both_right``), in A only, in B only, or in neither. The gap on
those items is ``(a_only - b_only) / n``. Its interval is Newcombe's method 10 for paired
proportions (R. G. Newcombe, "Improved confidence intervals for the difference between
binomial proportions based on paired data", Stat. Med. 17, 1998, 2635-2650): the Wilson
intervals of the two accuracies combined with the correlation phi of the pairs, phi's
numerator ``both_right x neither - a_only x b_only`` shrunk by n/2 towards 0 when positive
(and 0 when that crosses 0), so that a run compared with itself is not credited with more
certainty than its items give.

It speaks only to these items and these two runs: it carries item sampling, not the noise of
calling the component again, which only replicates measure (the noise floor).

The same interval answers a non-inferiority question (:func:`margin_check`): is a candidate
no worse than a baseline by more than a margin? Reading the two-sided interval's bounds against
``-margin`` is the usual confidence-interval test of non-inferiority (each bound errs on its
side with probability (1 - confidence)/2: 2.5% at 95%), and Newcombe's interval keeps close to
its nominal coverage on small and lopsided tables (Fagerland, Lydersen & Laake 2014, who
recommend it for paired proportions), where a Wald interval would not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from evalkit.stats._one_run import wilson_bounds
from evalkit.stats._sequences import Look


@dataclass(frozen=True)
class PairedGap:
    """A - B over the items both runs decided, with Newcombe's interval."""

    items: int
    a_only: int
    """Items right in A and wrong in B."""
    b_only: int
    gap: float
    low: float
    high: float
    confidence: float

    def to_json(self) -> dict[str, Any]:
        return {"items": self.items, "right_in_a_only": self.a_only,
                "right_in_b_only": self.b_only, "gap": self.gap, "low": self.low,
                "high": self.high, "confidence": self.confidence,
                "method": "Newcombe paired (method 10)"}


def paired_gap(both_right: int, a_only: int, b_only: int, neither: int,
               confidence: float = 0.95) -> PairedGap | None:
    """The paired gap A - B over shared items and its interval; ``None`` without a shared
    item.

    Notes
    -----
    With n shared items, p_A = (both_right + a_only)/n, p_B = (both_right + b_only)/n, their
    Wilson bounds [l_A, u_A], [l_B, u_B] and the continuity-corrected correlation phi
    (module docstring)::

        gap   = p_A - p_B = (a_only - b_only) / n
        low   = gap - sqrt((p_A - l_A)² - 2 phi (p_A - l_A)(u_B - p_B) + (u_B - p_B)²)
        high  = gap + sqrt((p_B - l_B)² - 2 phi (p_B - l_B)(u_A - p_A) + (u_A - p_A)²)

    References
    ----------
    R. G. Newcombe, "Improved confidence intervals for the difference between binomial
    proportions based on paired data", Statistics in Medicine 17 (1998), 2635-2650,
    method 10.

    Examples
    --------
    The published example of M. W. Fagerland, S. Lydersen, P. Laake, *Statistical Analysis
    of Contingency Tables* (2017), ch. 8 (Cavo et al. 2012): 59 in both, 6 in A only, 16 in
    B only, 80 in neither; Newcombe's interval -0.0621 (-0.1186 to -0.0046):

    >>> from evalkit.stats import paired_gap
    >>> g = paired_gap(59, 6, 16, 80)
    >>> print(f"{g.gap:.4f} {g.low:.4f} {g.high:.4f}")
    -0.0621 -0.1186 -0.0046
    """
    n = both_right + a_only + b_only + neither
    if n == 0:
        return None
    p_a, p_b = (both_right + a_only) / n, (both_right + b_only) / n
    low_a, high_a = wilson_bounds(p_a, n, confidence)
    low_b, high_b = wilson_bounds(p_b, n, confidence)
    margins = ((both_right + a_only) * (b_only + neither) * (both_right + b_only)
               * (a_only + neither))
    association: float = both_right * neither - a_only * b_only
    if association > n / 2:
        association -= n / 2
    elif association > 0:
        association = 0
    phi = association / math.sqrt(margins) if margins else 0.0
    gap = p_a - p_b
    below = math.sqrt(max(0.0, (p_a - low_a) ** 2 - 2 * phi * (p_a - low_a) * (high_b - p_b)
                          + (high_b - p_b) ** 2))
    above = math.sqrt(max(0.0, (p_b - low_b) ** 2 - 2 * phi * (p_b - low_b) * (high_a - p_a)
                          + (high_a - p_a) ** 2))
    return PairedGap(n, a_only, b_only, gap, max(-1.0, gap - below), min(1.0, gap + above),
                     confidence)


class MarginVerdict(StrEnum):
    """A candidate against a baseline and a non-inferiority margin: one of three answers."""

    NO_WORSE = "no worse"
    """The whole interval of candidate - baseline lies above ``-margin``."""
    WORSE = "worse by more than the margin"
    """The whole interval lies below ``-margin``."""
    INCONCLUSIVE = "INCONCLUSIVE"
    """The interval holds ``-margin`` (or no item is shared): the data cannot settle it."""


@dataclass(frozen=True)
class MarginCheck:
    """Candidate - baseline over the shared items against ``-margin``, with its verdict."""

    margin: float
    difference: PairedGap | None
    """Candidate - baseline (the candidate as A of :func:`paired_gap`); ``None`` without a
    shared item."""
    verdict: MarginVerdict
    sequence: Look | None = None
    """The candidate's sequential run against the baseline (``--against``) at its stop:
    when given, its confidence sequence answered (valid at the look the run chose to stop
    at, which the fixed interval of the items called is not)."""

    def to_json(self) -> dict[str, Any]:
        return {"margin": self.margin, "verdict": str(self.verdict),
                "candidate_minus_baseline": None if self.difference is None
                else _by_side(self.difference.to_json()),
                "sequence": None if self.sequence is None else self.sequence.to_json()}


def _by_side(gap: dict[str, Any]) -> dict[str, Any]:
    """Candidate - baseline's counts named by side: its A is the candidate, which a reader of
    the comparison (whose A is the baseline) would otherwise take the other way round."""
    renamed = {"right_in_a_only": "right_in_candidate_only",
               "right_in_b_only": "right_in_baseline_only"}
    return {renamed.get(key, key): value for key, value in gap.items()}


def sequence_margin_check(difference: PairedGap | None, look: Look, margin: float
                          ) -> MarginCheck:
    """The answer of a run against the baseline, from its :class:`PairedSequence` at the
    stop: better or within the margin is no worse, worse by more than the margin is worse,
    a sequence not settled is INCONCLUSIVE.

    Examples
    --------
    400 shared items, the candidate agreeing with the baseline on the first 200 called:

    >>> from evalkit.stats import PairedSequence, sequence_margin_check
    >>> look = PairedSequence(400, margin=0.05).update([0.0] * 200)
    >>> check = sequence_margin_check(None, look, 0.05)
    >>> print(look.verdict, look.settled_at, "->", check.verdict)
    within the margin 119 -> no worse
    """
    verdict = {"PASS": MarginVerdict.NO_WORSE, "FAIL": MarginVerdict.WORSE}.get(
        look.verdict.gate, MarginVerdict.INCONCLUSIVE)
    return MarginCheck(margin, difference, verdict, look)


def margin_check(difference: PairedGap | None, margin: float) -> MarginCheck:
    """Whether a candidate is no worse than a baseline by more than ``margin``, from the
    paired interval of candidate - baseline over their shared items.

    Notes
    -----
    With [low, high] the interval of :func:`paired_gap` (candidate as A, baseline as B)::

        no worse                      if low  > -margin
        worse by more than the margin if high < -margin
        INCONCLUSIVE                  otherwise (the interval holds -margin)

    At confidence 0.95 each of the first two answers is wrong with probability at most about
    2.5% when its premise is false (the interval's one-sided coverage). A margin of 0 asks
    whether the candidate is at least as good. The interval carries item sampling only: two
    runs that would differ when called again need replicates behind them (their majority
    verdict per item is what is paired).

    References
    ----------
    M. W. Fagerland, S. Lydersen, P. Laake, "Recommended tests and confidence intervals for
    paired binomial proportions", Statistics in Medicine 33 (2014), 2850-2875; the CONSORT
    statement for non-inferiority trials (Piaggio et al., JAMA 308, 2012, 2594-2604) on
    reading a two-sided interval against the margin.

    Examples
    --------
    Ten items right in both runs: each accuracy's Wilson interval is [10/(10 + z²), 1] =
    [0.7225, 1] and phi is 0, so candidate - baseline lies in [-0.2775, +0.2775]. A margin of
    0.30 is settled, one of 0.25 is not:

    >>> from evalkit.stats import margin_check, paired_gap
    >>> same = paired_gap(10, 0, 0, 0)
    >>> print(f"{same.low:.4f}", margin_check(same, 0.30).verdict,
    ...       margin_check(same, 0.25).verdict)
    -0.2775 no worse INCONCLUSIVE
    """
    if not 0 <= margin <= 1:
        raise ValueError(f"a margin is an accuracy difference from 0 to 1, not {margin}")
    if difference is None:
        verdict = MarginVerdict.INCONCLUSIVE
    elif difference.low > -margin:
        verdict = MarginVerdict.NO_WORSE
    elif difference.high < -margin:
        verdict = MarginVerdict.WORSE
    else:
        verdict = MarginVerdict.INCONCLUSIVE
    return MarginCheck(margin, difference, verdict)
