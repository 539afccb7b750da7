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
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalkit.stats._stability import VarianceComponents


@dataclass(frozen=True)
class Allocation:
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

    @property
    def buy(self) -> str:
        """What the next unit of budget should buy: ``"items"`` or ``"replicates"``."""
        if self.best_whole is None:
            return "replicates"
        return "replicates" if self.current_replicates < self.best_whole else "items"

    def advice(self) -> str:
        if self.optimum is None:
            return ("all the measured variance is completion noise: more replicates narrow the "
                    "interval, more items of the same kind do not")
        return (f"optimum {self.optimum:.2f} replicates per item (best whole number "
                f"{self.best_whole}) against {self.current_replicates:g} now: the next unit "
                f"of budget should buy {self.buy}")

    def to_json(self) -> dict[str, Any]:
        return {"sigma2_item": self.sigma2, "tau2_replicate": self.tau2,
                "replicate_cost": self.replicate_cost, "item_cost": self.item_cost,
                "current_replicates": self.current_replicates, "optimum": self.optimum,
                "best_whole": self.best_whole, "variance_times_budget_floor": self.floor,
                "buy": self.buy, "advice": self.advice()}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Allocation:
        return cls(doc["sigma2_item"], doc["tau2_replicate"], doc["replicate_cost"],
                   doc["item_cost"], doc["current_replicates"], doc["optimum"],
                   doc["best_whole"], doc["variance_times_budget_floor"])


def variance_times_budget(sigma2: float, tau2: float, replicate_cost: float,
                          item_cost: float, replicates: float) -> float:
    """Var x B at N replicates per item: (sigma2 + tau2/N)(b + a N)."""
    return (sigma2 + tau2 / replicates) * (item_cost + replicate_cost * replicates)


def allocate(components: VarianceComponents, replicate_cost: float = 1.0,
             item_cost: float = 1.0) -> Allocation:
    """The items-vs-replicates optimum for measured variance components."""
    if replicate_cost <= 0 or item_cost <= 0:
        raise ValueError("costs must be positive")
    sigma2 = components.item
    tau2 = components.completion * components.trials
    a, b = replicate_cost, item_cost
    floor = (math.sqrt(a * tau2) + math.sqrt(b * sigma2)) ** 2
    if sigma2 <= 0:
        return Allocation(sigma2, tau2, a, b, components.trials, None, None, floor)
    optimum = math.sqrt(b * tau2 / (a * sigma2))
    candidates = {max(1, math.floor(optimum)), max(1, math.ceil(optimum))}
    best = min(sorted(candidates),
               key=lambda n: variance_times_budget(sigma2, tau2, a, b, n))
    return Allocation(sigma2, tau2, a, b, components.trials, optimum, best, floor)
