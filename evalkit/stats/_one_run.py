"""Statistics of one run's binary scores: accuracy, confusion-matrix metrics, the Wilson
interval, and convergence.

Each function documents its formula and returns a frozen result object.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import binomtest, norm

STABLE_RECOMMENDATION = "Dataset appears sufficient for confident evaluation"
UNSTABLE_RECOMMENDATION = "Add more samples — metrics have not yet stabilized"
TOO_FEW_RECOMMENDATION = ("Too few samples to judge convergence (fewer than {minimum}): "
                          "add samples before trusting the rate")
STABILITY_TOLERANCE_PP = 2.0
STABILITY_WINDOW = 10
MIN_CONVERGENCE_SAMPLES = 10
"""Below this many samples the last-window test compares a handful of noisy prefixes (at n = 2
the Wilson interval of 2/2 is [0.34, 1]), so no verdict of sufficiency is given."""


@dataclass(frozen=True)
class WilsonInterval:
    """A Wilson score interval for a binomial proportion (:func:`wilson_interval`)."""

    successes: int
    n: int
    confidence: float
    low: float
    high: float


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> WilsonInterval:
    """Wilson score interval for ``successes`` out of ``n``.

    Notes
    -----
    With p = successes/n and z the two-sided normal quantile of ``confidence``::

        centre    = (p + z²/(2n)) / (1 + z²/n)
        halfwidth = z / (1 + z²/n) * sqrt(p(1-p)/n + z²/(4n²))

    Unlike the normal (Wald) interval it stays inside [0, 1] and keeps its coverage near 0
    and 1, which matters for small eval sets that mostly pass. Computed by
    ``scipy.stats.binomtest(...).proportion_ci(method="wilson")``.

    References
    ----------
    E. B. Wilson, "Probable inference, the law of succession, and statistical inference",
    Journal of the American Statistical Association 22 (1927), 209-212.

    Examples
    --------
    >>> from evalkit.stats import wilson_interval
    >>> ci = wilson_interval(22, 25)
    >>> print(f"{ci.low:.3f} {ci.high:.3f}")
    0.700 0.958
    """
    if n <= 0:
        raise ValueError("a Wilson interval needs at least one observation")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in [0, {n}], got {successes}")
    ci = binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    return WilsonInterval(successes, n, confidence, float(ci.low), float(ci.high))


def two_sided_z(confidence: float) -> float:
    """The normal quantile z with P(|Z| <= z) = ``confidence``.

    Notes
    -----
    z = Phi^-1(1/2 + confidence/2), Phi the standard normal distribution function
    (``scipy.stats.norm.ppf``).

    References
    ----------
    M. Abramowitz, I. A. Stegun, *Handbook of Mathematical Functions* (1964), 26.2.

    Examples
    --------
    >>> from evalkit.stats import two_sided_z
    >>> print(f"{two_sided_z(0.95):.6f} {two_sided_z(0.90):.6f}")
    1.959964 1.644854
    """
    return float(norm.ppf(0.5 + confidence / 2))


def wilson_bounds(p: float, n: float, confidence: float) -> tuple[float, float]:
    """The Wilson bounds of :func:`wilson_interval` for a share ``p`` at a sample size ``n``
    that need not be whole (an effective sample size: ``p (1 - p) / variance``), clamped to
    [0, 1] against rounding, 0 at p = 0 and 1 at p = 1 exactly.

    >>> print(*(f"{b:.3f}" for b in wilson_bounds(0.88, 25, 0.95)))
    0.700 0.958
    """
    z = two_sided_z(confidence)
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # at p = 0 (p = 1) the bound is 0 (1) exactly; centre - half would leave a rounding error
    low = 0.0 if p <= 0 else max(0.0, centre - half)
    high = 1.0 if p >= 1 else min(1.0, centre + half)
    return low, high


@dataclass(frozen=True)
class ConfusionMatrix:
    """Binary scores against expectations, score 1 being the positive class
    (:func:`confusion_matrix`).

    Every entry is expected to pass unless annotated ``expected_pass: false``; when none is
    annotated there are no negatives, so Recall = Accuracy and Precision = 1.
    A ratio whose denominator is empty is reported as 1.0: no error of that kind was possible.
    """

    tp: int
    fp: int
    tn: int
    fn: int

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.tn + self.fn

    @property
    def correct(self) -> int:
        return self.tp + self.tn

    @property
    def accuracy(self) -> float:
        """(TP + TN) / n."""
        return self.correct / self.n if self.n else 0.0

    @property
    def precision(self) -> float:
        """TP / (TP + FP)."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        """TP / (TP + FN)."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        """Harmonic mean of precision and recall: 2PR / (P + R), 0 when both are 0."""
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def confusion_matrix(scores: Sequence[bool], expected: Sequence[bool]) -> ConfusionMatrix:
    """Count scores (True = score 1) against expectations (True = expected to pass).

    Notes
    -----
    TP = scored 1 and expected to pass, FP = scored 1 and expected to fail, TN = scored 0 and
    expected to fail, FN = scored 0 and expected to pass; then::

        accuracy  = (TP + TN) / n
        precision = TP / (TP + FP)
        recall    = TP / (TP + FN)
        F1        = 2 precision recall / (precision + recall)

    References
    ----------
    C. J. van Rijsbergen, *Information Retrieval*, 2nd ed. (1979), ch. 7 (precision, recall
    and the F-measure, F1 at beta = 1).

    Examples
    --------
    >>> from evalkit.stats import confusion_matrix
    >>> m = confusion_matrix([True, True, False, True, False],
    ...                      [True, True, True, False, False])
    >>> m.tp, m.fp, m.tn, m.fn
    (2, 1, 1, 1)
    >>> print(f"{m.accuracy:.3f} {m.precision:.3f} {m.recall:.3f} {m.f1:.3f}")
    0.600 0.667 0.667 0.667
    """
    if len(scores) != len(expected):
        raise ValueError("scores and expectations differ in length")
    pairs = list(zip(scores, expected, strict=True))
    return ConfusionMatrix(
        tp=sum(s and e for s, e in pairs), fp=sum(s and not e for s, e in pairs),
        tn=sum(not s and not e for s, e in pairs), fn=sum(not s and e for s, e in pairs))


@dataclass(frozen=True)
class Convergence:
    """Cumulative accuracy and F1 after each sample, and whether they have settled.

    The change of a metric is its range (max - min) over the cumulative values after each of
    the last ``window = min(10, n)`` samples, in percentage points. The dataset is judged
    sufficient when both changes are at most 2 pp.
    """

    accuracy: tuple[float, ...]
    f1: tuple[float, ...]
    window: int
    accuracy_change_pp: float
    f1_change_pp: float

    @property
    def enough_samples(self) -> bool:
        return len(self.accuracy) >= MIN_CONVERGENCE_SAMPLES

    @property
    def stable(self) -> bool:
        return (self.enough_samples and self.accuracy_change_pp <= STABILITY_TOLERANCE_PP
                and self.f1_change_pp <= STABILITY_TOLERANCE_PP)

    @property
    def recommendation(self) -> str:
        if not self.enough_samples:
            return TOO_FEW_RECOMMENDATION.format(minimum=MIN_CONVERGENCE_SAMPLES)
        return STABLE_RECOMMENDATION if self.stable else UNSTABLE_RECOMMENDATION


def cumulative_series(scores: Sequence[bool],
                      expected: Sequence[bool]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Accuracy and F1 of the first k samples, for k = 1..n.

    Notes
    -----
    Entry k of each series is :func:`confusion_matrix` of the first k (score, expectation)
    pairs: accuracy_k = (TP_k + TN_k) / k and F1_k = 2 P_k R_k / (P_k + R_k).

    References
    ----------
    C. J. van Rijsbergen, *Information Retrieval*, 2nd ed. (1979), ch. 7.

    Examples
    --------
    >>> from evalkit.stats import cumulative_series
    >>> accuracy, f1 = cumulative_series([True, False, True, True], [True] * 4)
    >>> print([round(a, 3) for a in accuracy], [round(f, 3) for f in f1])
    [1.0, 0.5, 0.667, 0.75] [1.0, 0.667, 0.8, 0.857]
    """
    accuracy, f1 = [], []
    tp = fp = tn = fn = 0
    for score, wanted in zip(scores, expected, strict=True):
        tp += score and wanted
        fp += score and not wanted
        tn += not score and not wanted
        fn += not score and wanted
        matrix = ConfusionMatrix(tp, fp, tn, fn)
        accuracy.append(matrix.accuracy)
        f1.append(matrix.f1)
    return tuple(accuracy), tuple(f1)


def convergence(accuracy: Sequence[float], f1: Sequence[float]) -> Convergence:
    """Judge the stability of cumulative series (see :class:`Convergence`).

    Notes
    -----
    With w = min(10, n) and x_k the cumulative value after k samples::

        change_pp = 100 (max_{k > n-w} x_k - min_{k > n-w} x_k)

    for accuracy and for F1; stable when n >= 10 and both changes are at most 2 pp.

    References
    ----------
    agentme-edr-policy-155 (the repeatability standard evalkit follows, seeds/001) and
    docs/reports.md (Metrics and reports): cumulative accuracy and F1, change over the last
    min(10, n) samples.

    Examples
    --------
    >>> from evalkit.stats import convergence, cumulative_series
    >>> scores = [True] * 18 + [False, True]
    >>> c = convergence(*cumulative_series(scores, [True] * 20))
    >>> print(c.window, f"{c.accuracy_change_pp:.2f}", f"{c.f1_change_pp:.2f}", c.stable)
    10 5.26 2.70 False
    """
    if not accuracy or len(accuracy) != len(f1):
        raise ValueError("convergence needs two equally long, non-empty series")
    window = min(STABILITY_WINDOW, len(accuracy))
    return Convergence(tuple(accuracy), tuple(f1), window,
                       _range_pp(accuracy[-window:]), _range_pp(f1[-window:]))


def _range_pp(values: Sequence[float]) -> float:
    # Rounded so that float noise (0.02 * 100 = 2.0000000000000004) cannot flip the verdict.
    return round((max(values) - min(values)) * 100, 9)


def chart_points(n: int) -> tuple[int, ...]:
    """Sample counts (1-based) plotted on the convergence chart.

    All of them when n <= 50; otherwise every floor(n/10)-th (at least every 5th) plus the
    first and the last (docs/reports.md, Metrics and reports).

    Examples
    --------
    >>> from evalkit.stats import chart_points
    >>> chart_points(4)
    (1, 2, 3, 4)
    >>> chart_points(63)
    (1, 6, 12, 18, 24, 30, 36, 42, 48, 54, 60, 63)
    """
    if n <= 50:
        return tuple(range(1, n + 1))
    step = max(5, n // 10)
    return tuple(sorted({1, n, *range(step, n + 1, step)}))


def logged_latency(latency_ms: float) -> float:
    """A latency as an MLflow metric: to 0.1 ms. Further digits are timer noise that makes the
    run tables unreadable; each call's full value stays in its record (evaluation.json).

    >>> from evalkit.stats import logged_latency
    >>> logged_latency(12.3456)
    12.3
    """
    return round(latency_ms, 1)


def latency_percentiles(latencies_ms: Sequence[float]) -> dict[str, float]:
    """p50, p90 and p99 (inclusive method; nothing for no values).

    Notes
    -----
    The inclusive method interpolates linearly between order statistics: the q-quantile of
    n sorted values x_(1..n) is x_(j) + g (x_(j+1) - x_(j)) with h = (n - 1) q + 1, j = floor(h)
    and g = h - j (``statistics.quantiles(..., method="inclusive")``, the same as
    ``numpy.percentile``'s default ``linear``). One value is every percentile.

    References
    ----------
    R. J. Hyndman, Y. Fan, "Sample quantiles in statistical packages", The American
    Statistician 50 (1996), 361-365: definition 7.

    Examples
    --------
    >>> from evalkit.stats import latency_percentiles
    >>> latency_percentiles([120.0, 80.0, 95.0, 300.0, 101.0])
    {'p50': 101.0, 'p90': 228.0, 'p99': 292.8}
    """
    values = sorted(latencies_ms)
    if len(values) < 2:
        return {name: values[0] for name in ("p50", "p90", "p99")} if values else {}
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {"p50": cuts[49], "p90": cuts[89], "p99": cuts[98]}
