"""The range of a sequential run's entries, calls and cost before it starts (``--estimate`` of
a run with ``--sequential`` or ``SEQUENTIAL``): a seeded simulation of its stopping rule over
the last finished run's outcomes. Nothing is called.

Each of ``SIMULATED_RUNS`` simulated runs draws an order of the plan's blocks as the run
draws its own (:class:`~evalkit.evaluation._sequential.SequentialDesign`; a fresh draw each,
since the run's seed comes from its run id, unknown before it starts), gives each gated
type's units their outcome (1 when the verdict agreed with the annotation, as accuracy
counts it), feeds the type's :class:`~evalkit.stats.MeanSequence` in that order up to the
look that settles it, as the run's gate does, and counts the blocks called: those holding a
unit some type took. The outcomes:

- a unit the last run scored keeps its own outcome, so over the same entries the simulated
  runs are permutations of the last run's outcomes. An entry's verdict is mostly the entry's
  own (what a component gets wrong it tends to get wrong again): resampling them would give
  each simulated dataset an accuracy this dataset has not, and the look at which the
  ``dataset`` question settles rests on exactly that accuracy's distance from the threshold;
- a unit it did not score (an entry new to the dataset, or one a sequential last run did not
  call) is drawn with replacement from its outcomes of that type (a bootstrap);
- a type it scored no unit of is taken to read all its units (the most it can).

The range is the 5th to the 95th percentile over the simulated runs, with their median. The
component calls follow from the entries called (each its planned calls: ``REPEAT_COUNT`` for
repeatability), the judge calls likewise (a bias group judged by an LLM twice, once for the
stopping rule and once when the run is scored). A simulated run calls one block after the
other; a real one keeps up to ``MAX_CONCURRENCY`` calls in flight, which are made even when
the type that took them settles meanwhile: the median and the upper end let each type take
``MAX_CONCURRENCY - 1`` units past its settling one, the lower end none. A component whose
verdicts change from run to run may stop outside the range: the next run's outcomes are taken
to be the last's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalkit.calls import RunPlan
from evalkit.config import EvalConfig
from evalkit.dataset import BIAS
from evalkit.evaluation._prediction import Spread
from evalkit.evaluation._sequential import (
    SCOPES,
    SequentialDesign,
    judged_items,
    units_to_settle,
)
from evalkit.records import ScoredRun, usd
from evalkit.stats import MeanSequence

SIMULATED_RUNS = 200
"""Enough for the 5th and 95th percentiles to move by a few entries between seeds, few
enough for 2,000 entries to take about a second."""
LOW, HIGH = 5, 95
"""The percentiles the range states."""

Outcomes = Mapping[str, Mapping[frozenset[str], bool]]
"""Per type, each scored item's outcome (its verdict agreed with its annotation) by the ids
of its entries."""


@dataclass(frozen=True)
class CountRange:
    """A count over the simulated runs: its median and its 5-95% range."""

    median: int
    low: int
    high: int

    def text(self) -> str:
        return f"{self.low:,}-{self.high:,}" if self.low != self.high else f"{self.low:,}"

    def to_json(self) -> dict[str, int]:
        return {"median": self.median, "low": self.low, "high": self.high}


@dataclass(frozen=True)
class SequentialEstimate:
    """What a sequential run is expected to call and cost (see the module)."""

    question: str
    entries: int
    """The entries of the plan (what a full run calls)."""
    entries_called: CountRange
    component_calls: CountRange
    judge_calls: CountRange
    based_on: str
    """The run whose outcomes the simulation replays."""
    from_sequential: bool
    """That run was itself sequential: only the entries it called have outcomes."""
    scored_units: int
    """Units of the plan with their own outcome in that run."""
    drawn_units: int
    """Units without one, their outcome drawn from the run's outcomes of their type."""
    unread_types: tuple[str, ...]
    """Types that run scored no unit of: taken to read all their units."""
    in_flight: int
    """Units a type may take past its settling one (``MAX_CONCURRENCY - 1``)."""
    simulated_runs: int
    cost: Spread | None = None
    """Its cost: ``None`` without ``TOKEN_PRICES`` or usage to price."""

    def lines(self) -> list[str]:
        judge = (f", {self.judge_calls.text()} judge calls" if self.judge_calls.high else "")
        cost = "" if self.cost is None else f"; {_cost_text(self.cost)}"
        lines = [f"estimate: sequential ({self.question}): {self.entries_called.text()} of "
                 f"{self.entries:,} entries (median {self.entries_called.median:,}), "
                 f"{self.component_calls.text()} component calls{judge}{cost}",
                 f"estimate: sequential: {LOW}-{HIGH}% of {self.simulated_runs} simulated "
                 f"orders of run {self.based_on}'s outcomes"
                 + (f", {self.in_flight + 1} calls in flight (MAX_CONCURRENCY) included"
                    if self.in_flight else "")]
        if self.from_sequential:
            lines.append(f"estimate: sequential: run {self.based_on} was sequential: its "
                         f"outcomes on the {self.scored_units:,} units it called, those of "
                         f"the other {self.drawn_units:,} drawn from them")
        elif self.drawn_units:
            lines.append(f"estimate: sequential: {self.drawn_units:,} units run "
                         f"{self.based_on} did not score: their outcomes drawn from its "
                         "outcomes of their type")
        if self.unread_types:
            lines.append(f"estimate: sequential: run {self.based_on} scored no "
                         + ", ".join(self.unread_types) + ": taken to read every unit")
        return lines

    def to_json(self) -> dict[str, Any]:
        return {"question": self.question, "entries": self.entries,
                "entries_called": self.entries_called.to_json(),
                "component_calls": self.component_calls.to_json(),
                "judge_calls": self.judge_calls.to_json(),
                "cost_usd": None if self.cost is None else self.cost.to_json(),
                "based_on_run": self.based_on, "from_sequential_run": self.from_sequential,
                "scored_units": self.scored_units, "drawn_units": self.drawn_units,
                "unread_types": list(self.unread_types), "in_flight": self.in_flight,
                "simulated_runs": self.simulated_runs, "percentiles": [LOW, HIGH]}


def _cost_text(cost: Spread) -> str:
    if cost.low is None or cost.high is None or usd(cost.low) == usd(cost.high):
        return usd(cost.estimate)
    return f"{usd(cost.low)}-{usd(cost.high)} (median {usd(cost.estimate)})"


def recorded_outcomes(scored: ScoredRun) -> dict[str, dict[frozenset[str], bool]]:
    """Each scored item's outcome, by type and by the ids of its entries."""
    return {t.test_type: {frozenset(i.entry_ids): i.correct for i in t.items}
            for t in scored.types}


@dataclass(frozen=True)
class _TypeOutcomes:
    """One type's units' outcomes for the simulation: their own (NaN where none) and the pool
    a missing one is drawn from."""

    own: np.ndarray
    pool: np.ndarray

    @classmethod
    def of(cls, plan: RunPlan, units: Sequence[tuple[int, ...]],
           scored: Mapping[frozenset[str], bool]) -> _TypeOutcomes:
        own = [scored.get(frozenset(plan.items[i].entry.id for i in u)) for u in units]
        return cls(np.array([np.nan if o is None else float(o) for o in own]),
                   np.array([float(o) for o in scored.values()]))

    def values(self, order: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        values = self.own[order]
        missing = np.isnan(values)
        if missing.any():
            values[missing] = rng.choice(self.pool, size=int(missing.sum()))
        return values


# The simulation's inputs are separate facts of the run to come; none travel together elsewhere.
def simulate_sequential(plan: RunPlan, config: EvalConfig, outcomes: Outcomes,  # noqa: PLR0913
                        based_on: str, *, from_sequential: bool, seed: int,
                        runs: int = SIMULATED_RUNS) -> SequentialEstimate:
    """The entries and calls of a sequential run of ``plan`` (its selection's question) from
    ``outcomes`` (those of run ``based_on``), over ``runs`` orders drawn from ``seed``."""
    question = plan.selection.sequential
    if question is None:
        raise ValueError("a sequential estimate needs a selection with a sequential question")
    design = SequentialDesign.of(plan)
    types = {t: _TypeOutcomes.of(plan, units, outcomes.get(t, {}))
             for t, units in design.units.items()}
    in_flight = config.max_concurrency - 1
    sizes = np.array([len(b) for b in design.blocks])
    calls = np.array([sum(plan.items[i].calls for i in b) for b in design.blocks])
    plan_types = plan.types
    judged = np.array([judged_items(plan, config, b, plan_types)
                       + judged_items(plan, config, b, (BIAS,)) for b in design.blocks])
    rng = np.random.default_rng(seed)
    # per simulated run, the blocks called one at a time (0) and with calls in flight (1)
    called = np.zeros((2, runs, len(design.blocks)), dtype=bool)
    for run in range(runs):
        drawn = design.draw(rng)
        for test_type, outcome in types.items():
            order = design.unit_order(test_type, drawn)
            taken = len(order) if not len(outcome.pool) else units_to_settle(
                MeanSequence(len(order), config.threshold_for(test_type).min_accuracy,
                             scope=SCOPES[question], confidence=config.sequential_confidence),
                outcome.values(order, rng))
            blocks = design.unit_blocks[test_type][order]
            called[0, run, blocks[:taken]] = True
            called[1, run, blocks[:taken + in_flight]] = True
    own = sum(int(np.count_nonzero(~np.isnan(o.own))) for o in types.values())
    return SequentialEstimate(
        question, len(plan.items), _range(called, sizes), _range(called, calls),
        _range(called, judged * (config.judge.repeats if config.judge else 0)), based_on,
        from_sequential, own, sum(len(o.own) for o in types.values()) - own,
        tuple(t for t, o in types.items() if not len(o.pool)), in_flight, runs)


def _range(called: np.ndarray, per_block: np.ndarray) -> CountRange:
    """A per-block count summed over the blocks each simulated run called: the low end of
    runs without calls in flight (the fewest a run can call), the median and the high end of
    runs with them (a window that keeps its places full has them in flight)."""
    alone, in_flight = called @ per_block
    return CountRange(int(np.percentile(in_flight, 50, method="nearest")),
                      int(np.percentile(alone, LOW, method="lower")),
                      int(np.percentile(in_flight, HIGH, method="higher")))
