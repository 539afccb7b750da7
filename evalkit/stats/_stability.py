"""Run-to-run statistics over replicates: how far a result moves when the same pack runs again.

Input is an item x replicate table of binary scores keyed by stable item ids (entry ids, or
bias groups); a replicate may miss items (unbalanced tables are allowed). Two numbers that do
not follow from each other come out: how far the *rate* moved between replicates (``sd``,
``spread``) and how many *items* changed their answer (``unstable_items``, the flip
partition, the pairwise disagreement table). A system can hold a steady rate while churning on
half of its items; only the second number sees it.

References: seeds/000 (replicates, the variance split of NIST AI 800-3 Appendix A.3 eq. 22,
Wilson at an effective sample size) and seeds/002 (flips, pairwise disagreement, the noise
floor and the refusal of comparisons inside it).
"""

from __future__ import annotations

import hashlib
import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from evalkit.stats._one_run import wilson_bounds
from evalkit.stats._pass_k import PassK, pass_k

NIST_REFERENCE = ("NIST AI 800-3, Appendix A.3, equation 22: Var[Z_i] = E[Pi_i(1 - Pi_i)]/t "
                  "+ Var[Pi_i] (completion sampling + item sampling); Var[S] = Var[Z_i]/n.")

ReplicateTable = Mapping[str, Mapping[int, bool]]
"""item id -> replicate index -> score (True = correct). Missing cells are unobserved."""


@dataclass(frozen=True)
class VarianceComponents:
    """The variance of a per-item score split into completion and item sampling.

    With t_i the trials (replicates) of item i, x_ir its scores and m_i their mean::

        within     = sum_i sum_r (x_ir - m_i)^2 / sum_i (t_i - 1)   pooled within-item variance
        trials     = mean_i t_i                  (fractional when a replicate lost an item)
        completion = within / trials              completion sampling, falls as 1/trials
        total      = var_i(m_i), ddof = 1         variance of replicate-averaged item scores
        item       = max(0, total - completion)   item sampling, a moment estimator

    ``item`` is floored at zero because a moment estimator of a variance can go negative when
    the truth is near zero. More replicates shrink only ``completion``; ``item`` is a property
    of the pool the items were drawn from.

    References
    ----------
    NIST AI 800-3, Appendix A.3, equation 22: Var[Z_i] = E[Pi_i (1 - Pi_i)]/t + Var[Pi_i]
    (via seeds/000, "Which of the two more replicates buys").

    Examples
    --------
    seeds/000's worked example: doubling the trials halves ``completion`` and narrows an
    interval by about 10%:

    >>> from evalkit.stats import VarianceComponents
    >>> v = VarianceComponents(0.01375, 0.022425, 0.036175, 2.0, 200)
    >>> print(f"{v.width_change_if_trials_scaled(2):.3f}")
    -0.100
    """

    completion: float
    item: float
    total: float
    trials: float
    items: int
    estimator: str = "anova_moment"
    reference: str = NIST_REFERENCE

    def width_change_if_trials_scaled(self, factor: float) -> float:
        """Relative change of an interval's width if every item had ``factor`` times the
        trials: sqrt((completion/factor + item) / total) - 1 (e.g. -0.10 for 10% narrower)."""
        if self.total <= 0:
            return 0.0
        return math.sqrt((self.completion / factor + self.item) / self.total) - 1

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> VarianceComponents:
        return cls(**{k: doc[k] for k in ("completion", "item", "total", "trials", "items",
                                          "estimator", "reference")})

    def to_json(self) -> dict[str, Any]:
        return {"completion": self.completion, "item": self.item, "total": self.total,
                "trials": self.trials, "items": self.items, "estimator": self.estimator,
                "reference": self.reference}


@dataclass(frozen=True)
class EffectiveInterval:
    """A Wilson interval for the mean rate at an effective sample size.

    The variance behind the mean of n items is ``total / n``. A binomial proportion p from
    n_eff independent trials has variance p(1 - p)/n_eff, so the sample size that carries
    the same variance is::

        n_eff = p (1 - p) n / total

    (n_eff lies near n when items are all-or-nothing and near n x trials when items are
    alike and only completions vary). The Wilson score interval is then taken at n_eff:
    centre (p + z²/2n_eff)/(1 + z²/n_eff), half-width z/(1 + z²/n_eff) ·
    sqrt(p(1-p)/n_eff + z²/4n_eff²). When p is 0 or 1, or total is 0, there is no variance
    to match and n_eff is the number of items.
    """

    p: float
    n_eff: float
    confidence: float
    low: float
    high: float


@dataclass(frozen=True)
class PairDisagreement:
    """Items two replicates both observed, and how many of them got different answers."""

    first: int
    second: int
    shared: int
    disagree: int

    @property
    def rate(self) -> float:
        return self.disagree / self.shared if self.shared else 0.0


@dataclass(frozen=True)
class FlipPartition:
    """Items seen in more than one replicate, by how they behaved across all of them."""

    always_right: tuple[str, ...]
    always_wrong: tuple[str, ...]
    changed: tuple[str, ...]
    seen_once: tuple[str, ...]
    """Items observed in a single replicate: no claim about their stability is possible."""


@dataclass(frozen=True)
class ReplicateStability:
    """Everything replicates say about one metric (seeds/000's output, plus seeds/002's)."""

    metric: str
    rates: Mapping[int, tuple[int, int]]
    """replicate -> (successes, observations)."""
    mean: float
    sd: float | None
    spread: float
    repeated_items: int
    unstable_items: int
    components: VarianceComponents | None
    interval: EffectiveInterval | None
    partition: FlipPartition
    pairwise: tuple[PairDisagreement, ...]
    reliability: PassK
    """pass@k and pass^k for every k up to the replicates (:func:`pass_k`)."""

    @property
    def noise_floor(self) -> float | None:
        """The largest pairwise disagreement rate: how many items two runs that were meant to
        be identical disagreed on, at worst. It is the error bar of any comparison between
        two single runs; ``None`` below two replicates, or when no two replicates observed
        a common item (a floor measured on nothing is no floor)."""
        return max((p.rate for p in self.pairwise if p.shared), default=None)


def replicate_stability(metric: str, table: ReplicateTable,
                        confidence: float = 0.95) -> ReplicateStability:
    """All run-to-run statistics of ``table`` (see the module and class docstrings).

    Notes
    -----
    Per replicate r the rate s_r/n_r; ``mean`` and ``sd`` (ddof = 1) of those rates,
    ``spread`` = max - min; ``unstable_items`` the items with more than one distinct answer;
    ``components`` the split of :class:`VarianceComponents`; ``interval`` Wilson at the
    effective sample size (:class:`EffectiveInterval`); the flip partition and the pairwise
    disagreement of every two replicates, whose largest rate is the noise floor;
    ``reliability`` pass@k and pass^k for every k up to the replicates (:func:`pass_k`).

    References
    ----------
    NIST AI 800-3, Appendix A.3, equation 22 (via seeds/000, "Replicates"); seeds/002, "A
    stable aggregate is not a stable measurement" (flips, pairwise disagreement, the noise
    floor); E. B. Wilson (1927) for the interval.

    Examples
    --------
    Four items over three replicates; item ``c`` changed its answer:

    >>> from evalkit.stats import replicate_stability
    >>> table = {"a": {0: True, 1: True, 2: True}, "b": {0: False, 1: False, 2: False},
    ...          "c": {0: True, 1: False, 2: True}, "d": {0: True, 1: True, 2: True}}
    >>> s = replicate_stability("accuracy", table)
    >>> print(f"{s.mean:.4f} {s.sd:.4f} {s.spread:.2f}", s.unstable_items, s.noise_floor)
    0.6667 0.1443 0.25 1 0.25
    >>> v = s.components
    >>> print(f"{v.completion:.6f} {v.item:.6f} {v.total:.6f}")
    0.027778 0.194444 0.222222
    >>> print(f"{s.interval.n_eff:.3f} {s.interval.low:.3f} {s.interval.high:.3f}")
    4.000 0.245 0.925
    """
    replicates = sorted({r for cells in table.values() for r in cells})
    if not replicates:
        raise ValueError(f"{metric}: the replicate table has no observations")
    rates = {r: (sum(cells[r] for cells in table.values() if r in cells),
                 sum(r in cells for cells in table.values())) for r in replicates}
    per_replicate = [s / n for s, n in rates.values()]
    mean = statistics.fmean(per_replicate)
    components = variance_components(table)
    return ReplicateStability(
        metric=metric, rates=rates, mean=mean,
        sd=statistics.stdev(per_replicate) if len(per_replicate) > 1 else None,
        spread=max(per_replicate) - min(per_replicate),
        repeated_items=sum(len(cells) > 1 for cells in table.values()),
        unstable_items=sum(len(set(cells.values())) > 1 for cells in table.values()),
        components=components,
        interval=effective_interval(mean, components, confidence),
        partition=flip_partition(table),
        pairwise=pairwise_disagreement(table),
        reliability=pass_k(table, confidence))


def variance_components(table: ReplicateTable) -> VarianceComponents | None:
    """The completion/item split; ``None`` below two items or where no item was seen twice."""
    observed = [[float(v) for v in cells.values()] for cells in table.values() if cells]
    pooled_df = sum(len(scores) - 1 for scores in observed)
    if len(observed) < 2 or pooled_df == 0:
        return None
    item_means = [statistics.fmean(scores) for scores in observed]
    within_ss = sum((x - m) ** 2 for scores, m in zip(observed, item_means, strict=True)
                    for x in scores)
    trials = statistics.fmean(len(scores) for scores in observed)
    completion = within_ss / pooled_df / trials
    total = statistics.variance(item_means)
    return VarianceComponents(completion=completion, item=max(0.0, total - completion),
                              total=total, trials=trials, items=len(observed))


def effective_interval(p: float, components: VarianceComponents | None,
                       confidence: float = 0.95) -> EffectiveInterval | None:
    """Wilson at the effective sample size (see :class:`EffectiveInterval`)."""
    if components is None:
        return None
    n = components.items
    if 0 < p < 1 and components.total > 0:
        n_eff = p * (1 - p) * n / components.total
    else:
        n_eff = float(n)
    return EffectiveInterval(p, n_eff, confidence, *wilson_bounds(p, n_eff, confidence))


def flip_partition(table: ReplicateTable) -> FlipPartition:
    """Items by behaviour across replicates: always right, always wrong, changed at least once."""
    groups: dict[str, list[str]] = {"right": [], "wrong": [], "changed": [], "once": []}
    for item_id in sorted(table):
        answers = set(table[item_id].values())
        if len(table[item_id]) < 2:
            groups["once"].append(item_id)
        elif len(answers) > 1:
            groups["changed"].append(item_id)
        else:
            groups["right" if answers == {True} else "wrong"].append(item_id)
    return FlipPartition(tuple(groups["right"]), tuple(groups["wrong"]),
                         tuple(groups["changed"]), tuple(groups["once"]))


def pairwise_disagreement(table: ReplicateTable) -> tuple[PairDisagreement, ...]:
    """For every two replicates: items both observed, and items on which they disagree."""
    replicates = sorted({r for cells in table.values() for r in cells})
    pairs = []
    for first, second in combinations(replicates, 2):
        shared = [cells for cells in table.values() if first in cells and second in cells]
        pairs.append(PairDisagreement(first, second, len(shared),
                                      sum(cells[first] != cells[second] for cells in shared)))
    return tuple(pairs)


def replicate_seed(root_seed: int, pack_id: str, replicate: int) -> int:
    """The seed of one replicate: sha256(f"{root_seed}:{pack_id}:{replicate}"), first 8 bytes
    big-endian, shifted right by 11 (a 53-bit integer, exact in a double and in JSON).

    References
    ----------
    seeds/000, "How it is seeded": seed = sha256(f"{root_seed}:{pack_id}:{replicate}")[:8]
    >> 11.

    Examples
    --------
    >>> from evalkit.stats import replicate_seed
    >>> replicate_seed(42, "functional", 0)
    8730375407316961
    """
    digest = hashlib.sha256(f"{root_seed}:{pack_id}:{replicate}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 11
