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
    """Cohen's kappa of (judge, person) verdicts, with its interval.

    ``None`` below two pairs or when p_e = 1.

    Notes
    -----
    With p_a the share of pairs that agree and pJ_k, pP_k the judge's and the person's own
    shares of answer k::

        p_e   = sum_k pJ_k pP_k
        kappa = (p_a - p_e) / (1 - p_e)

    The interval is Gwet's linearised one (see ``_chance_corrected``), with item i's chance
    share e_i = (pP[judge's answer on i] + pJ[person's answer on i]) / 2.

    References
    ----------
    J. Cohen, "A coefficient of agreement for nominal scales", Educational and Psychological
    Measurement 20 (1960), 37-46. K. L. Gwet, *Handbook of Inter-Rater Reliability*, 4th ed.
    (2014), ch. 5 (the variance).

    Examples
    --------
    40 pairs: 15 both pass, 15 both fail and 5 disagreements each way, so p_a = 0.75 and
    p_e = 0.5:

    >>> from evalkit.stats import cohens_kappa
    >>> pairs = ([(True, True)] * 15 + [(False, False)] * 15 + [(True, False)] * 5
    ...          + [(False, True)] * 5)
    >>> k = cohens_kappa(pairs)
    >>> print(f"{k.value:.3f} {k.chance:.3f} {k.standard_error:.4f} {k.low:.3f} {k.high:.3f}")
    0.500 0.500 0.1387 0.220 0.780
    """
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
    """Gwet's AC1 of (judge, person) verdicts, with its interval.

    Unlike kappa it does not collapse when nearly every entry passes (kappa's paradox).
    ``None`` below two pairs.

    Notes
    -----
    With pi the mean of the two raters' pass shares and p_a the share of pairs that agree::

        p_e = 2 pi (1 - pi)
        AC1 = (p_a - p_e) / (1 - p_e)

    and item i's chance share e_i = ((1 - pi[judge's answer]) + (1 - pi[person's answer]))/2,
    where pi[pass] = pi and pi[fail] = 1 - pi, for the linearised variance.

    References
    ----------
    K. L. Gwet, "Computing inter-rater reliability and its variance in the presence of high
    agreement", British Journal of Mathematical and Statistical Psychology 61 (2008), 29-48.

    Examples
    --------
    A judge and a person who agree on 36 of 40 entries, nearly all passing: kappa is low,
    AC1 is not.

    >>> from evalkit.stats import cohens_kappa, gwets_ac1
    >>> pairs = [(True, True)] * 35 + [(False, False)] + [(True, False)] * 2 + [(False, True)] * 2
    >>> print(f"{cohens_kappa(pairs).value:.3f} {gwets_ac1(pairs).value:.3f}")
    0.279 0.884
    >>> a = gwets_ac1(pairs)
    >>> print(f"{a.chance:.4f} {a.standard_error:.4f} {a.low:.3f} {a.high:.3f}")
    0.1387 0.0612 0.760 1.000
    """
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
    """Agreement of (judge verdict, person's label) pairs, each True for pass.

    Notes
    -----
    With the person's label as the truth::

        TPR (sensitivity) = TP / (TP + FN)
        TNR (specificity) = TN / (TN + FP)
        precision         = TP / (TP + FP)

    each with its Wilson interval (:func:`wilson_interval`), beside Cohen's kappa
    (:func:`cohens_kappa`) and Gwet's AC1 (:func:`gwets_ac1`).

    References
    ----------
    J. Yerushalmy, "Statistical problems in assessing methods of medical diagnosis", Public
    Health Reports 62 (1947), 1432-1449 (sensitivity and specificity); E. B. Wilson (1927)
    for the intervals.

    Examples
    --------
    >>> from evalkit.stats import agreement
    >>> a = agreement([(True, True)] * 8 + [(True, False)] + [(False, False)] * 3)
    >>> print(a.labels, f"{a.tpr.low:.3f}", f"{a.tnr.successes}/{a.tnr.n}",
    ...       f"{a.precision.successes}/{a.precision.n}", f"{a.prevalence:.3f}")
    12 0.676 3/4 8/9 0.667
    """
    c = confusion_matrix([j for j, _ in pairs], [p for _, p in pairs])

    def rate(hits: int, n: int) -> WilsonInterval | None:
        return wilson_interval(hits, n, confidence) if n else None

    return Agreement(c, rate(c.tp, c.tp + c.fn), rate(c.tn, c.tn + c.fp),
                     rate(c.tp, c.tp + c.fp), cohens_kappa(pairs, confidence),
                     gwets_ac1(pairs, confidence))
