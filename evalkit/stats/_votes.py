"""How many runs a claim needs: the error of a verdict aggregated over N runs, and the
per-run disagreement rate p it depends on.

For N exchangeable runs, each reaching the wrong verdict with probability p, the number of
wrong runs is X ~ Binomial(N, p) and (seeds/003):

* strict majority is wrong when more than half the runs are wrong, P(X > N/2); for even N a
  tie (X = N/2) is a policy: counted wrong, P(X >= N/2), or counted right, P(X > N/2);
* unanimity (every run must pass) is wrong when any run is, 1 - (1 - p)^N: more runs make it
  worse;
* any-of (one pass suffices) is wrong only when every run is, p^N.

Exchangeability (run order carries no information) is the only structural assumption.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from scipy.stats import binom

from evalkit.stats._one_run import WilsonInterval, wilson_interval

# seeds/003: below p* more runs buy estimation; above it the decision itself is the binding
# cost and no reasonable N rescues it (found by grid search in the study the seed reports).
DECISION_CROSSOVER_P = 0.40


class Rule(StrEnum):
    MAJORITY = "majority"
    UNANIMOUS = "unanimous"
    ANY_OF = "any-of"


class Ties(StrEnum):
    """What a strict-majority vote does with a tie (even N only)."""

    WRONG = "ties wrong"
    RIGHT = "ties right"


def vote_error(rule: Rule, n: int, p: float, ties: Ties = Ties.WRONG) -> float:
    """Probability that the verdict aggregated over ``n`` runs under ``rule`` is wrong (the
    formulas in the module docstring).

    >>> print(f"{vote_error(Rule.MAJORITY, 3, 0.1):.5f} {vote_error(Rule.UNANIMOUS, 3, 0.1):.4f}")
    0.02800 0.2710
    """
    if n < 1:
        raise ValueError("a vote needs at least one run")
    if not 0 <= p <= 1:
        raise ValueError(f"p must be a probability, got {p}")
    if rule is Rule.UNANIMOUS:
        return float(-math.expm1(n * math.log1p(-p))) if p < 1 else 1.0
    if rule is Rule.ANY_OF:
        return p**n
    # Strict majority: wrong when X > n/2, or X >= n/2 when an even-n tie counts wrong.
    wrong_from = n // 2 if n % 2 == 0 and ties is Ties.WRONG else n // 2 + 1
    return float(binom.sf(wrong_from - 1, n, p))


def smallest_n(rule: Rule, p: float, target: float, ties: Ties = Ties.WRONG,
               limit: int = 1000) -> int | None:
    """The fewest runs whose aggregated verdict errs with probability <= ``target``;
    ``None`` when no N up to ``limit`` does (unanimity only gets worse with N)."""
    for n in range(1, limit + 1):
        # A relative tolerance, so that 0.1**2 (= 0.010000000000000002) meets a 0.01 target.
        if vote_error(rule, n, p, ties) <= target * (1 + 1e-9):
            return n
    return None


@dataclass(frozen=True)
class VoteTable:
    """Error of every rule for N = 1..max_n at one p, with the N each needs for a target."""

    p: float
    target: float
    errors: dict[str, tuple[float, ...]]
    """rule (and tie policy for majority) -> error for N = 1..max_n."""
    recommended: dict[str, int | None]

    def to_json(self) -> dict[str, Any]:
        return {"p": self.p, "target": self.target, "errors": self.errors,
                "recommended": self.recommended}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> VoteTable:
        return cls(doc["p"], doc["target"], {r: tuple(e) for r, e in doc["errors"].items()},
                   dict(doc["recommended"]))


def vote_table(p: float, target: float, max_n: int = 20) -> VoteTable:
    """The error of every rule at N = 1..``max_n`` runs, and the fewest runs for ``target``.

    Notes
    -----
    With X ~ Binomial(N, p) wrong runs::

        majority (ties wrong) = P(X >= N/2)      majority (ties right) = P(X > N/2)
        unanimous             = 1 - (1 - p)^N    any-of                = p^N

    ``recommended`` is the smallest N whose error is at most ``target`` (``None`` when no N
    up to 1000 reaches it: unanimity only gets worse with N).

    References
    ----------
    seeds/003, "Three runs is not a sample size: the replication fallacy in AI evaluation
    and its computable rule" (E(N, p) = P(Binomial(N, p) >= ceil(N/2)), ties as policy).

    Examples
    --------
    At p = 0.10 (seeds/003's table: majority 0.02800 at N = 3, 0.00856 at N = 5):

    >>> from evalkit.stats import vote_table
    >>> t = vote_table(0.10, target=0.01, max_n=5)
    >>> print([f"{e:.5f}" for e in t.errors["majority (ties right)"]])
    ['0.10000', '0.01000', '0.02800', '0.00370', '0.00856']
    >>> t.recommended
    {'majority (ties wrong)': 5, 'majority (ties right)': 2, 'unanimous': None, 'any-of': 2}
    """
    columns = {
        f"{Rule.MAJORITY} ({Ties.WRONG})": (Rule.MAJORITY, Ties.WRONG),
        f"{Rule.MAJORITY} ({Ties.RIGHT})": (Rule.MAJORITY, Ties.RIGHT),
        str(Rule.UNANIMOUS): (Rule.UNANIMOUS, Ties.WRONG),
        str(Rule.ANY_OF): (Rule.ANY_OF, Ties.WRONG),
    }
    return VoteTable(
        p=p, target=target,
        errors={name: tuple(vote_error(rule, n, p, ties) for n in range(1, max_n + 1))
                for name, (rule, ties) in columns.items()},
        recommended={name: smallest_n(rule, p, target, ties)
                     for name, (rule, ties) in columns.items()})


@dataclass(frozen=True)
class Disagreement:
    """The measured per-run disagreement rate p: minority observations over all of them."""

    source: str
    minority: int
    observations: int
    groups: int
    interval: WilsonInterval

    @property
    def p(self) -> float:
        return self.minority / self.observations


def disagreement(source: str, answers: Iterable[Sequence[Hashable]]) -> Disagreement | None:
    """p from groups of answers that should agree (an entry's repeats, an item's verdicts
    across replicates): the share of answers that differ from their group's majority answer.

    Notes
    -----
    p = sum_g (t_g - c_g) / sum_g t_g over the groups g of t_g >= 2 answers, c_g the count of
    the group's most common answer: a group of t answers whose most common answer occurs c
    times contributes t - c; a tie between two answers counts half the group either way, so
    no tie policy is needed. Groups of one answer carry no information and are skipped. The
    interval is Wilson over all answers (treating them as independent, which repeats of one
    entry are not quite).

    References
    ----------
    seeds/003 (p, the per-run disagreement rate a vote's error depends on); E. B. Wilson
    (1927) for the interval.

    Examples
    --------
    >>> from evalkit.stats import disagreement
    >>> d = disagreement("repeats", [("a", "a", "b"), ("x", "x", "x"), ("y",)])
    >>> print(d.minority, d.observations, d.groups, f"{d.p:.4f}", f"{d.interval.high:.3f}")
    1 6 2 0.1667 0.564
    """
    minority = observations = groups = 0
    for group in answers:
        if len(group) < 2:
            continue
        minority += len(group) - Counter(group).most_common(1)[0][1]
        observations += len(group)
        groups += 1
    if not observations:
        return None
    return Disagreement(source, minority, observations, groups,
                        wilson_interval(minority, observations))
