"""What a run's LLM requests used: the tokens of the component's calls and of the judge's, and
their cost by ``TOKEN_PRICES``, as run metrics."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from evalkit.records import (
    CallRecord,
    MetricPoint,
    Prices,
    ScoredRun,
    TokenUsage,
    cost_of,
    names,
    usage_attribute,
)

logger = logging.getLogger("evalkit")


def usage_metrics(calls: Sequence[CallRecord], scored: ScoredRun,
                  prices: Prices) -> list[MetricPoint]:
    """``tokens_input``/``_output``/``_total`` of the component's calls and
    ``judge_tokens_...`` of the judge's, each only when some call reported usage; with
    ``TOKEN_PRICES``, ``cost_usd`` and ``judge_cost_usd`` too. Usage of a model the table does
    not price is left out of the cost, with a warning naming it."""
    component = [u for c in calls for u in c.usage]
    judge = [c.usage for t in scored.types for i in t.items for c in i.judge_calls
             if c.usage is not None]
    unpriced: dict[str, int] = {}
    for usage in (component + judge) if prices else ():
        if usage.model not in prices:
            name = usage.model or "(no model named)"
            unpriced[name] = unpriced.get(name, 0) + usage.total_tokens
    if unpriced:
        logger.warning("TOKEN_PRICES prices no %s: their tokens are left out of cost_usd and "
                       "judge_cost_usd (add the model, named as the calls report it)",
                       ", ".join(f"{model!r} ({tokens:,} tokens)"
                                 for model, tokens in unpriced.items()))
    return _points(component, prices, judge=False) + _points(judge, prices, judge=True)


def _points(usages: Sequence[TokenUsage], prices: Prices, judge: bool) -> list[MetricPoint]:
    if not usages:
        return []
    total = usage_attribute(usages)
    points = [MetricPoint(names.tokens_metric(kind, judge), total[f"{kind}_tokens"])
              for kind in ("input", "output", "total")]
    if prices:
        cost = cost_of(usages, prices)
        points.append(MetricPoint(names.JUDGE_COST_METRIC if judge else names.COST_METRIC,
                                  0.0 if cost is None else cost.total_usd))
    return points
