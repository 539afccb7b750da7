"""Reliability over replicates: pass@k (at least one of k tries right) and pass^k (all k right).

A replicate series runs every item n times. From the c times an item was right, the unbiased
estimators of Chen et al. (2021) and Yao et al. (2024) give, for every k up to n, the chance
that k tries drawn from the same process hold at least one success (pass@k) or only successes
(pass^k). Averaged over the items they tell two things one accuracy cannot: whether a retry
would rescue the component (pass@k well above pass@1), and whether a user who asks k times
is served every time (pass^k well below pass@1: a component that is right 80% of the time on
every item passes all of 5 tries about a third of the time).

The item is the sample: the interval of each average is over the item-level values, so it
covers the mean over the population the items were drawn from, not only over the items
evaluated.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from evalkit.stats._one_run import wilson_bounds

PASS_K_INTERVAL = ("Wilson at the effective number of items n_eff = p(1 - p) m / s^2, s^2 the "
                   "variance of the m item-level values with two pseudo-items, one at 0 and "
                   "one at 1: (sum (v_i - p)^2 + p^2 + (1 - p)^2) / (m + 1); n_eff = m when p "
                   "is 0 or 1")
"""How the intervals of :func:`pass_k` are made, as the documents say it."""


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k for one item right ``c`` times of ``n``: the chance
    that ``k`` tries hold at least one success.

    Notes
    -----
    The share of the k-subsets of the n tries that hold at least one success::

        pass@k = 1 - C(n - c, k) / C(n, k)

    with C(a, k) = 0 when a < k, computed on exact integers (``math.comb``). Its expectation
    over n tries of an item right with probability p is 1 - (1 - p)^k.

    References
    ----------
    M. Chen et al., "Evaluating Large Language Models Trained on Code", arXiv:2107.03374
    (2021), section 2.1, equation (1).

    Examples
    --------
    An item right twice in five tries: 7 of the 10 pairs of tries hold a success.

    >>> from evalkit.stats import pass_at_k
    >>> pass_at_k(5, 2, 2)
    0.7
    """
    return float(_at_least_one(n, c, k))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass^k for one item right ``c`` times of ``n``: the chance
    that ``k`` tries are all successes.

    Notes
    -----
    The share of the k-subsets of the n tries that hold only successes::

        pass^k = C(c, k) / C(n, k)

    with C(c, k) = 0 when c < k, on exact integers. Its expectation over n tries of an item
    right with probability p is p^k.

    References
    ----------
    S. Yao, N. Shinn, P. Razavi, K. Narasimhan, "tau-bench: A Benchmark for Tool-Agent-User
    Interaction in Real-World Domains", arXiv:2406.12045 (2024), section 5.

    Examples
    --------
    An item right four times in five tries: 6 of the 10 pairs are both right.

    >>> from evalkit.stats import pass_hat_k
    >>> pass_hat_k(5, 4, 2)
    0.6
    """
    return float(_all(n, c, k))


def _at_least_one(n: int, c: int, k: int) -> Fraction:
    _check(n, c, k)
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def _all(n: int, c: int, k: int) -> Fraction:
    _check(n, c, k)
    return Fraction(math.comb(c, k), math.comb(n, k))


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"right tries must lie in [0, {n}], got {c}")
    if not 1 <= k <= n:
        raise ValueError(f"k must lie in [1, {n}] (the item's tries), got {k}")


@dataclass(frozen=True)
class ItemMean:
    """The mean of item-level values in [0, 1], with its interval over the items."""

    value: float
    low: float
    high: float
    n_eff: float
    """The effective number of items the interval is taken at (see :data:`PASS_K_INTERVAL`)."""

    def to_json(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high, "n_eff": self.n_eff}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ItemMean:
        return cls(doc["value"], doc["low"], doc["high"], doc["n_eff"])


@dataclass(frozen=True)
class PassAtK:
    """pass@k and pass^k at one k, averaged over the ``items`` tried at least k times."""

    k: int
    items: int
    pass_at: ItemMean
    """At least one of k tries right (pass@k)."""
    pass_hat: ItemMean
    """All k tries right (pass^k)."""

    def to_json(self) -> dict[str, Any]:
        return {"k": self.k, "items": self.items, "pass_at_k": self.pass_at.to_json(),
                "pass_hat_k": self.pass_hat.to_json()}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> PassAtK:
        return cls(doc["k"], doc["items"], ItemMean.from_json(doc["pass_at_k"]),
                   ItemMean.from_json(doc["pass_hat_k"]))


@dataclass(frozen=True)
class PassK:
    """pass@k and pass^k of a replicate table for every k from 1 to the most tries an item
    had (:func:`pass_k`)."""

    confidence: float
    by_k: tuple[PassAtK, ...]
    """k = 1, 2, ... in order."""
    method: str = PASS_K_INTERVAL

    def at(self, k: int) -> PassAtK:
        return self.by_k[k - 1]

    def to_json(self) -> dict[str, Any]:
        return {"confidence": self.confidence, "method": self.method,
                "by_k": [row.to_json() for row in self.by_k]}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> PassK:
        return cls(doc["confidence"], tuple(PassAtK.from_json(row) for row in doc["by_k"]),
                   doc["method"])


def pass_k(table: Mapping[str, Mapping[int, bool]], confidence: float = 0.95) -> PassK:
    """pass@k and pass^k for every k from 1 to the most replicates an item was scored in,
    each the mean over items of its unbiased item-level estimate, with an interval that
    counts the items as the sample.

    Notes
    -----
    Item i was scored in n_i replicates and right in c_i of them. At each k, over the m_k
    items with n_i >= k::

        pass@k = mean_i [1 - C(n_i - c_i, k) / C(n_i, k)]      (:func:`pass_at_k`)
        pass^k = mean_i [C(c_i, k) / C(n_i, k)]                (:func:`pass_hat_k`)

    An item scored in fewer than k replicates (a replicate lost it) has no estimate at that
    k: it is left out of that k's mean, and ``items`` says how many were counted. In a table
    where every item was scored in every replicate, pass@k rises and pass^k falls with k and
    pass@1 = pass^1 = the mean accuracy; where items dropped out of the larger k, the means
    at different k are over different items and need not be monotone.

    The interval of each mean p over the m item-level values v_i (each in [0, 1]) is the
    Wilson interval at the effective number of items::

        s^2   = (sum_i (v_i - p)^2 + p^2 + (1 - p)^2) / (m + 1)
        n_eff = p (1 - p) m / s^2

    the size of a binomial sample whose mean has the variance s^2 / m that the items show
    (near m when the v_i are 0 or 1, up to several times m when they lie between). The two
    pseudo-items, one at 0 and one at 1, in the spirit of Agresti and Coull's added
    observations, keep s^2 from claiming a precision the items have not shown: near 0 or 1
    the spread of a skewed pool rests on a few rare items, and a sample that missed them
    would give a t interval, or Wilson at the plain variance, that covers 0.8 of the time or
    less. When p is 0 or 1 there is no spread to match and n_eff = m. The items are the
    sample, so the interval covers the mean over the population of items, with the noise of
    the tries inside each v_i; its coverage, measured by ``benchmarks/pass_k_coverage.py``,
    is in docs/stability.md.

    References
    ----------
    M. Chen et al., "Evaluating Large Language Models Trained on Code", arXiv:2107.03374
    (2021), equation (1); S. Yao et al., "tau-bench", arXiv:2406.12045 (2024), section 5;
    E. B. Wilson (1927) for the interval, at an effective sample size as L. Kish, "Survey
    Sampling" (1965) defines it (the design effect); A. Agresti and B. A. Coull,
    "Approximate is better than 'exact' for interval estimation of binomial proportions",
    The American Statistician 52 (1998), 119-126, for adding pseudo-observations.

    Examples
    --------
    Four items over three replicates; ``d`` was lost by the last one:

    >>> from evalkit.stats import pass_k
    >>> table = {"a": {0: True, 1: True, 2: True}, "b": {0: True, 1: False, 2: True},
    ...          "c": {0: False, 1: False, 2: False}, "d": {0: True, 1: False}}
    >>> result = pass_k(table)
    >>> for row in result.by_k:
    ...     print(row.k, row.items, f"{row.pass_at.value:.4f} {row.pass_hat.value:.4f}")
    1 4 0.5417 0.5417
    2 4 0.7500 0.3333
    3 3 0.6667 0.3333
    >>> hat = result.at(3).pass_hat
    >>> print(f"{hat.n_eff:.1f} [{hat.low:.3f}, {hat.high:.3f}]")
    2.2 [0.048, 0.831]
    """
    # An item's estimates depend only on its (n, c): each distinct pair is computed once.
    tries = Counter((len(cells), sum(cells.values())) for cells in table.values() if cells)
    if not tries:
        raise ValueError("pass@k needs at least one scored item; the replicate table is empty")
    rows = []
    for k in range(1, max(n for n, _ in tries) + 1):
        counted = {(n, c): count for (n, c), count in tries.items() if n >= k}
        rows.append(PassAtK(k, sum(counted.values()),
                            _item_mean(counted, k, _at_least_one, confidence),
                            _item_mean(counted, k, _all, confidence)))
    return PassK(confidence, tuple(rows))


def _item_mean(counted: Mapping[tuple[int, int], int], k: int,
               estimate: Callable[[int, int, int], Fraction], confidence: float) -> ItemMean:
    """The mean of ``estimate`` over the items (``counted``: (n, c) -> how many items), with
    its Wilson interval at the effective number of items (two pseudo-items in the variance).
    Exact fractions: a mean of ones is 1, not 1 + 2e-16."""
    values = {pair: estimate(*pair, k) for pair in counted}
    m = sum(counted.values())
    p = sum(values[pair] * count for pair, count in counted.items()) / m
    squares = sum((values[pair] - p) ** 2 * count for pair, count in counted.items())
    with_pseudo_items = squares + p**2 + (1 - p) ** 2  # one item at 0, one at 1
    n_eff = p * (1 - p) * m * (m + 1) / with_pseudo_items if 0 < p < 1 else Fraction(m)
    return ItemMean(float(p), *wilson_bounds(float(p), float(n_eff), confidence), float(n_eff))
