"""A sequential run: entries called in a seeded random order until every gated type's verdict
is settled at the stated level (:class:`SequentialGate`), and what it found
(:class:`~evalkit.stats.SequentialOutcome`).

The sampled unit of a type is what one item of it is scored on: an entry (with all its
``REPEAT_COUNT`` calls for repeatability), or a bias group (all its variants, called one
after the other). The order is a permutation of *blocks*, a bias group's entries being one
block and every other entry a block of its own, drawn with ``numpy.random.default_rng`` from
the seed ``replicate_seed(ROOT_SEED, "sequential:<run id>", 0)``: fixed before the first
call, so a resume of the run calls the same order, and independent of the outcomes, so each
type's units arrive as a uniformly random draw without replacement (what
:class:`~evalkit.stats.Scope` ``DATASET`` assumes).

Each type's :class:`~evalkit.stats.MeanSequence` (its ``min_accuracy`` the threshold, a unit
scoring 1 when its verdict agrees with its annotation, as accuracy counts it) takes its units
in that order, a unit as soon as it and every earlier one are in. A type settled (PASS or
FAIL) takes no more units; an entry none of whose types still needs it is not called. The
run ends when every type is settled or the entries run out: under ``population`` a type may
then be INCONCLUSIVE.

Against a baseline (``--against``, :mod:`evalkit.evaluation._against`) a unit's value is
its verdict less the baseline's on the same item (-1, 0 or 1), and each type's sequence is a
:class:`~evalkit.stats.PairedSequence` against its margin: it settles better, worse by more
than the margin, or within the margin.

Example: entries e0..e3 of one ordinary type, threshold 0.6; after e0, e1 and e2 pass
(in the drawn order) the whole dataset's accuracy is at least 3/4 whatever e3 gives (after
two, 2/4 is below 0.6), so the type settles at the third look and e3 is not called (on four
entries the betting interval itself settles nothing: the deterministic bounds do)::

    >>> from evalkit.stats import MeanSequence, Scope
    >>> sequence = MeanSequence(4, 0.6, scope=Scope.DATASET)
    >>> [str(sequence.update(1.0).verdict) for _ in range(3)]
    ['unsettled', 'unsettled', 'PASS']
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalkit.calls import EntryOutputs, RunPlan
from evalkit.config import SEQUENTIAL_QUESTIONS, EvalConfig
from evalkit.dataset import BIAS
from evalkit.evaluation._against import item_id
from evalkit.evaluation._prepare import PreparedEvaluation
from evalkit.evaluation._scoring import CallTraces, EarlyJudging, score_run
from evalkit.records import MetricPoint, names
from evalkit.stats import (
    MeanSequence,
    PairedSequence,
    Scope,
    SequentialOutcome,
    TypeSettlement,
    replicate_seed,
)

logger = logging.getLogger("evalkit")

SCOPES = {"dataset": Scope.DATASET, "population": Scope.POPULATION}
"""The sequence each question (``SEQUENTIAL_QUESTIONS``) is answered with."""


def sequential_seed(root_seed: int, run_id: str) -> int:
    """The seed of a sequential run's order: ``replicate_seed(root_seed,
    "sequential:<run id>", 0)`` (a resume has the same run id, so the same order)."""
    return replicate_seed(root_seed, f"sequential:{run_id}", 0)


class _TypeStream:
    """One type's units in the drawn order, fed to its sequence as they complete."""

    def __init__(self, test_type: str, units: list[tuple[int, ...]],
                 sequence: MeanSequence | PairedSequence) -> None:
        self.test_type = test_type
        self.units = units
        """Each unit's entries (plan positions), in the order drawn."""
        self.sequence = sequence
        self.fed = 0

    @property
    def settled(self) -> bool:
        return self.sequence.look.verdict.settled


class SequentialGate:
    """A run's :class:`~evalkit.calls.Sampling`: the drawn order, which entries are still
    called, and each type's sequence (see the module docstring).

    ``judging`` gives the judge's verdicts as each entry's calls come in (synchronously: the
    next call waits for them, since the next entry taken depends on them)."""

    def __init__(self, prepared: PreparedEvaluation, seed: int,
                 judging: EarlyJudging | None = None, traces: CallTraces | None = None
                 ) -> None:
        plan = prepared.plan
        question = plan.selection.sequential
        if question is None:
            raise ValueError("a sequential gate needs a selection with a sequential question")
        self._plan = plan
        self._scorers = prepared.scorers
        self._judging = judging
        self._traces = traces
        self.question, self.seed = question, seed
        self.confidence = confidence = prepared.config.sequential_confidence
        thresholds = prepared.thresholds
        design = SequentialDesign.of(plan)
        drawn = design.draw(np.random.default_rng(seed))
        blocks = [design.blocks[int(b)] for b in drawn]
        self._order = [index for block in blocks for index in block]
        self._block_of = {index: block for block in blocks for index in block}
        self._taken: set[tuple[int, ...]] = set()
        self._outputs: dict[int, EntryOutputs] = {}
        self._baseline = baseline = prepared.baseline
        scope = SCOPES[question]
        self._streams = [
            _TypeStream(t, [units[int(u)] for u in design.unit_order(t, drawn)],
                        MeanSequence(len(units), thresholds[t].min_accuracy, scope=scope,
                                     confidence=confidence)
                        if baseline is None else
                        PairedSequence(len(units), baseline.margin(t), scope=scope,
                                       confidence=confidence))
            for t, units in design.units.items()]
        if baseline is not None:
            _warn_of_coarse_gaps(self._streams, baseline.margin)

    def order(self) -> Sequence[int]:
        return self._order

    def take(self, index: int) -> bool:
        block = self._block_of[index]
        if block in self._taken:
            return True
        open_types = {s.test_type for s in self._streams if not s.settled}
        wanted = any(t in open_types for i in block for t in self._plan.items[i].types)
        if wanted:
            self._taken.add(block)
        return wanted

    def entry_in(self, outputs: EntryOutputs, index: int) -> None:
        if self._judging is not None:
            for job in self._judging.follow_ups(outputs):
                job()
        self._outputs[index] = outputs
        for stream in self._streams:
            if stream.test_type in outputs.planned.types:
                self._feed(stream)

    def _feed(self, stream: _TypeStream) -> None:
        """Give the type every unit now complete whose earlier units were all given."""
        while not stream.settled and stream.fed < len(stream.units):
            unit = stream.units[stream.fed]
            if not all(i in self._outputs for i in unit):
                return
            stream.sequence.update(self._value(stream.test_type, unit))
            stream.fed += 1
            if stream.settled:
                look = stream.sequence.look
                logger.info("%s settled %s after %d of %d units: [%.3f, %.3f]",
                            stream.test_type, look.verdict, look.n, look.total, look.low,
                            look.high)

    def _value(self, test_type: str, unit: tuple[int, ...]) -> float:
        """1.0 when the unit's verdict agrees with its annotation (as accuracy counts), 0.0
        when not; against a baseline, that less the baseline's (-1, 0 or 1)."""
        early = None if self._judging is None else self._judging.verdicts
        scored = score_run([self._outputs[i] for i in unit], (test_type,), self._scorers,
                           early, traces=self._traces)
        item = scored.types[0].items[0]
        if self._baseline is None:
            return float(item.correct)
        return float(item.correct) - float(bool(self._baseline.correct(test_type, item.id)))

    def outcome(self, calls_made: int) -> SequentialOutcome:
        """The run at its stop; ``calls_made``: component calls made (by every attempt)."""
        items = self._plan.items
        return SequentialOutcome(
            self.question, SEQUENTIAL_QUESTIONS[self.question], self.confidence, self.seed,
            tuple(items[i].entry.id for i in self._order),
            tuple(TypeSettlement(s.test_type, len(s.units), s.sequence.look,
                                 self._not_called(s.test_type, s.units),
                                 None if self._baseline is None
                                 else self._baseline.margin(s.test_type))
                  for s in self._streams),
            len(items), len(self._outputs), self._plan.total_calls, calls_made,
            None if self._baseline is None else self._baseline.run_id)

    def _not_called(self, test_type: str, units: list[tuple[int, ...]]) -> tuple[str, ...]:
        """The type's units never called, named as its results name them: an entry by its
        id, a bias group by the group's (a block is called whole, so a unit is all in or
        all out)."""
        return tuple(item_id(self._plan.items[unit[0]].entry, test_type) for unit in units
                     if unit[0] not in self._outputs)


@dataclass(frozen=True)
class SequentialDesign:
    """What a sequential run draws its order from, before any draw or call: the plan's blocks
    (called together) and each type's units (scored together), in plan order. The gate
    drives a run by it; :mod:`evalkit.evaluation._sequential_estimate` simulates runs by it."""

    blocks: tuple[tuple[int, ...], ...]
    """The plan's entries (positions) as blocks: a bias group's, else one entry's."""
    units: dict[str, tuple[tuple[int, ...], ...]]
    """Each type's units (its entries' positions), for the types that have any: bias groups
    of two or more variants (one of fewer is skipped, as scoring skips it), else entries."""
    unit_blocks: dict[str, np.ndarray]
    """The block of each of a type's units."""

    @classmethod
    def of(cls, plan: RunPlan) -> SequentialDesign:
        blocks = plan_blocks(plan)
        block_of = {index: b for b, block in enumerate(blocks) for index in block}
        units: dict[str, tuple[tuple[int, ...], ...]] = {}
        for test_type in plan.types:
            if test_type == BIAS:
                members = [tuple(i for i in block if BIAS in plan.items[i].types)
                           for block in blocks]
                found = tuple(m for m in members if len(m) >= 2)
            else:
                found = tuple((i,) for block in blocks for i in block
                              if test_type in plan.items[i].types)
            if found:
                units[test_type] = found
        return cls(tuple(blocks), units,
                   {t: np.array([block_of[u[0]] for u in found], dtype=np.intp)
                    for t, found in units.items()})

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """An order of the blocks, drawn: block numbers, the first called first."""
        return rng.permutation(len(self.blocks))

    def unit_order(self, test_type: str, drawn: np.ndarray) -> np.ndarray:
        """The type's units (numbers into ``units[test_type]``) in the order they arrive when
        the blocks are called in the ``drawn`` order (a block's own in plan order)."""
        position = np.empty(len(drawn), dtype=np.intp)
        position[drawn] = np.arange(len(drawn))
        return np.argsort(position[self.unit_blocks[test_type]], kind="stable")


def units_to_settle(sequence: MeanSequence, values: np.ndarray) -> int:
    """How many of ``values`` (in the order drawn) a run that stops once the sequence settles
    feeds it: up to its first settled look, else all of them. Fed in doubling batches (a
    look costs as much one at a time as in a batch, and few are needed past the settling
    one)."""
    fed, size = 0, FIRST_BATCH
    while fed < len(values):
        sequence.update(values[fed:fed + size])
        fed, size = fed + size, 2 * size
        if sequence.settled_at is not None:
            return sequence.settled_at
    return len(values)


FIRST_BATCH = 32
"""Values fed at once first by :func:`units_to_settle`, then twice as many each time."""


def judged_items(plan: RunPlan, config: EvalConfig, block: Sequence[int],
                 types: Iterable[str]) -> int:
    """The items of a block the LLM judge is asked about once, over ``types``: each entry of
    a type it judges, and a bias group of two or more variants once."""
    if config.judge is None:
        return 0
    items = 0
    for test_type in types:
        if config.scorer_for(test_type) != "llm_judge":
            continue
        members = sum(test_type in plan.items[i].types for i in block)
        items += int(members >= 2) if test_type == BIAS else members
    return items


def plan_blocks(plan: RunPlan) -> list[tuple[int, ...]]:
    """The plan's entries as blocks called together: a bias group's, else one entry's."""
    groups: dict[Any, list[int]] = {}
    blocks: list[list[int]] = []
    for index, planned in enumerate(plan.items):
        key = planned.entry.bias_key if BIAS in planned.types else None
        if key is None:
            blocks.append([index])
        elif key in groups:
            groups[key].append(index)
        else:
            groups[key] = [index]
            blocks.append(groups[key])
    return [tuple(b) for b in blocks]


def _warn_of_coarse_gaps(streams: Sequence[_TypeStream], margin_of: Callable[[str], float]
                         ) -> None:
    """Say when a type has too few items for its margin: one item's flip moves its gap by
    more than the margin, so the gap may be settled (or left open) by the component's
    run-to-run noise on a single item."""
    for stream in streams:
        step = 1 / len(stream.units)
        margin = margin_of(stream.test_type)
        if step > margin:
            logger.warning(
                "%s has %d items against a margin of %g: one item that flips moves its gap by "
                "%.3f, more than the margin; add items, or give it a wider --margin %s=...",
                stream.test_type, len(stream.units), margin, step, stream.test_type)


def sequential_points(outcome: SequentialOutcome) -> list[MetricPoint]:
    """The MLflow metrics of a sequential run: entries called, calls saved, and per type the
    look at which it settled (its last look when it did not) and its interval there."""
    points = [MetricPoint(names.SEQUENTIAL_ENTRIES_METRIC, outcome.entries_called),
              MetricPoint(names.SEQUENTIAL_CALLS_SAVED_METRIC, outcome.calls_saved)]
    for t in outcome.types:
        look = t.look
        points += [MetricPoint(f"{t.test_type}_settled_at", look.settled_at or look.n),
                   MetricPoint(f"{t.test_type}_sequence_low", look.low),
                   MetricPoint(f"{t.test_type}_sequence_high", look.high)]
    return points
