"""Agreement between an automatic verdict (the judge's, or any scorer's) and people's labels.

The person's label is the truth and "pass" the positive class: a true positive is an entry the
judge passed and the person passed. Each function documents its formula and returns a frozen
result object.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import t as student_t

from evalkit.stats._one_run import (
    ConfusionMatrix,
    WilsonInterval,
    confusion_matrix,
    wilson_interval,
)


@dataclass(frozen=True)
class ChanceCorrected:
    """A chance-corrected agreement coefficient with its interval (see :func:`cohens_kappa`)."""

    name: str
    value: float
    chance: float
    """The agreement expected by chance, p_e."""
    standard_error: float
    confidence: float
    low: float
    high: float


def _chance_corrected(name: str, pairs: Sequence[tuple[bool, bool]], chance: float,
                      chance_of_item: Sequence[float], confidence: float) -> ChanceCorrected | None:
    """(p_a - p_e)/(1 - p_e), with Gwet's linearised variance over the n items::

        c*_i = (a_i - p_e)/(1 - p_e) - 2 (1 - c) (e_i - p_e)/(1 - p_e)
        Var(c) = sum_i (c*_i - c)² / (n (n - 1))

    a_i is 1 when the two agree on item i, e_i the item's share of chance agreement; the
    interval is c ± t(n-1) x SE, kept within [-1, 1] (as irrCAC's R package). When every
    pair agrees (or every pair disagrees), each c*_i equals c and the variance is 0: the
    interval is the point, as in irrCAC. Reference: K. L. Gwet, Handbook of Inter-Rater Reliability,
    4th ed. (2014), ch. 5; the same as the ``irrCAC`` package. ``None`` when p_e = 1 (both
    gave one answer throughout: agreement beyond chance is undefined).
    """
    n = len(pairs)
    if chance >= 1:
        return None
    agreed = [float(judge == person) for judge, person in pairs]
    value = (sum(agreed) / n - chance) / (1 - chance)
    linearised = [(a - chance) / (1 - chance) - 2 * (1 - value) * (e - chance) / (1 - chance)
                  for a, e in zip(agreed, chance_of_item, strict=True)]
    error = math.sqrt(sum((c - value) ** 2 for c in linearised) / (n * (n - 1)))
    half = float(student_t.ppf(0.5 + confidence / 2, n - 1)) * error
    return ChanceCorrected(name, value, chance, error, confidence, max(-1.0, value - half),
                           min(1.0, value + half))


def cohens_kappa(pairs: Sequence[tuple[bool, bool]],
                 confidence: float = 0.95) -> ChanceCorrected | None:
    """Cohen's kappa of (judge, person) verdicts: p_e = sum_k pJ_k pP_k, the product of the
    two raters' own shares of each answer; item i's chance share is
    e_i = (pP[judge's answer on i] + pJ[person's answer on i]) / 2.
    Reference: J. Cohen, "A coefficient of agreement for nominal scales", Educational and
    Psychological Measurement 20 (1960). Example: 40 pairs, 15 both pass, 15 both fail and
    5 disagreements each way: p_a = 0.75, p_e = 0.5, kappa = 0.5. ``None`` below two pairs
    or when p_e = 1."""
    if len(pairs) < 2:
        return None
    judge = sum(j for j, _ in pairs) / len(pairs)
    person = sum(p for _, p in pairs) / len(pairs)
    share = {True: (judge, person), False: (1 - judge, 1 - person)}
    chance = judge * person + (1 - judge) * (1 - person)
    of_item = [(share[j][1] + share[p][0]) / 2 for j, p in pairs]
    return _chance_corrected("Cohen's kappa", pairs, chance, of_item, confidence)


def gwets_ac1(pairs: Sequence[tuple[bool, bool]],
              confidence: float = 0.95) -> ChanceCorrected | None:
    """Gwet's AC1: with pi the mean of the two raters' pass shares, p_e = 2 pi (1 - pi), and
    item i's chance share e_i = ((1 - pi[judge's answer]) + (1 - pi[person's answer])) / 2,
    where pi[pass] = pi and pi[fail] = 1 - pi. Unlike kappa it does not collapse when nearly
    every entry passes (kappa's paradox). Reference: K. L. Gwet, "Computing inter-rater
    reliability and its variance in the presence of high agreement", British Journal of
    Mathematical and Statistical Psychology 61 (2008). ``None`` below two pairs."""
    if len(pairs) < 2:
        return None
    pi = sum(j + p for j, p in pairs) / (2 * len(pairs))
    share = {True: pi, False: 1 - pi}
    of_item = [((1 - share[j]) + (1 - share[p])) / 2 for j, p in pairs]
    return _chance_corrected("Gwet's AC1", pairs, 2 * pi * (1 - pi), of_item, confidence)


@dataclass(frozen=True)
class Agreement:
    """How a scorer's verdicts agree with people's labels on the same entries.

    ``tpr`` (sensitivity) is the share of the entries people passed that the judge passed,
    ``tnr`` (specificity) the share of those people failed that the judge failed, ``precision``
    the share of the judge's passes people also passed; each a Wilson interval, ``None`` when
    its denominator is empty. ``prevalence`` is the share people passed.
    """

    confusion: ConfusionMatrix
    tpr: WilsonInterval | None
    tnr: WilsonInterval | None
    precision: WilsonInterval | None
    kappa: ChanceCorrected | None
    ac1: ChanceCorrected | None

    @property
    def labels(self) -> int:
        return self.confusion.n

    @property
    def prevalence(self) -> float | None:
        """The share of labelled entries people passed, (TP + FN)/n."""
        c = self.confusion
        return (c.tp + c.fn) / c.n if c.n else None


def agreement(pairs: Sequence[tuple[bool, bool]], confidence: float = 0.95) -> Agreement:
    """Agreement of (judge verdict, person's label) pairs, each True for pass."""
    c = confusion_matrix([j for j, _ in pairs], [p for _, p in pairs])

    def rate(hits: int, n: int) -> WilsonInterval | None:
        return wilson_interval(hits, n, confidence) if n else None

    return Agreement(c, rate(c.tp, c.tp + c.fn), rate(c.tn, c.tn + c.fp),
                     rate(c.tp, c.tp + c.fp), cohens_kappa(pairs, confidence),
                     gwets_ac1(pairs, confidence))
