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

A sequential run (``--sequential`` or ``SEQUENTIAL``) also gets the range it is expected to
call and cost (:mod:`evalkit.evaluation._sequential_estimate`); ``MAX_COST_USD`` holds it to
the full run's estimate all the same, since at a type's threshold it reads every entry.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evalkit._errors import NotFound, OverBudget
from evalkit.calls import RunPlan, Selection, plan_run
from evalkit.config import EvalConfig
from evalkit.dataset import BIAS
from evalkit.evaluation._context import RunContext
from evalkit.evaluation._prediction import LEVEL, Spread, predicted_total, summed
from evalkit.evaluation._prepare import (
    dataset_of,
    refuse_sequential,
    refuse_sequential_mode,
    with_sequential,
)
from evalkit.evaluation._sequential import judged_items, plan_blocks
from evalkit.evaluation._sequential_estimate import (
    CountRange,
    SequentialEstimate,
    recorded_outcomes,
    simulate_sequential,
)
from evalkit.records import (
    Mode,
    Prices,
    ScoredRun,
    TokenUsage,
    cost_of,
    names,
    usd,
)
from evalkit.stats import replicate_seed
from evalkit.tracking import StoredRun

logger = logging.getLogger("evalkit")


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
    sequential: SequentialEstimate | None = None
    """The range of a sequential run (one that stops once its verdicts are settled): its
    entries, calls and cost; ``None`` for a full run, or without an earlier run to simulate
    it from."""

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
        sequential = [] if self.sequential is None else self.sequential.lines()
        if self.note is not None:
            return [*lines, f"estimate: {self.note}: calls only", *sequential]
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
        return [*lines, *sequential]

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "entries": self.entries, "runs": self.runs, "based_on_run": self.based_on,
            "note": self.note, "level": LEVEL, "component": self.component.to_json(),
            "judge": self.judge.to_json(),
            "tokens": None if self.tokens is None else self.tokens.to_json(),
            "cost_usd": None if self.cost is None else self.cost.to_json(),
            "unpriced_models": list(self.unpriced)}
        if self.sequential is not None:
            doc["sequential"] = self.sequential.to_json()
            cost = self.sequential.cost
            doc["sequential_cost_usd"] = None if cost is None else cost.to_json()
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
    in the context's store; for a sequential run (``--sequential``, or ``SEQUENTIAL``) also
    its range (:mod:`evalkit.evaluation._sequential_estimate`). Lints the dataset and checks
    the constants as a run would; makes no call, creates no run (and no local store)."""
    return _estimated(config, selection, replicates, context or RunContext(), sequential=True)


def _estimated(config: EvalConfig, selection: Selection, replicates: bool,
               context: RunContext, *, sequential: bool) -> RunEstimate:
    """The full run's estimate, with a sequential run's range when ``sequential``."""
    selection = with_sequential(config, selection)
    if replicates:
        refuse_sequential_mode(config, selection, "--replicates")
    plan = plan_run(dataset_of(config), selection, config)
    refuse_sequential(config, plan)
    runs = config.replicates if replicates else 1
    component_calls = plan.total_calls * runs
    judge_calls = judge_calls_of(plan, config) * runs
    last = _last_run(config.experiment_name, context)
    if last is None:
        return RunEstimate(len(plan.items), runs, PartEstimate(component_calls, 0),
                           PartEstimate(judge_calls, 0), None,
                           "no earlier finished run in this experiment")
    prices = config.token_prices
    in_sequence = (None if not sequential or selection.sequential is None
                   else _sequential_range(config, plan, last))
    if not any(last.component) and not any(last.judge):
        return RunEstimate(len(plan.items), runs, PartEstimate(component_calls, 0),
                           PartEstimate(judge_calls, 0), last.run.run_id,
                           f"the last finished run ({last.run.run_id}) recorded no token "
                           "usage", sequential=in_sequence)
    unpriced = sorted({u.model or "(no model named)" for call in (*last.component, *last.judge)
                       for u in call if prices and u.model not in prices})
    return RunEstimate(len(plan.items), runs, _part(last.component, component_calls, prices),
                       _part(last.judge, judge_calls, prices), last.run.run_id,
                       unpriced=tuple(unpriced), sequential=in_sequence)


def _sequential_range(config: EvalConfig, plan: RunPlan, last: _LastRun) -> SequentialEstimate:
    """A sequential run's range, simulated from the last run's outcomes (seeded by
    ``ROOT_SEED``: the same estimate twice gives the same range), its cost priced as the full
    run's: a component and a judge part, each from the last run's calls of its kind."""
    simulated = simulate_sequential(
        plan, config, recorded_outcomes(last.scored), last.run.run_id,
        from_sequential=names.SEQUENTIAL_TAG in last.run.tags,
        seed=replicate_seed(config.root_seed, "sequential-estimate", 0))
    prices = config.token_prices
    parts = [_cost_within(costs, calls) for costs, calls in (
        (_costs(last.component, prices), simulated.component_calls),
        (_costs(last.judge, prices), simulated.judge_calls)) if costs is not None]
    if not parts:
        return simulated
    # the parts move together (both follow the entries called): their ends add
    return replace(simulated, cost=Spread(
        sum(p.estimate for p in parts), sum(p.low or 0.0 for p in parts),
        sum(p.high or 0.0 for p in parts)))


def _cost_within(per_call: Sequence[float], calls: CountRange) -> Spread:
    """The cost of a count of calls in a range: the low end's prediction interval's low end,
    the median's estimate, the high end's prediction interval's high end (each end its
    estimate when one call gives no interval)."""
    low, middle, high = (predicted_total(per_call, n) for n in
                         (calls.low, calls.median, calls.high))
    return Spread(middle.estimate, low.estimate if low.low is None else low.low,
                  high.estimate if high.high is None else high.high)


def check_budget(config: EvalConfig, selection: Selection, replicates: bool = False,
                 context: RunContext | None = None) -> RunEstimate | None:
    """Refuse to start a run whose estimated cost per run is above ``MAX_COST_USD``
    (:class:`OverBudget`); the estimate, when the limit is set. A run without an earlier one
    to estimate from, or whose usage is not priced, starts: ``MAX_COST_USD`` still stops it."""
    limit = config.max_cost_usd
    if limit is None:
        return None
    # a sequential run too is held to the full run's estimate: it may read every entry (at a
    # type's threshold it does)
    estimate = _estimated(config, selection, replicates, context or RunContext(),
                          sequential=False)
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
    costs = _costs(per_call, prices)
    cost = None if costs is None else predicted_total(costs, calls)
    return PartEstimate(calls, len(per_call), tokens, cost)


def _costs(per_call: Sequence[Sequence[TokenUsage]], prices: Prices) -> list[float] | None:
    """Each call's cost (0 for a call whose models are not priced); ``None`` when no call
    reported usage, or none of its models is priced."""
    costs = [cost_of(c, prices) for c in per_call]
    if not any(per_call) or all(c is None for c in costs):
        return None
    return [0.0 if c is None else c.total_usd for c in costs]


def judge_calls_of(plan: RunPlan, config: EvalConfig, bias: bool = True) -> int:
    """Judge calls of one run at most: one per judged item and type, ``JUDGE_REPEATS``
    times (without the bias groups', judged after the calls, unless ``bias``)."""
    if config.judge is None:
        return 0
    types = [t for t in plan.types if bias or t != BIAS]
    return sum(judged_items(plan, config, block, types)
               for block in plan_blocks(plan)) * config.judge.repeats


@dataclass(frozen=True)
class _LastRun:
    """The run an estimate rests on: the usage of each of its component calls and each of
    its judge calls, and what it scored."""

    run: StoredRun
    component: list[tuple[TokenUsage, ...]]
    judge: list[tuple[TokenUsage, ...]]
    scored: ScoredRun


def _last_run(experiment: str, context: RunContext) -> _LastRun | None:
    """The experiment's last finished evaluation run that made its own calls."""
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
            return _LastRun(run, component, list(_judge_usages(scored)), scored)
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
