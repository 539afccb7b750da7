"""Intervals for contrasts between two systems over replicates (seeds/004).

Write D_ri for system-minus-reference score on shared item i in replicate r, and
A_r = mean_i D_ri for the n independent replicates. The estimator of the contrast is the
equally weighted mean of the A_r.

* The replicate-mean Student-t interval: mean(A) +- t_{1-alpha/(2K), n-1} s_A / sqrt(n), with a
  Bonferroni correction over K contrasts. It carries the held-out randomness already present
  in each A_r without resampling inside rows. Exact validity needs independent, normal A_r.
* The whole-replicate percentile bootstrap resamples the n rows; its variance is v_A/n
  (population-denominator v_A), which the factor (n-1)/n makes too small at small n.
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
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t


@dataclass(frozen=True)
class ContrastInterval:
    estimate: float
    low: float
    high: float
    n: int
    confidence: float
    """Per-contrast confidence after the Bonferroni correction."""
    method: str


def bonferroni_tail(familywise_alpha: float, contrasts: int) -> float:
    """The tail probability of each endpoint: alpha / (2K)."""
    if contrasts < 1 or not 0 < familywise_alpha < 1:
        raise ValueError("need K >= 1 contrasts and 0 < alpha < 1")
    return familywise_alpha / (2 * contrasts)


def replicate_mean_t_interval(a: Sequence[float], contrasts: int = 1,
                              familywise_alpha: float = 0.05) -> ContrastInterval:
    """mean(A) +- t_{1 - alpha/(2K), n-1} * s_A / sqrt(n)."""
    n = len(a)
    if n < 2:
        raise ValueError("a t interval needs at least two replicates")
    tail = bonferroni_tail(familywise_alpha, contrasts)
    mean = statistics.fmean(a)
    half = float(student_t.ppf(1 - tail, n - 1)) * statistics.stdev(a) / math.sqrt(n)
    return ContrastInterval(mean, mean - half, mean + half, n, 1 - 2 * tail,
                            "replicate-mean t")


def whole_replicate_bootstrap(a: Sequence[float], contrasts: int = 1,
                              familywise_alpha: float = 0.05, draws: int = 2000,
                              seed: int = 0) -> ContrastInterval:
    """Percentile interval of the mean over ``draws`` resamples of whole replicates."""
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
    n x m matrix: v_A/n + mean(v_r)/(n m), variances with population denominators."""
    matrix = np.asarray(d, dtype=float)
    n, m = matrix.shape
    v_a = float(matrix.mean(axis=1).var())
    v_r = float(matrix.var(axis=1).mean())
    return v_a / n + v_r / (n * m)


def whole_replicate_bootstrap_variance(d: Sequence[Sequence[float]]) -> float:
    """Conditional variance of the grand mean when only whole rows are resampled: v_A/n."""
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
    """n = max(2, ceil((z SD / w)^2)): a known-SD planning figure, not a power calculation;
    a t interval with an estimated SD is generally wider."""
    if sd < 0 or half_width <= 0:
        raise ValueError("need SD >= 0 and a positive half-width")
    return max(2, math.ceil((z_for(contrasts, familywise_alpha) * sd / half_width) ** 2))
