"""A sequential run against a recorded one: ``python eval.py --against RUN_ID``.

The regression gate of a pull request asks whether the candidate is worse than the baseline,
and the baseline's outputs are already recorded. So only the candidate is called, on the
baseline's items in a seeded random order, and each type's paired gap (candidate - baseline,
per item -1, 0 or 1) feeds a :class:`~evalkit.stats.PairedSequence` against the type's
non-inferiority margin until it settles *better*, *worse by more than the margin* or *within
the margin* (see :mod:`evalkit.evaluation._sequential`, which runs it).

The baseline's items are read as ``evalkit compare`` reads a side (:func:`load_side`: a
replicate series by majority, an item split evenly left out), so the two agree on what
"the same item" is. The run's plan keeps the entries the baseline has an item for, and of
each entry the types it has one in.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from evalkit._errors import ConfigError
from evalkit.calls import PlannedEntry, RunPlan
from evalkit.dataset import BIAS, REPEATABILITY, Entry
from evalkit.records import names
from evalkit.review import Margins, Side, load_side
from evalkit.tracking import RunReader

logger = logging.getLogger("evalkit")

DEFAULT_MARGIN = 0.05
"""The margin of a type ``--margin`` does not name: the candidate may be at most 5 points
below the baseline."""
DEFAULT_QUESTION = "population"
"""The question of a run against a baseline unless ``--sequential`` (or ``SEQUENTIAL``) names
one: the gap on the population the items sample. On the baseline's items themselves
(``dataset``) the sequence ends exact, so a type of few items fails on one item that flipped
between two calls of the same component; the population's question counts the items as a
sample and says INCONCLUSIVE there instead."""


def _default_margins() -> Margins:
    return Margins(DEFAULT_MARGIN)


@dataclass(frozen=True)
class Against:
    """``--against``: the recorded run to compare with and each type's margin."""

    reference: str
    """A run id (or its first 4 or more hex digits), or an experiment name: its latest
    finished evaluation run."""
    margins: Margins = field(default_factory=_default_margins)


@dataclass(frozen=True)
class Baseline:
    """The recorded run a sequential run is compared with: its item verdicts per type."""

    side: Side
    margins: Margins

    @property
    def run_id(self) -> str:
        return self.side.run_id

    def margin(self, test_type: str) -> float:
        margin = self.margins.of(test_type)
        return DEFAULT_MARGIN if margin is None else margin

    def correct(self, test_type: str, item_id: str) -> bool | None:
        """The baseline's verdict on an item (``None``: it has none, or it is undecided)."""
        return self.side.items.get(test_type, {}).get(item_id)

    def has(self, entry: Entry, test_type: str) -> bool:
        return self.correct(test_type, item_id(entry, test_type)) is not None

    def tags(self) -> dict[str, str]:
        return {names.AGAINST_TAG: self.run_id, names.AGAINST_MARGIN_TAG: self.margins.text()}


def item_id(entry: Entry, test_type: str) -> str:
    """The item an entry is scored in: its bias group's for bias, else its own."""
    return entry.bias_id if test_type == BIAS else entry.id


def load_baseline(reader: RunReader, against: Against, script: str) -> Baseline:
    """The baseline as MLflow holds it; a run that has not finished is refused (its items
    may change when it is resumed)."""
    run_id = _baseline_id(reader, against.reference, script)
    stored = reader.stored(run_id)
    if stored.status != "FINISHED":
        raise ConfigError(
            f"{script} --against {against.reference}: run {run_id} is {stored.status}, not "
            "finished: its recorded items are not final. Resume it first, or name a "
            "finished run")
    baseline = Baseline(load_side(reader, run_id), against.margins)
    logger.info("against run %s (%s), margins %s", run_id, baseline.side.label,
                against.margins.text())
    if names.SEQUENTIAL_TAG in stored.tags:
        logger.warning("run %s is a sequential run: it recorded items for the entries it "
                       "called only, and only those are compared", run_id)
    return baseline


def _baseline_id(reader: RunReader, reference: str, script: str) -> str:
    """A run id as :meth:`RunReader.resolve` reads it; of an experiment, its latest finished
    run that was not itself made against a baseline (a pull request's run logged to the
    same experiment is no baseline for the next)."""
    if not reader.is_experiment(reference):
        return reader.resolve(reference)
    for run in reader.evaluation_runs(reference):
        if run.status == "FINISHED" and names.AGAINST_TAG not in run.tags:
            return run.run_id
    raise ConfigError(f"{script} --against {reference}: the experiment has no finished run "
                      "that was not made --against another: name a run id, or evaluate a "
                      "baseline first")


def recorded_against(tags: Mapping[str, str]) -> Against | None:
    """The ``--against`` a run was made with, as its tags record it."""
    if names.AGAINST_TAG not in tags:
        return None
    return Against(tags[names.AGAINST_TAG],
                   Margins.parse([tags[names.AGAINST_MARGIN_TAG]], DEFAULT_MARGIN))


def plan_against(plan: RunPlan, baseline: Baseline, script: str) -> RunPlan:
    """The plan's entries the baseline has an item for, each with the types it has one in;
    refused when they share none, or when a margin names a type the run does not have."""
    items = [_shared(p, baseline) for p in plan.items]
    kept = tuple(p for p in items if p is not None)
    if not kept:
        raise ConfigError(
            f"{script} --against {baseline.run_id}: the baseline has no item of this run's "
            f"selection ({', '.join(plan.types)}): compare runs of the same dataset and "
            "test types")
    shared = replace(plan, items=kept)
    unknown = sorted(set(baseline.margins.per_type) - set(shared.types))
    if unknown:
        raise ConfigError(
            f"{script}: --margin names {', '.join(unknown)}, which this run and the baseline "
            f"do not share; the types they share: {', '.join(shared.types)}")
    return shared


def _shared(planned: PlannedEntry, baseline: Baseline) -> PlannedEntry | None:
    types = tuple(t for t in planned.types if baseline.has(planned.entry, t))
    if not types:
        return None
    calls = planned.calls if REPEATABILITY in types else 1
    return replace(planned, types=types, calls=calls)
