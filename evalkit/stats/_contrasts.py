"""Intervals for contrasts between two systems over replicates (seeds/004).

Write D_ri for system-minus-reference score on shared item i in replicate r, and
A_r = mean_i D_ri for the n independent replicates. The estimator of the contrast is the
equally weighted mean of the A_r.

* The replicate-mean Student-t interval: mean(A) +- t_{1-alpha/(2K), n-1} s_A / sqrt(n), with a
  Bonferroni correction over K contrasts. It carries the held-out randomness already present
  in each A_r without resampling inside rows. Exact validity needs independent, normal A_r.
  It covers the difference *on the evaluated item set*: the items are held fixed, so item
  effects that would move the difference on other items drawn from the same population are
  not in its width (with item effects as large as the call noise it covers the population
  difference far less often than 95%; see benchmarks/contrast_coverage.py).
* The items-and-replicates t interval, for claims about the population of items: with
  d_i = mean_r D_ri (item i averaged over replicates) and A_r as above,
  mean(D) +- sqrt(t_{1-alpha/(2K), m-1}^2 s_d^2/m + t_{1-alpha/(2K), n-1}^2 s_A^2/n).
  s_d^2/m + s_A^2/n is the variance of a grand mean in a crossed items x replicates design
  with both factors random (A. B. Owen, "The pigeonhole bootstrap", Ann. Appl. Stat. 1(2),
  2007, sec. 2): s_d^2/m carries item sampling, s_A^2/n shared per-replicate noise; the
  residual call noise is counted in both terms, so it errs wide, never narrow. Each part is
  scaled by the t quantile of its own degrees of freedom (D. P. Banerjee, "On confidence
  interval for two-means problem based on separate estimates of variances and tabulated
  values of t-table", Sankhya A 22, 1960), which keeps the coverage at least the nominal
  level whatever the two variances. A single Welch-Satterthwaite t for the sum covered the
  population difference only 0.90 of the time with 2 replicates when every replicate shares
  a shift: its degrees of freedom come out large exactly when s_A^2 happens to be estimated
  small. The price is width with 2 replicates (t_1 = 12.7 at 95%): two replicates say little
  about a shift they share (benchmarks/contrast_coverage.py).
* The whole-replicate percentile bootstrap resamples the n rows; its variance is v_A/n
  (population-denominator v_A), which the factor (n-1)/n makes too small at small n: its
  coverage at nominal 95% is only about 0.75 at n = 3 and 0.84 at n = 5
  (:data:`WHOLE_REPLICATE_BOOTSTRAP_COVERAGE`), so it is shown with that label and never
  decides anything.
* The nested bootstrap also resamples the m items inside every chosen row; conditional on
  the matrix its variance is v_A/n + mean(v_r)/(n m): it counts the within-row noise that is
  already inside A_r a second time, towards twice the true variance when that noise
  dominates.
* Planning: the replicates needed for a half-width w at an assumed SD of A_r,
  n = max(2, ceil((z SD / w)^2)), z = Phi^-1(1 - alpha/(2K)) (about 2.690 for K = 7 at 0.05).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

WHOLE_REPLICATE_BOOTSTRAP_COVERAGE: Mapping[int, float] = MappingProxyType({
    2: 0.50, 3: 0.75, 4: 0.80, 5: 0.84, 6: 0.86, 8: 0.89, 10: 0.91})
"""Measured coverage of the 95% whole-replicate percentile bootstrap by replicates n (normal
A_r, 10,000 simulated series each, 2,000 draws): ``python benchmarks/contrast_coverage.py``."""


def bootstrap_coverage(n: int) -> float | None:
    """The measured coverage of the whole-replicate bootstrap at ``n`` replicates (the nearest
    tabulated n at or below it), ``None`` beyond the table's reach below 2.

    Notes
    -----
    A lookup in :data:`WHOLE_REPLICATE_BOOTSTRAP_COVERAGE`, measured by simulation; the
    shortfall follows from the bootstrap's variance v_A/n against the true s_A²/n, a factor
    (n - 1)/n (seeds/004).

    References
    ----------
    seeds/004, "RP002A uncertainty and replicate-count design review" (whole-cluster
    bootstrap underestimates variance at small n); ``benchmarks/contrast_coverage.py``.

    Examples
    --------
    >>> from evalkit.stats import bootstrap_coverage
    >>> bootstrap_coverage(3), bootstrap_coverage(7), bootstrap_coverage(1)
    (0.75, 0.86, None)
    """
    known = [k for k in WHOLE_REPLICATE_BOOTSTRAP_COVERAGE if k <= n]
    return WHOLE_REPLICATE_BOOTSTRAP_COVERAGE[max(known)] if known else None


@dataclass(frozen=True)
class ContrastInterval:
    """An interval for the difference between two systems (see the module docstring)."""

    estimate: float
    low: float
    high: float
    n: int
    confidence: float
    """Per-contrast confidence after the Bonferroni correction."""
    method: str

    def to_json(self) -> dict[str, Any]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "n": self.n,
                "confidence": self.confidence, "method": self.method}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ContrastInterval:
        return cls(doc["estimate"], doc["low"], doc["high"], doc["n"], doc["confidence"],
                   doc["method"])


def bonferroni_tail(familywise_alpha: float, contrasts: int) -> float:
    """The tail probability of each endpoint: alpha / (2K)."""
    if contrasts < 1 or not 0 < familywise_alpha < 1:
        raise ValueError("need K >= 1 contrasts and 0 < alpha < 1")
    return familywise_alpha / (2 * contrasts)


def replicate_mean_t_interval(a: Sequence[float], contrasts: int = 1,
                              familywise_alpha: float = 0.05) -> ContrastInterval:
    """The replicate-mean Student-t interval for a contrast, Bonferroni-corrected over
    ``contrasts`` K.

    Notes
    -----
    With A_r the mean difference in replicate r and s_A their sample standard deviation::

        mean(A) +- t_{1 - alpha/(2K), n-1} * s_A / sqrt(n)

    References
    ----------
    seeds/004 (the paired replicate-mean t interval and the seven-contrast Bonferroni
    correction); NIST/SEMATECH *e-Handbook of Statistical Methods* (2012), 7.2.2.1
    (confidence limits for the mean); O. J. Dunn, "Multiple comparisons among means",
    Journal of the American Statistical Association 56 (1961), 52-64 (Bonferroni intervals).

    Examples
    --------
    >>> from evalkit.stats import replicate_mean_t_interval
    >>> ci = replicate_mean_t_interval([0.04, 0.06, 0.02, 0.05, 0.03])
    >>> print(f"{ci.estimate:.3f} {ci.low:.4f} {ci.high:.4f} {ci.confidence:.2f}")
    0.040 0.0204 0.0596 0.95
    >>> print(f"{replicate_mean_t_interval([0.04, 0.06, 0.02, 0.05, 0.03], 7).high:.4f}")
    0.0758
    """
    n = len(a)
    if n < 2:
        raise ValueError("a t interval needs at least two replicates")
    tail = bonferroni_tail(familywise_alpha, contrasts)
    mean = statistics.fmean(a)
    half = float(student_t.ppf(1 - tail, n - 1)) * statistics.stdev(a) / math.sqrt(n)
    return ContrastInterval(mean, mean - half, mean + half, n, 1 - 2 * tail,
                            "replicate-mean t")


def items_and_replicates_t_interval(d: Sequence[Sequence[float]], contrasts: int = 1,
                                   familywise_alpha: float = 0.05) -> ContrastInterval:
    """The interval for the population difference: rows are replicates, columns the shared
    items of a rectangular n x m matrix of differences D_ri.

    Notes
    -----
    With d_i = mean_r D_ri and A_r = mean_i D_ri::

        mean(D) +- sqrt(t_{1-alpha/(2K), m-1}² s_d²/m + t_{1-alpha/(2K), n-1}² s_A²/n)

    (the module docstring says why each part has its own t).

    References
    ----------
    A. B. Owen, "The pigeonhole bootstrap", Annals of Applied Statistics 1 (2007), 386-411,
    sec. 2. D. P. Banerjee, "On confidence interval for two-means problem based on separate
    estimates of variances and tabulated values of t-table", Sankhya A 22 (1960), 349-358.

    Examples
    --------
    >>> from evalkit.stats import items_and_replicates_t_interval
    >>> ci = items_and_replicates_t_interval([[0, 1, 0, 1], [1, 1, 0, 0], [0, 1, 1, 1]])
    >>> print(f"{ci.estimate:.4f} {ci.low:.3f} {ci.high:.3f}")
    0.5833 -0.038 1.205
    """
    matrix = np.asarray(d, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] < 2 or matrix.shape[1] < 2:
        raise ValueError("an items-and-replicates interval needs at least two replicates and "
                         "two items")
    n, m = matrix.shape
    tail = bonferroni_tail(familywise_alpha, contrasts)
    mean = float(matrix.mean())
    item_part = float(matrix.mean(axis=0).var(ddof=1)) / m
    replicate_part = float(matrix.mean(axis=1).var(ddof=1)) / n
    half = math.sqrt(float(student_t.ppf(1 - tail, m - 1)) ** 2 * item_part
                     + float(student_t.ppf(1 - tail, n - 1)) ** 2 * replicate_part)
    return ContrastInterval(mean, mean - half, mean + half, n, 1 - 2 * tail,
                            "items-and-replicates t")


def whole_replicate_bootstrap(a: Sequence[float], contrasts: int = 1,
                              familywise_alpha: float = 0.05, draws: int = 2000,
                              seed: int = 0) -> ContrastInterval:
    """Percentile interval of the mean over ``draws`` resamples of whole replicates.

    Notes
    -----
    Each draw resamples the n replicate means A_r with replacement (seeded by ``seed``); the
    interval is the alpha/(2K) and 1 - alpha/(2K) quantiles of the draws' means. Its
    conditional variance is v_A/n (:func:`whole_replicate_bootstrap_variance`), too small at
    small n: shown with its measured coverage (:func:`bootstrap_coverage`).

    References
    ----------
    B. Efron, R. J. Tibshirani, *An Introduction to the Bootstrap* (1993), ch. 13 (the
    percentile interval); seeds/004 (whole-cluster resampling over replicates).

    Examples
    --------
    >>> from evalkit.stats import whole_replicate_bootstrap
    >>> ci = whole_replicate_bootstrap([0.04, 0.06, 0.02, 0.05, 0.03])
    >>> print(f"{ci.estimate:.3f} {ci.low:.3f} {ci.high:.3f}")
    0.040 0.028 0.052
    """
    values = np.asarray(a, dtype=float)
    if values.size < 2:
        raise ValueError("a bootstrap needs at least two replicates")
    tail = bonferroni_tail(familywise_alpha, contrasts)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(draws, values.size))].mean(axis=1)
    low, high = np.quantile(means, [tail, 1 - tail])
    return ContrastInterval(float(values.mean()), float(low), float(high), int(values.size),
                            1 - 2 * tail, f"whole-replicate percentile bootstrap ({draws} draws)")


def nested_bootstrap_variance(d: Sequence[Sequence[float]]) -> float:
    """Conditional variance of the grand mean under the nested bootstrap of a rectangular
    n x m matrix: v_A/n + mean(v_r)/(n m), variances with population denominators.

    Notes
    -----
    v_A is the variance of the row means A_r, v_r the variance within row r. By the law of
    total variance, resampling n rows and then m items inside each chosen row gives
    v_A/n (the rows) plus mean(v_r)/(n m) (the items inside them), conditional on D.

    References
    ----------
    seeds/004, "Exact conditional resampling audit"; A. C. Davison, D. V. Hinkley,
    *Bootstrap Methods and their Application* (1997), 3.8 (resampling hierarchical data at
    both stages over-states the variance).

    Examples
    --------
    >>> from evalkit.stats import nested_bootstrap_variance
    >>> print(f"{nested_bootstrap_variance([[0, 1, 0, 1], [1, 1, 0, 0], [0, 1, 1, 1]]):.6f}")
    0.023727
    """
    matrix = np.asarray(d, dtype=float)
    n, m = matrix.shape
    v_a = float(matrix.mean(axis=1).var())
    v_r = float(matrix.var(axis=1).mean())
    return v_a / n + v_r / (n * m)


def whole_replicate_bootstrap_variance(d: Sequence[Sequence[float]]) -> float:
    """Conditional variance of the grand mean when only whole rows are resampled: v_A/n.

    Notes
    -----
    v_A = (1/n) sum_r (A_r - mean(A))², the population-denominator variance of the row means:
    the ideal whole-replicate bootstrap's variance, conditional on D.

    References
    ----------
    seeds/004, "Exact conditional resampling audit"; B. Efron, R. J. Tibshirani, *An
    Introduction to the Bootstrap* (1993), ch. 5 (the bootstrap estimate of a mean's
    standard error, sqrt(v/n) with the plug-in variance).

    Examples
    --------
    >>> from evalkit.stats import whole_replicate_bootstrap_variance
    >>> d = [[0, 1, 0, 1], [1, 1, 0, 0], [0, 1, 1, 1]]
    >>> print(f"{whole_replicate_bootstrap_variance(d):.6f}")
    0.004630
    """
    matrix = np.asarray(d, dtype=float)
    return float(matrix.mean(axis=1).var()) / matrix.shape[0]


def nested_to_true_variance_ratio(n: int, m: int, tau2: float, sigma2: float) -> float:
    """Expected nested-bootstrap variance over the true variance of the grand mean under the
    random-effects model D_ri = mu + U_r + e_ri (Var U = tau2, Var e = sigma2):
    (n-1)/n + ((m-1)/m) * (sigma2/m) / (tau2 + sigma2/m)."""
    within = sigma2 / m
    return (n - 1) / n + (m - 1) / m * within / (tau2 + within)


def z_for(contrasts: int, familywise_alpha: float = 0.05) -> float:
    """The normal quantile of each Bonferroni endpoint."""
    return float(norm.ppf(1 - bonferroni_tail(familywise_alpha, contrasts)))


def replicates_for_half_width(sd: float, half_width: float, contrasts: int = 1,
                              familywise_alpha: float = 0.05) -> int:
    """Replicates for an interval of half-width ``half_width`` at an assumed SD of A_r.

    Notes
    -----
    With w the half-width and K the contrasts::

        n = max(2, ceil((z SD / w)^2)),   z = Phi^-1(1 - alpha/(2K))

    A known-SD planning figure, not a power calculation; a t interval with an estimated SD
    is generally wider.

    References
    ----------
    seeds/004, "Replicate-count sensitivity" (z about 2.690 for K = 7 at alpha = 0.05).

    Examples
    --------
    >>> from evalkit.stats import replicates_for_half_width
    >>> replicates_for_half_width(0.02, 0.01), replicates_for_half_width(0.02, 0.01, 7)
    (16, 29)
    """
    if sd < 0 or half_width <= 0:
        raise ValueError("need SD >= 0 and a positive half-width")
    return max(2, math.ceil((z_for(contrasts, familywise_alpha) * sd / half_width) ** 2))
