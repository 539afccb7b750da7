"""What a run will cost before it starts (``python eval.py --estimate``): its calls, and its
tokens and cost predicted from the last finished run's usage per call, priced by today's
``TOKEN_PRICES``. Nothing is called: not the component, not the judge (not even its
preflight check).

The calls are counted from the plan as the run would make them: each selected entry once,
``REPEAT_COUNT`` times with repeatability in scope, times ``REPLICATES`` with ``--replicates``;
the judge once per judged item (an entry, or a bias group of at least two variants) and type,
times ``JUDGE_REPEATS``. A judge call that fails ends its item's repeats, so the judge's count
is the most the run makes.

The tokens and the cost come from the last run's calls, one figure per call (component calls
and judge calls apart), by :func:`predicted_total`.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean, stdev
from typing import Any

from evalkit._errors import NotFound, OverBudget
from evalkit.calls import RunPlan, Selection, plan_run
from evalkit.config import EvalConfig
from evalkit.dataset import BIAS
from evalkit.evaluation._context import RunContext
from evalkit.evaluation._prepare import dataset_of
from evalkit.records import (
    Mode,
    Prices,
    ScoredRun,
    TokenUsage,
    cost_of,
    names,
    usd,
)
from evalkit.tracking import StoredRun

logger = logging.getLogger("evalkit")

LEVEL = 0.95
"""The level of every interval an estimate states."""


@dataclass(frozen=True)
class Spread:
    """A predicted total and its interval (``low``/``high`` are ``None`` when the last run
    made a single call of the kind: one call gives no spread)."""

    estimate: float
    low: float | None
    high: float | None

    def contains(self, value: float) -> bool:
        """Whether ``value`` is inside the interval (within float rounding)."""
        low = self.estimate if self.low is None else self.low
        high = self.estimate if self.high is None else self.high
        slack = 1e-9 * max(1.0, abs(high))
        return low - slack <= value <= high + slack

    def to_json(self) -> dict[str, float | None]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high}


def predicted_total(per_call: Sequence[float], calls: int, level: float = LEVEL) -> Spread:
    """The total of ``calls`` new calls, from the figure (tokens or dollars) of each of the
    ``n = len(per_call)`` calls of the last run, taken as draws from one distribution.

    Estimate ``calls * mean``; interval ``calls * mean ± t · s · sqrt(calls · (1 + calls/n))``
    (clamped at 0), with ``s`` the sample standard deviation and ``t`` Student's quantile at
    ``(1 + level) / 2`` with ``n - 1`` degrees of freedom: the prediction interval of a sum of
    ``calls`` future draws, whose variance is ``calls · σ²`` (the new draws) plus
    ``calls² · σ² / n`` (the mean is itself estimated); see e.g. Hahn & Meeker, *Statistical
    Intervals* (1991), section 4.7 (prediction of a future total).

    Example, hand-worked: per-call costs 1, 2, 3 (mean 2, s 1) and 3 calls: estimate 6;
    t(0.975, 2) = 4.3027, sqrt(3 · (1 + 1)) = 2.4495, half-width 10.539, so [0, 16.539]::

        >>> spread = predicted_total([1.0, 2.0, 3.0], 3)
        >>> spread.estimate, spread.low, round(spread.high, 3)
        (6.0, 0.0, 16.539)
    """
    if not per_call:
        raise ValueError("no call to predict from")
    mean = fmean(per_call)
    estimate = calls * mean
    if len(per_call) < 2:
        return Spread(estimate, None, None)
    half = _half_width(per_call, calls, level)
    return Spread(estimate, max(0.0, estimate - half), estimate + half)


def _half_width(per_call: Sequence[float], calls: int, level: float) -> float:
    from scipy.stats import t as student_t

    n = len(per_call)
    quantile = float(student_t.ppf((1 + level) / 2, n - 1))
    return quantile * stdev(per_call) * math.sqrt(calls * (1 + calls / n))


def summed(spreads: Sequence[Spread]) -> Spread:
    """Totals of independent parts (the component's calls, the judge's) added: estimates
    add, and half-widths add in quadrature (each part's own Student quantile kept). A part
    without a spread leaves the sum without one."""
    estimate = sum(s.estimate for s in spreads)
    if any(s.low is None or s.high is None for s in spreads):
        return Spread(estimate, None, None)
    half = math.sqrt(sum(((s.high or 0.0) - s.estimate) ** 2 for s in spreads))
    return Spread(estimate, max(0.0, estimate - half), estimate + half)


@dataclass(frozen=True)
class PartEstimate:
    """The calls of one kind (the component's, or the judge's) the run makes, and what they
    are predicted to use."""

    calls: int
    sampled: int
    """Calls of the last run the prediction rests on (0: none, or no usage reported)."""
    tokens: Spread | None = None
    cost: Spread | None = None
    """``None`` without ``TOKEN_PRICES``, or when no model the calls reported is priced."""

    def to_json(self) -> dict[str, Any]:
        return {"calls": self.calls, "sampled_calls": self.sampled,
                "tokens": None if self.tokens is None else self.tokens.to_json(),
                "cost_usd": None if self.cost is None else self.cost.to_json()}


@dataclass(frozen=True)
class RunEstimate:
    """A run's calls, tokens and cost, predicted before it starts (see the module)."""

    entries: int
    runs: int
    """Runs of the selection (``REPLICATES`` with ``--replicates``, else 1)."""
    component: PartEstimate
    judge: PartEstimate
    based_on: str | None
    """The run the usage comes from; ``None`` when there is no earlier finished run."""
    note: str | None = None
    """Why tokens and cost are not predicted, when they are not."""
    unpriced: tuple[str, ...] = ()
    """Models the last run's calls reported that ``TOKEN_PRICES`` does not price."""
    sequential: Spread | None = None
    """The expected cost range of a sequential run (one that stops once its verdicts are
    settled): filled by sequential runs; not shown while ``None``."""

    @property
    def tokens(self) -> Spread | None:
        return _total([self.component.tokens, self.judge.tokens])

    @property
    def cost(self) -> Spread | None:
        return _total([self.component.cost, self.judge.cost])

    def lines(self) -> list[str]:
        """The estimate for a person: calls, then tokens and cost with their interval."""
        over = f" over {self.runs} runs" if self.runs > 1 else ""
        judge = f", {self.judge.calls:,} judge calls at most" if self.judge.calls else ""
        lines = [f"estimate: {self.entries:,} entries, {self.component.calls:,} component "
                 f"calls{judge}{over}; nothing was called"]
        if self.note is not None:
            return [*lines, f"estimate: {self.note}: calls only"]
        for name, part in (("component", self.component), ("judge", self.judge)):
            if part.calls and part.tokens is not None:
                lines.append(f"estimate: {name} {_figures(part.tokens, part.cost)} (from "
                             f"{part.sampled:,} calls of run {self.based_on})")
            elif part.calls:
                lines.append(f"estimate: {name}: the {name}'s calls of run {self.based_on} "
                             "reported no usage: not in the total")
        if self.tokens is not None:
            lines.append(f"estimate: total {_figures(self.tokens, self.cost)}"
                         + (f" ({LEVEL:.0%} prediction intervals)" if _spread(self.tokens)
                            else ""))
        if self.tokens is not None and self.cost is None:
            lines.append("estimate: no cost: TOKEN_PRICES prices none of the models the "
                         "calls reported")
        if self.unpriced:
            lines.append("estimate: TOKEN_PRICES prices no " + ", ".join(
                repr(m) for m in self.unpriced) + ": their tokens are left out of the cost")
        return lines

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "entries": self.entries, "runs": self.runs, "based_on_run": self.based_on,
            "note": self.note, "level": LEVEL, "component": self.component.to_json(),
            "judge": self.judge.to_json(),
            "tokens": None if self.tokens is None else self.tokens.to_json(),
            "cost_usd": None if self.cost is None else self.cost.to_json(),
            "unpriced_models": list(self.unpriced)}
        if self.sequential is not None:
            doc["sequential_cost_usd"] = self.sequential.to_json()
        return doc


def _total(parts: Sequence[Spread | None]) -> Spread | None:
    given = [p for p in parts if p is not None]
    return summed(given) if given else None


def _spread(spread: Spread) -> bool:
    return spread.low is not None


def _figures(tokens: Spread, cost: Spread | None) -> str:
    text = f"{tokens.estimate:,.0f} tokens" + (
        f" [{tokens.low:,.0f}, {tokens.high:,.0f}]" if _spread(tokens) else "")
    if cost is not None:
        text += f", {usd(cost.estimate)}" + (
            f" [{usd(cost.low or 0.0)}, {usd(cost.high or 0.0)}]" if _spread(cost) else "")
    return text


def estimate_run(config: EvalConfig, selection: Selection, replicates: bool = False,
                 context: RunContext | None = None) -> RunEstimate:
    """The calls, tokens and cost of a run of ``selection`` (a series of ``REPLICATES`` runs
    with ``replicates``), predicted from the last finished evaluation run of the experiment
    in the context's store. Lints the dataset and checks the constants as a run would;
    makes no call, creates no run (and no local store)."""
    context = context or RunContext()
    plan = plan_run(dataset_of(config), selection, config)
    runs = config.replicates if replicates else 1
    component_calls = plan.total_calls * runs
    judge_calls = judge_calls_of(plan, config) * runs
    last = _last_run(config.experiment_name, context)
    if last is None:
        return RunEstimate(len(plan.items), runs, PartEstimate(component_calls, 0),
                           PartEstimate(judge_calls, 0), None,
                           "no earlier finished run in this experiment")
    run, component_usage, judge_usage = last
    prices = config.token_prices
    if not any(component_usage) and not any(judge_usage):
        return RunEstimate(len(plan.items), runs, PartEstimate(component_calls, 0),
                           PartEstimate(judge_calls, 0), run.run_id,
                           f"the last finished run ({run.run_id}) recorded no token usage")
    unpriced = sorted({u.model or "(no model named)" for call in (*component_usage,
                                                                  *judge_usage)
                       for u in call if prices and u.model not in prices})
    return RunEstimate(len(plan.items), runs, _part(component_usage, component_calls, prices),
                       _part(judge_usage, judge_calls, prices), run.run_id,
                       unpriced=tuple(unpriced))


def check_budget(config: EvalConfig, selection: Selection, replicates: bool = False,
                 context: RunContext | None = None) -> RunEstimate | None:
    """Refuse to start a run whose estimated cost per run is above ``MAX_COST_USD``
    (:class:`OverBudget`); the estimate, when the limit is set. A run without an earlier one
    to estimate from, or whose usage is not priced, starts: ``MAX_COST_USD`` still stops it."""
    limit = config.max_cost_usd
    if limit is None:
        return None
    estimate = estimate_run(config, selection, replicates, context)
    cost = estimate.cost
    if cost is not None and cost.estimate / estimate.runs > limit:
        per_run = " per run" if estimate.runs > 1 else ""
        raise OverBudget(
            f"{config.script}: the run is estimated to cost {usd(cost.estimate / estimate.runs)}"
            f"{per_run} (from run {estimate.based_on}'s usage per call, priced by "
            f"TOKEN_PRICES), above MAX_COST_USD = {limit:g}: nothing was started. Raise "
            "MAX_COST_USD, select fewer entries (--groups), or start it anyway with "
            "--ignore-estimate (it then stops once it would spend more than MAX_COST_USD)")
    return estimate


def _part(per_call: Sequence[Sequence[TokenUsage]], calls: int, prices: Prices
          ) -> PartEstimate:
    """One kind of call predicted from the last run's calls of that kind: its calls without
    usage count as 0 tokens, as the run's own totals count them."""
    if not calls or not per_call or not any(per_call):
        return PartEstimate(calls, 0)
    tokens = predicted_total([float(sum(u.total_tokens for u in c)) for c in per_call], calls)
    costs = [cost_of(c, prices) for c in per_call]
    cost = None if all(c is None for c in costs) else predicted_total(
        [0.0 if c is None else c.total_usd for c in costs], calls)
    return PartEstimate(calls, len(per_call), tokens, cost)


def judge_calls_of(plan: RunPlan, config: EvalConfig, bias: bool = True) -> int:
    """Judge calls of one run at most: one per judged item and type, ``JUDGE_REPEATS``
    times (without the bias groups', judged after the calls, unless ``bias``)."""
    if config.judge is None:
        return 0
    items = 0
    for test_type in plan.types:
        if config.scorer_for(test_type) != "llm_judge" or (test_type == BIAS and not bias):
            continue
        members = [p.entry for p in plan.items if test_type in p.types]
        if test_type == BIAS:
            groups: dict[Any, int] = {}
            for entry in members:
                groups[entry.bias_key] = groups.get(entry.bias_key, 0) + 1
            items += sum(1 for size in groups.values() if size >= 2)
        else:
            items += len(members)
    return items * config.judge.repeats


Usages = list[tuple[TokenUsage, ...]]


def _last_run(experiment: str, context: RunContext) -> tuple[StoredRun, Usages, Usages] | None:
    """The experiment's last finished evaluation run that made its own calls, with the usage
    of each of its component calls and each of its judge calls."""
    if not _store_exists(context):
        return None
    reader = context.store.reader
    try:
        runs = reader.evaluation_runs(experiment)
    except NotFound:
        return None
    for run in runs:
        if (run.status == "FINISHED" and Mode.declared(run.tags) == Mode.EVALUATION
                and names.RESCORED_FROM_TAG not in run.tags):
            component = [c.usage for c in reader.raw_results(run.run_id).records]
            scored = ScoredRun.from_json(reader.read_json(run.run_id,
                                                          names.EVALUATION_ARTIFACT))
            return run, component, list(_judge_usages(scored))
    return None


def _judge_usages(scored: ScoredRun) -> Iterable[tuple[TokenUsage, ...]]:
    for result in scored.types:
        for item in result.items:
            for call in item.judge_calls:
                yield () if call.usage is None else (call.usage,)


def _store_exists(context: RunContext) -> bool:
    """Whether there is a store to read: one given or named, or the local one on disk (an
    estimate never creates one)."""
    return (context.tracker is not None or "MLFLOW_TRACKING_URI" in os.environ
            or Path("mlflow.db").exists())
