"""The judge's own stability: how often it changes its mind about the same outputs.

With ``JUDGE_REPEATS`` = k > 1 the judge is asked k times about each item, with the same
request (temperature 0 does not make a served model deterministic). Its verdict is the
majority of the votes; the votes say how far a single verdict could be trusted.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalkit.records import TypeResult
from evalkit.stats._votes import Disagreement, Rule, disagreement, vote_error


@dataclass(frozen=True)
class JudgeStability:
    """One type's judge asked ``repeats`` times about each of ``items`` items."""

    repeats: int
    items: int
    changed: int
    """Items whose votes were not unanimous: the judge changed its mind."""
    disagreement: Disagreement | None
    """p: the share of votes that differ from their item's majority (seed 003)."""
    majority_error: float | None
    """The chance that the majority of ``repeats`` votes differs from the judge's usual
    verdict, at that p (:func:`evalkit.stats.vote_error`, majority rule, ties wrong)."""
    failures: int
    """Items the judge failed (by majority)."""
    failures_from_judge: int
    """Of those, the ones where at least one vote passed: a failure the judge's changing
    mind, not the outputs alone, decided (for repeatability, the component's answers may
    have been consistent)."""

    @property
    def flip_rate(self) -> float:
        """The share of items whose votes were not unanimous."""
        return self.changed / self.items if self.items else 0.0


def judge_stability(result: TypeResult) -> JudgeStability | None:
    """The stability of the judge over a type's items that hold its votes; ``None`` when the
    judge was asked once (no item holds votes).

    Notes
    -----
    flip rate = items whose k votes were not unanimous / items; p = :func:`disagreement` of
    the votes (minority votes / votes); the majority error P(Binomial(k, p) >= k/2), ties
    wrong (:func:`vote_error`).

    References
    ----------
    seeds/003 (the error of a majority over k exchangeable runs).

    Examples
    --------
    >>> from evalkit.records import ItemResult, TypeResult
    >>> votes = [(True, True, True), (True, False, True), (False, False, True), (False,) * 3]
    >>> items = tuple(ItemResult(f"e{i}", sum(v) >= 2, True, "q", "a", ("a",), (f"e{i}",),
    ...                          judge_votes=v) for i, v in enumerate(votes))
    >>> s = judge_stability(TypeResult("repeatability", "llm_judge", items))
    >>> print(s.flip_rate, f"{s.disagreement.p:.4f} {s.majority_error:.4f}", s.failures,
    ...       s.failures_from_judge)
    0.5 0.1667 0.0741 2 1
    """
    voted = [i for i in result.items if i.judge_votes and i.error is None]
    if not voted:
        return None
    votes = [i.judge_votes or () for i in voted]
    repeats = max(len(v) for v in votes)
    found = disagreement("judge", votes)
    failed = [i for i in voted if not i.passed]
    return JudgeStability(
        repeats, len(voted), sum(len(set(v)) > 1 for v in votes), found,
        None if found is None else vote_error(Rule.MAJORITY, repeats, found.p),
        len(failed), sum(any(i.judge_votes or ()) for i in failed))
