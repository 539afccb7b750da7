"""Accuracy corrected for the judge's errors, from people's labels on some of the entries.

The judge (any automatic scorer) gives a verdict f_i on every one of N entries; people give a
label Y_i (1 for pass) on n of them. The raw accuracy, the mean of f, is biased by the
judge's errors; the labels alone are unbiased but few. Each estimator below combines the two
into an unbiased estimate of the accuracy people would give, with an interval that counts
both the labels and the entries. Each returns a :class:`CorrectedAccuracy`.
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
    entries, ``judged_unlabelled`` f~ the judge's on the other N. With lambda power-tuned::

        lambda = [(1/n) sum (Y - Ybar)(f - fbar)] / [(1 + n/N) s²(f, f~)]   clipped to [0, 1]
        theta  = lambda mean(f~) + mean(Y - lambda f)
        SE²    = lambda² var(f~)/N + var(Y - lambda f)/n

    (s² with n + N - 1 in the denominator over all n + N verdicts, var with N or n). A judge
    that agrees with people lets lambda near 1 borrow the N verdicts; one that does not
    gives lambda near 0, the labels' own mean. A judge with one verdict throughout carries
    no information: lambda = 0. Reference: A. N. Angelopoulos, J. C. Duchi, T. Zrnic,
    "PPI++: Efficient prediction-powered inference" (2024), the mean estimator; equal to
    ``ppi_py.ppi_mean_ci`` (which defaults to 90%: pass ``alpha=1 - confidence``).
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
    """The entries the judge gave one verdict, and the labels drawn among them at random."""

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
    entries needs ``min(N_h, MIN_LABELS_PER_CLASS)`` labels."""
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
    References: A. Fisch et al., "Stratified prediction-powered inference for hybrid language
    model evaluation" (NeurIPS 2024); W. G. Cochran, Sampling Techniques, 3rd ed. (1977), 5.9;
    E. L. Korn, B. I. Graubard, "Confidence intervals for proportions with small expected
    number of positive counts estimated from survey data", Survey Methodology 24 (1998).
    ``None`` when a stratum with entries has fewer than two labels, or none for a stratum of
    one entry (labelled, it is known whole: :func:`labels_missing` promises a correction then).
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
    that fail)``), with the adjusted interval of Lang and Reiczigel::

        theta = (AP + Sp - 1) / (Se + Sp - 1)
        Se' = (x_Se + 1)/(n_Se + 2),  Sp' likewise,  n' = n + 2 for both
        AP' = (x + z²/2)/(N + z²),  N' = N + z²,  theta' from the primed values
        V   = [AP'(1-AP')/N' + theta'² Se'(1-Se')/n_Se' + (1-theta')² Sp'(1-Sp')/n_Sp']
              / (Se' + Sp' - 1)²
        interval = theta' + 2 z² [theta' Se'(1-Se')/n_Se' - (1-theta') Sp'(1-Sp')/n_Sp']
                   ± z sqrt(V),  clipped to [0, 1]

    The estimate is clipped to [0, 1]. References: W. J. Rogan, B. Gladen, "Estimating
    prevalence from the results of a screening test", Am. J. Epidemiol. 107 (1978);
    Z. Lang, J. Reiczigel, "Confidence limits for prevalence of disease adjusted for
    estimated sensitivity and specificity", Prev. Vet. Med. 113 (2014), eqs. 2-17.
    ``None`` when Se + Sp <= 1 (a judge no better than chance corrects nothing) or a rate
    has no labels. The label counts may be weighted (a stratified draw's labels count
    N_h/n_h each, scaled to sum to the labels given).
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

    With the shares measured so far (smoothed as in :func:`stratified_ppi_mean`,
    sigma_h = sqrt(p~_h (1 - p~_h)); a stratum without labels counts as p~ = 1/2), the target
    variance V* = (half_width / z)² and the entries' part F = sum_h W_h (p_h - theta)²/N,
    Neyman allocation (n_h proportional to W_h sigma_h) needs::

        n = (sum_h W_h sigma_h)² / (V* - F),   n_h = n W_h sigma_h / sum_h W_h sigma_h

    each rounded up and at least ``MIN_LABELS_PER_CLASS`` (or all N_h). ``None`` when
    V* <= F or some n_h > N_h: the entries, not the labels, hold the interval wider than
    asked (more entries are needed). Reference: J. Neyman, "On the two different aspects of
    the representative method", JRSS 97 (1934); Cochran (1977), 5.5.
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
