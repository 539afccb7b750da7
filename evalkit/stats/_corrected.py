"""Accuracy corrected for the judge's errors, from people's labels on some of the entries.

The judge (any automatic scorer) gives a verdict f_i on every one of N entries; people give a
label Y_i (1 for pass) on n of them. The raw accuracy, the mean of f, is biased by the
judge's errors; the labels alone are unbiased but few. Each estimator below combines the two
into an unbiased estimate of the accuracy people would give, with an interval that counts
both the labels and the entries. Each returns a :class:`CorrectedAccuracy`. These are the
estimators alone: which labels enter them (those on drawn entries), turned into strata, is
decided in ``stats/_judge.py`` (:func:`check_judge`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from evalkit.stats._one_run import two_sided_z, wilson_bounds

MIN_LABELS_PER_CLASS = 10
"""Labels among each of the judge's verdicts (its passes, its failures; every entry of a
verdict that has fewer) below which no corrected accuracy is given: the judge's error rate
on that verdict is then a guess (:func:`labels_missing`; coverage with it:
``benchmarks/judge_coverage.py``)."""


@dataclass(frozen=True)
class CorrectedAccuracy:
    """An accuracy corrected for the judge, with a normal interval ``estimate ± z x SE``."""

    method: str
    estimate: float
    standard_error: float
    confidence: float
    low: float
    high: float
    labels: int
    entries: int
    power_tuning: float | None = None
    """PPI++'s lambda: 0 ignores the judge, 1 is plain PPI."""


def ppi_mean(labels: Sequence[float], judged: Sequence[float], judged_unlabelled: Sequence[float],
             confidence: float = 0.95) -> CorrectedAccuracy:
    """PPI++ for a mean from a simple random sample of labels.

    ``labels`` Y and ``judged`` f are the person's and the judge's verdicts on the n labelled
    entries, ``judged_unlabelled`` f~ the judge's on the other N.

    Notes
    -----
    With lambda power-tuned::

        lambda = [(1/n) sum (Y - Ybar)(f - fbar)] / [(1 + n/N) s²(f, f~)]   clipped to [0, 1]
        theta  = lambda mean(f~) + mean(Y - lambda f)
        SE²    = lambda² var(f~)/N + var(Y - lambda f)/n

    (s² with n + N - 1 in the denominator over all n + N verdicts, var with N or n). A judge
    that agrees with people lets lambda near 1 borrow the N verdicts; one that does not
    gives lambda near 0, the labels' own mean. A judge with one verdict throughout carries
    no information: lambda = 0. Equal to ``ppi_py.ppi_mean_ci`` (which defaults to 90%: pass
    ``alpha=1 - confidence``).

    References
    ----------
    A. N. Angelopoulos, S. Bates, C. Fannjiang, M. I. Jordan, T. Zrnic, "Prediction-powered
    inference", Science 382 (2023), 669-674. A. N. Angelopoulos, J. C. Duchi, T. Zrnic,
    "PPI++: Efficient prediction-powered inference", arXiv:2311.01453 (2023): the mean
    estimator with power tuning.

    Examples
    --------
    Ten labelled entries, the judge wrong on one of them, and 30 entries the judge alone
    scored:

    >>> from evalkit.stats import ppi_mean
    >>> people = [1, 1, 1, 0, 1, 1, 0, 1, 1, 1]
    >>> judge = [1, 1, 1, 0, 1, 1, 1, 1, 1, 1]
    >>> c = ppi_mean(people, judge, [1] * 24 + [0] * 6)
    >>> print(f"{c.estimate:.4f} {c.standard_error:.4f} {c.low:.3f} {c.high:.3f}")
    0.7595 0.1090 0.546 0.973
    >>> print(f"lambda = {c.power_tuning:.4f}")
    lambda = 0.4052
    """
    y, f = np.asarray(labels, dtype=float), np.asarray(judged, dtype=float)
    rest = np.asarray(judged_unlabelled, dtype=float)
    n, big_n = y.size, rest.size
    if n < 2 or f.size != n or big_n < 1:
        raise ValueError("PPI needs two or more labels, a verdict for each, and unlabelled "
                         "entries")
    spread = float(np.concatenate([f, rest]).var(ddof=1))
    covariance = float(np.cov(y, f, ddof=0)[0, 1])
    tuning = min(1.0, max(0.0, covariance / ((1 + n / big_n) * spread))) if spread else 0.0
    estimate = tuning * float(rest.mean()) + float((y - tuning * f).mean())
    error = math.sqrt(tuning ** 2 * float(rest.var()) / big_n + float((y - tuning * f).var()) / n)
    half = two_sided_z(confidence) * error
    return CorrectedAccuracy("PPI++", estimate, error, confidence, estimate - half,
                             estimate + half, n, n + big_n, tuning)


@dataclass(frozen=True)
class Stratum:
    """The entries the judge gave one verdict, and the labels drawn among them at random
    (True: the label makes the entry correct).

    >>> s = Stratum(entries=40, labels=(True,) * 9 + (False,))
    >>> print(f"{s.share:.3f} {s.smoothed_spread:.4f}")
    0.900 0.1178
    """

    entries: int
    labels: Sequence[bool]

    @property
    def share(self) -> float:
        """p_h: the share of its labels that pass; 1/2 before any label."""
        return sum(self.labels) / len(self.labels) if self.labels else 0.5

    @property
    def smoothed_spread(self) -> float:
        """p~_h (1 - p~_h) with p~_h = (x_h + 1/2)/(n_h + 1): never 0, even when every label
        agrees."""
        smoothed = (sum(self.labels) + 0.5) / (len(self.labels) + 1)
        return smoothed * (1 - smoothed)


def labels_missing(strata: Mapping[bool, Stratum]) -> dict[bool, int]:
    """Verdict -> labels still needed before a correction is given: each verdict with
    entries needs ``min(N_h, MIN_LABELS_PER_CLASS)`` labels.

    Notes
    -----
    missing_h = max(0, min(N_h, 10) - n_h) for each verdict h with N_h > 0 entries and n_h
    labels; ten per stratum keeps the estimate of the judge's error on each verdict from
    resting on a handful of labels (coverage measured by ``benchmarks/judge_coverage.py``).

    References
    ----------
    W. G. Cochran, *Sampling Techniques*, 3rd ed. (1977), 5.9 (a stratum's variance is
    estimated from its own sample, which needs at least two units; evalkit asks ten).

    Examples
    --------
    >>> from evalkit.stats import Stratum, labels_missing
    >>> labels_missing({True: Stratum(40, (True,) * 4), False: Stratum(3, ())})
    {True: 6, False: 3}
    """
    return {h: max(0, min(s.entries, MIN_LABELS_PER_CLASS) - len(s.labels))
            for h, s in strata.items() if s.entries}


def _weighted(drawn: Mapping[bool, Stratum]) -> tuple[dict[bool, float], float, float]:
    """W_h = N_h/N, theta = sum_h W_h p_h and the entries' part of the variance,
    sum_h W_h (p_h - theta)²/N, over the strata with entries."""
    total = sum(s.entries for s in drawn.values())
    weight = {h: s.entries / total for h, s in drawn.items()}
    theta = sum(weight[h] * s.share for h, s in drawn.items())
    return weight, theta, sum(weight[h] * (s.share - theta) ** 2
                              for h, s in drawn.items()) / total


def stratified_ppi_mean(strata: Mapping[bool, Stratum],
                        confidence: float = 0.95) -> CorrectedAccuracy | None:
    """PPI for labels drawn at random within the judge's passes and within its failures.

    ``None`` when a stratum with entries has fewer than two labels, or none for a stratum of
    one entry (labelled, it is known whole: :func:`labels_missing` promises a correction then).

    Notes
    -----
    Entry i of stratum h is drawn with probability n_h/N_h. With W_h = N_h/N, x_h of the
    stratum's n_h labels passes, p_h = x_h/n_h and p~_h = (x_h + 1/2)/(n_h + 1)::

        theta = sum_h W_h p_h
        V     = sum_h W_h² p~_h(1 - p~_h)/n_h + sum_h W_h (p_h - theta)²/N
        interval: Wilson at the effective sample size theta(1 - theta)/V

    The first term of V is the labels' noise, the second the entries' (the strata's sizes are
    themselves a sample of N). The judge's verdict is constant within a stratum, so PPI++'s
    lambda has nothing to tune: every lambda gives this estimate. Stratifying by the verdict
    gives the rarer verdict labels a simple random sample would seldom reach. A stratum whose
    labels all agree (p_h = 0 or 1) is common with a good judge; p~_h keeps its noise from
    counting as none, and Wilson keeps the interval's coverage near 0 and 1, as for the
    replicates' effective-n interval. Measured coverage: ``benchmarks/judge_coverage.py``.

    References
    ----------
    A. Fisch, J. Maynez, R. A. Hofer, B. Dhingra, A. Globerson, W. W. Cohen, "Stratified
    prediction-powered inference for hybrid language model evaluation", NeurIPS 2024.
    W. G. Cochran, *Sampling Techniques*, 3rd ed. (1977), 5.9. E. L. Korn, B. I. Graubard,
    "Confidence intervals for proportions with small expected number of positive counts
    estimated from survey data", Survey Methodology 24 (1998), 193-201.

    Examples
    --------
    The judge passed 80 entries and failed 20; people labelled 10 of each, finding the judge
    right on 9 of its passes and 7 of its failures:

    >>> from evalkit.stats import Stratum, stratified_ppi_mean
    >>> c = stratified_ppi_mean({True: Stratum(80, (True,) * 9 + (False,)),
    ...                          False: Stratum(20, (True,) * 7 + (False,) * 3)})
    >>> print(f"{c.estimate:.3f} {c.standard_error:.4f} {c.low:.3f} {c.high:.3f}")
    0.860 0.0920 0.606 0.961
    """
    total = sum(s.entries for s in strata.values())
    drawn = {h: s for h, s in strata.items() if s.entries}
    if total == 0 or any(len(s.labels) < min(2, s.entries) for s in drawn.values()):
        return None
    weight, estimate, variance = _weighted(drawn)
    variance += sum(weight[h] ** 2 * s.smoothed_spread / len(s.labels) for h, s in drawn.items())
    labels = sum(len(s.labels) for s in strata.values())
    # all labels on one side: no share to divide by; the labels' own count, as Korn-Graubard
    effective = estimate * (1 - estimate) / variance if 0 < estimate < 1 else labels
    low, high = wilson_bounds(estimate, effective, confidence)
    return CorrectedAccuracy("stratified PPI", estimate, math.sqrt(variance), confidence, low,
                             high, labels, total)


def rogan_gladen(passed: int, entries: int, sensitivity: tuple[float, float],
                 specificity: tuple[float, float],
                 confidence: float = 0.95) -> CorrectedAccuracy | None:
    """Rogan-Gladen: the judge's pass rate AP corrected by its measured sensitivity Se
    (``(judge passes, labels that pass)``) and specificity Sp (``(judge failures, labels
    that fail)``), with the adjusted interval of Lang and Reiczigel.

    ``None`` when Se + Sp <= 1 (a judge no better than chance corrects nothing) or a rate
    has no labels. The label counts may be weighted (a stratified draw's labels count
    N_h/n_h each, scaled to sum to the labels given).

    Notes
    -----
    With x of the N entries passed by the judge (AP = x/N), and Se = x_Se/n_Se and
    Sp = x_Sp/n_Sp measured on the labels::

        theta = (AP + Sp - 1) / (Se + Sp - 1)
        Se' = (x_Se + 1)/(n_Se + 2),  Sp' likewise,  n' = n + 2 for both
        AP' = (x + z²/2)/(N + z²),  N' = N + z²,  theta' from the primed values
        V   = [AP'(1-AP')/N' + theta'² Se'(1-Se')/n_Se' + (1-theta')² Sp'(1-Sp')/n_Sp']
              / (Se' + Sp' - 1)²
        interval = theta' + 2 z² [theta' Se'(1-Se')/n_Se' - (1-theta') Sp'(1-Sp')/n_Sp']
                   ± z sqrt(V),  clipped to [0, 1]

    The estimate is clipped to [0, 1].

    References
    ----------
    W. J. Rogan, B. Gladen, "Estimating prevalence from the results of a screening test",
    American Journal of Epidemiology 107 (1978), 71-76. Z. Lang, J. Reiczigel, "Confidence
    limits for prevalence of disease adjusted for estimated sensitivity and specificity",
    Preventive Veterinary Medicine 113 (2014), 13-22, eqs. 2-17.

    Examples
    --------
    The judge passed 70 of 100 entries; on labelled entries it passed 18 of 20 that should
    pass and failed 8 of 10 that should fail:

    >>> from evalkit.stats import rogan_gladen
    >>> c = rogan_gladen(70, 100, sensitivity=(18, 20), specificity=(8, 10))
    >>> print(f"{c.estimate:.4f} {c.low:.3f} {c.high:.3f}")
    0.7143 0.469 0.966
    """
    (se_hits, se_n), (sp_hits, sp_n) = sensitivity, specificity
    if entries <= 0 or se_n <= 0 or sp_n <= 0 or se_hits / se_n + sp_hits / sp_n <= 1:
        return None
    z2 = two_sided_z(confidence) ** 2
    apparent, se, sp = passed / entries, se_hits / se_n, sp_hits / sp_n
    estimate = min(1.0, max(0.0, (apparent + sp - 1) / (se + sp - 1)))
    se_, sp_ = (se_hits + 1) / (se_n + 2), (sp_hits + 1) / (sp_n + 2)
    ap_, n_ = (passed + z2 / 2) / (entries + z2), entries + z2
    theta = (ap_ + sp_ - 1) / (se_ + sp_ - 1)
    se_term, sp_term = se_ * (1 - se_) / (se_n + 2), sp_ * (1 - sp_) / (sp_n + 2)
    variance = (ap_ * (1 - ap_) / n_ + theta ** 2 * se_term
                + (1 - theta) ** 2 * sp_term) / (se_ + sp_ - 1) ** 2
    centre = theta + 2 * z2 * (theta * se_term - (1 - theta) * sp_term)
    half = math.sqrt(z2 * variance)
    return CorrectedAccuracy("Rogan-Gladen (Lang-Reiczigel interval)", estimate,
                             math.sqrt(variance), confidence, max(0.0, centre - half),
                             min(1.0, centre + half), round(se_n + sp_n), entries)


@dataclass(frozen=True)
class LabelBudget:
    """How many labels, per judge verdict, bring the stratified interval to a half-width."""

    half_width: float
    confidence: float
    needed: Mapping[bool, int]
    """Verdict -> labels needed in all (at least ``MIN_LABELS_PER_CLASS`` where it has
    entries), the ones already given included."""
    more: int
    """Labels still to give."""

    @property
    def total(self) -> int:
        return sum(self.needed.values())


def labels_for_half_width(strata: Mapping[bool, Stratum], half_width: float,
                          confidence: float = 0.95) -> LabelBudget | None:
    """Labels for a stratified interval of ``half_width``, allocated where they count most.

    ``None`` when V* <= F or some n_h > N_h: the entries, not the labels, hold the interval
    wider than asked (more entries are needed).

    Notes
    -----
    With the shares measured so far (smoothed as in :func:`stratified_ppi_mean`,
    sigma_h = sqrt(p~_h (1 - p~_h)); a stratum without labels counts as p~ = 1/2), the target
    variance V* = (half_width / z)² and the entries' part F = sum_h W_h (p_h - theta)²/N,
    Neyman allocation (n_h proportional to W_h sigma_h) needs::

        n = (sum_h W_h sigma_h)² / (V* - F),   n_h = n W_h sigma_h / sum_h W_h sigma_h

    each rounded up and at least ``MIN_LABELS_PER_CLASS`` (or all N_h).

    References
    ----------
    J. Neyman, "On the two different aspects of the representative method: the method of
    stratified sampling and the method of purposive selection", Journal of the Royal
    Statistical Society 97 (1934), 558-625. W. G. Cochran, *Sampling Techniques*, 3rd ed.
    (1977), 5.5.

    Examples
    --------
    >>> from evalkit.stats import Stratum, labels_for_half_width
    >>> strata = {True: Stratum(800, (True,) * 9 + (False,)),
    ...           False: Stratum(200, (True,) * 7 + (False,) * 3)}
    >>> budget = labels_for_half_width(strata, 0.05)
    >>> budget.needed, budget.more
    ({True: 157, False: 54}, 191)
    """
    drawn = {h: s for h, s in strata.items() if s.entries}
    if not drawn:
        return None
    weight, _, floor = _weighted(drawn)
    target = (half_width / two_sided_z(confidence)) ** 2
    if target <= floor:
        return None
    spread = {h: weight[h] * math.sqrt(s.smoothed_spread) for h, s in drawn.items()}
    n = sum(spread.values()) ** 2 / (target - floor)
    wanted = {h: math.ceil(n * spread[h] / sum(spread.values())) for h in drawn}
    if any(wanted[h] > s.entries for h, s in drawn.items()):
        return None
    needed = {h: min(s.entries, max(MIN_LABELS_PER_CLASS, wanted[h]))
              for h, s in drawn.items()}
    more = sum(max(0, needed[h] - len(s.labels)) for h, s in drawn.items())
    return LabelBudget(half_width, confidence, needed, more)
