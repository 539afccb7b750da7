"""Items or replicates: where the next unit of budget buys the most precision.

With n items and N replicates of each, the variance of the mean score splits as (NIST AI
800-3 eq. 22, measured by :func:`evalkit.stats._stability.variance_components`)::

    Var = sigma2 / n + tau2 / (n N)

sigma2 is the item-sampling variance (``item``) and tau2 the variance of one call around its
item's success rate (``completion x trials``, the pooled within-item variance). With a the
cost of one replicate of one item (a call) and b the fixed cost of one more item, a budget
B = n (b + a N) is spent best at (Cochran, *Sampling Techniques*, 1977, sec. 10.6)::

    N* = sqrt(b tau2 / (a sigma2))            replicates per item, scale-free in B
    min Var x B = (sqrt(a tau2) + sqrt(b sigma2))^2

seeds/003 prints the optimum as sqrt(a sigma2 / (b tau2)) in its own model, where sigma2 is
the noise every observation carries, tau2 the variance shared by the outer unit and a that
unit's fixed cost; here the outer unit is the item, so its symbols map onto b tau2/(a sigma2).
Read literally with this module's names, the seed's expression would ask for more replicates
exactly when item variance dominates: the opposite of seeds/000's advice.

A type whose calls never varied (tau2 = 0: every item scored alike in every replicate) is
never told to buy replicates: no replicate noise was seen for them to average away. The advice
says so, and what it does not mean: a per-call change rate below the one-sided 95% upper bound
for zero changes in the chances observed (items x (replicates - 1)) could go unseen.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalkit.stats._stability import VarianceComponents


@dataclass(frozen=True)
class Allocation:
    """The items-vs-replicates optimum for one test type (:func:`allocate`)."""

    sigma2: float
    """Item-sampling variance."""
    tau2: float
    """Variance of one call around its item's rate."""
    replicate_cost: float
    item_cost: float
    current_replicates: float
    optimum: float | None
    """N*, continuous; ``None`` when item variance is zero (replicates are all that helps)."""
    best_whole: int | None
    """The better of floor(N*) and ceil(N*) (at least 1) by variance x budget."""
    floor: float
    """min Var x B = (sqrt(a tau2) + sqrt(b sigma2))^2."""
    items: int | None = None
    """The items the variance was measured on (``None`` in a plan.json that predates it)."""

    @property
    def varied(self) -> bool:
        """Whether any call's score differed from its item's other replicates (tau2 > 0)."""
        return self.tau2 > 0

    @property
    def buy(self) -> str:
        """What the next unit of budget should buy: ``"items"`` or ``"replicates"``; never
        replicates when the calls never varied."""
        if not self.varied:
            return "items"
        if self.best_whole is None:
            return "replicates"
        return "replicates" if self.current_replicates < self.best_whole else "items"

    @property
    def chances(self) -> int | None:
        """Calls that could have differed from their item's first: items x (replicates - 1);
        ``None`` when the items are not known."""
        return None if self.items is None else round(self.items * (self.current_replicates - 1))

    @property
    def unseen_rate_bound(self) -> float | None:
        """With no variation seen: the one-sided 95% upper bound on a per-call change rate
        that zero changes in :attr:`chances` leave possible (1 - 0.05^(1/m)); ``None`` when
        calls varied or there was no chance to see a change."""
        if self.varied or not self.chances:
            return None
        return 1 - 0.05 ** (1 / self.chances)

    def advice(self) -> str:
        if not self.varied:
            return self._no_variation()
        if self.optimum is None:
            return ("all the measured variance is completion noise: more replicates narrow the "
                    "interval, more items of the same kind do not")
        return (f"optimum {self.optimum:.2f} replicates per item (best whole number "
                f"{self.best_whole}) against {self.current_replicates:g} now: the next unit "
                f"of budget should buy {self.buy}")

    def _no_variation(self) -> str:
        items = "item" if self.items is None else f"of the {self.items} items"
        why = ("the items differ from each other (sigma² > 0): the next unit of budget should "
               "buy items" if self.sigma2 > 0 else
               "the items scored alike too: an interval over them narrows only with more "
               "items, so the next unit of budget should buy items")
        bound = self.unseen_rate_bound
        limit = "" if bound is None else (
            f": a per-call change rate up to {bound:.3f} (one-sided 95% bound for no change in "
            f"{self.chances} chances) could go unseen at this size")
        return (f"no run-to-run variance seen: each {items} scored the same in all "
                f"{self.current_replicates:g} replicates, so more replicates have no noise "
                f"measured so far to average away; {why}. This does not show the component "
                f"is deterministic{limit}")

    def to_json(self) -> dict[str, Any]:
        return {"sigma2_item": self.sigma2, "tau2_replicate": self.tau2,
                "replicate_cost": self.replicate_cost, "item_cost": self.item_cost,
                "current_replicates": self.current_replicates, "optimum": self.optimum,
                "best_whole": self.best_whole, "variance_times_budget_floor": self.floor,
                "buy": self.buy, "advice": self.advice(), "items": self.items}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Allocation:
        return cls(doc["sigma2_item"], doc["tau2_replicate"], doc["replicate_cost"],
                   doc["item_cost"], doc["current_replicates"], doc["optimum"],
                   doc["best_whole"], doc["variance_times_budget_floor"], doc.get("items"))


def variance_times_budget(sigma2: float, tau2: float, replicate_cost: float,
                          item_cost: float, replicates: float) -> float:
    """Var x B at N replicates per item: (sigma2 + tau2/N)(b + a N).

    >>> variance_times_budget(0.02, 0.04, 1.0, 1.0, 2)
    0.12
    """
    return (sigma2 + tau2 / replicates) * (item_cost + replicate_cost * replicates)


def allocate(components: VarianceComponents, replicate_cost: float = 1.0,
             item_cost: float = 1.0) -> Allocation:
    """The items-vs-replicates optimum for measured variance components.

    Notes
    -----
    With sigma2 = ``components.item``, tau2 = ``components.completion x components.trials``,
    a the cost of a call and b the fixed cost of an item (module docstring)::

        N*        = sqrt(b tau2 / (a sigma2))
        best_whole = argmin over {floor N*, ceil N*} (at least 1) of (sigma2 + tau2/N)(b + a N)
        floor     = (sqrt(a tau2) + sqrt(b sigma2))^2

    References
    ----------
    W. G. Cochran, *Sampling Techniques*, 3rd ed. (1977), 10.6 (optimum subsampling in
    two-stage designs). seeds/003 (the same optimum in its own notation) and seeds/000 (NIST
    AI 800-3 eq. 22, where the components come from).

    Examples
    --------
    seeds/000's worked example: completion 0.01375 and item 0.022425 at two trials:

    >>> from evalkit.stats import VarianceComponents, allocate
    >>> a = allocate(VarianceComponents(0.01375, 0.022425, 0.036175, 2.0, 200))
    >>> print(f"{a.optimum:.3f}", a.best_whole, f"{a.floor:.5f}", a.buy)
    1.107 1 0.09959 items
    """
    if replicate_cost <= 0 or item_cost <= 0:
        raise ValueError("costs must be positive")
    sigma2 = components.item
    tau2 = components.completion * components.trials
    a, b = replicate_cost, item_cost
    floor = (math.sqrt(a * tau2) + math.sqrt(b * sigma2)) ** 2
    if sigma2 <= 0:
        return Allocation(sigma2, tau2, a, b, components.trials, None, None, floor,
                          components.items)
    optimum = math.sqrt(b * tau2 / (a * sigma2))
    candidates = {max(1, math.floor(optimum)), max(1, math.ceil(optimum))}
    best = min(sorted(candidates),
               key=lambda n: variance_times_budget(sigma2, tau2, a, b, n))
    return Allocation(sigma2, tau2, a, b, components.trials, optimum, best, floor,
                      components.items)
