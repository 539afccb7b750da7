"""Comparing two evaluations, gated by the run-to-run noise floor.

A difference between two totals means nothing until it clears the noise of running the same
thing twice (seeds/002). For each test type both runs share, the comparison reports the gap,
which items flipped between A and B in each direction, and the noise floor measured from the
replicates behind A and/or B (the larger of the two when both have one). Only a gap that
clears twice the floor gets a winner; inside it the comparison refuses. Without a floor (no
replicates on either side) the gap is shown with its paired interval over the shared items
(:func:`evalkit.stats.paired_gap`: item sampling only) and is not gated: nothing measured
what running the same thing twice would move.
A floor is read from the pairwise disagreement of the replicates (``stability.json``) and
counts only pairs of replicates that observed a common item: replicates that share no item
measured nothing, and are treated as no floor at all.

When both runs have an accuracy corrected by people's labels for a type (see
:func:`evalkit.stats.check_judge`), the gate is applied to the corrected gap: a judge that
prefers one side's style would otherwise decide the comparison.

A replicate series counts an item by majority over its replicates. An item split evenly (right
in exactly half of an even number of replicates) is undecided: it is neither right nor wrong,
so it is in no flip list and not among the shared items, rather than being tipped either way
by a tie-break; the comparison counts those it left out. The accuracies themselves count
every replicate's verdict.

With margins (``evalkit compare --margin``) the comparison also asks a non-inferiority
question per type: is B (the candidate) no worse than A (the baseline) by more than the
type's margin? It is answered from the paired interval of B - A over the shared items
(:func:`evalkit.stats.margin_check`): no worse, worse by more than the margin, or
INCONCLUSIVE; :func:`margin_verdict` is the comparison's answer over every type given one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from evalkit._errors import ConfigError
from evalkit.records import ItemCell, Mode, RunRecord, RunUsage, SeriesItems, TypeNames, names
from evalkit.review._margins import Margins
from evalkit.stats import (
    CorrectedAccuracy,
    Look,
    MarginCheck,
    MarginVerdict,
    PairedGap,
    SequentialOutcome,
    StabilityDocument,
    judge_checks,
    margin_check,
    paired_gap,
    sequence_margin_check,
    two_sided_z,
)
from evalkit.tracking import RunReader

FLOOR_MULTIPLE = 2.0


class ComparisonVerdict(StrEnum):
    """A's verdict against B for one test type, gated by the noise floor."""

    BETTER = "A better"
    WORSE = "A worse"
    INSIDE_NOISE = "inside the noise"
    NO_FLOOR = "not gated: no noise floor measured (no replicates)"
    """No replicates behind either side, or replicates that share no item: the gap is shown,
    not judged."""

    @property
    def decided(self) -> bool:
        return self in (ComparisonVerdict.BETTER, ComparisonVerdict.WORSE)

    @property
    def refused(self) -> bool:
        """A floor was measured and the gap does not clear it (``evalkit compare`` exits 5
        when no other type's gap clears its floor)."""
        return self is ComparisonVerdict.INSIDE_NOISE


def noise_gate(gap: float, floor: float | None) -> ComparisonVerdict:
    """A's verdict against B for an accuracy gap ``A - B``: a winner only when
    ``|gap| > 2 x floor``."""
    if floor is None:
        return ComparisonVerdict.NO_FLOOR
    if gap > FLOOR_MULTIPLE * floor:
        return ComparisonVerdict.BETTER
    if gap < -FLOOR_MULTIPLE * floor:
        return ComparisonVerdict.WORSE
    return ComparisonVerdict.INSIDE_NOISE


@dataclass(frozen=True)
class Side:
    """One side of a comparison: per test type its accuracy, item verdicts and noise floor."""

    run_id: str
    label: str
    accuracy: Mapping[str, float]
    items: Mapping[str, Mapping[str, bool | None]]
    """type -> item id -> correct; ``None`` for an item whose replicates split evenly."""
    noise_floor: Mapping[str, float]
    corrected: Mapping[str, CorrectedAccuracy] = field(default_factory=dict)
    """type -> the accuracy corrected by people's labels, where the run has one."""
    usage: RunUsage = RunUsage()
    """The tokens and cost the run logged (a series' parent, its replicates' summed; none
    for a series recorded before parents logged them)."""
    run_url: str | None = None
    """The run's page in the MLflow UI, as the run recorded it."""
    against: str | None = None
    """The baseline's run id when this is a sequential run against one (``--against``)."""
    sequences: Mapping[str, tuple[Look, float]] = field(default_factory=dict)
    """Of such a run: type -> its paired gap's confidence sequence at the stop, and the
    type's margin."""


@dataclass(frozen=True)
class CorrectedGap:
    """A - B between two accuracies corrected by people's labels, each from its own run's
    draw: independent, so ``SE = sqrt(SE_A² + SE_B²)`` and a normal interval."""

    gap: float
    standard_error: float
    low: float
    high: float

    @classmethod
    def of(cls, a: CorrectedAccuracy, b: CorrectedAccuracy) -> CorrectedGap:
        error = math.hypot(a.standard_error, b.standard_error)
        half = two_sided_z(a.confidence) * error
        gap = a.estimate - b.estimate
        return cls(gap, error, gap - half, gap + half)


@dataclass(frozen=True)
class MetricComparison:
    test_type: str
    a: float
    b: float
    floor: float | None
    shared_items: int
    right_in_a_only: tuple[str, ...]
    """Items A got right and B got wrong."""
    right_in_b_only: tuple[str, ...]
    corrected: CorrectedGap | None = None
    """The gap between the corrected accuracies, when both runs have one."""
    undecided_items: int = 0
    """Items on both sides left out because a replicate series split evenly on them."""
    paired: PairedGap | None = None
    """The gap over the shared items with its interval (no shared item: ``None``)."""
    margin: MarginCheck | None = None
    """B against A and this type's non-inferiority margin, when one was given."""

    @property
    def gap(self) -> float:
        return self.a - self.b

    @property
    def floor_too_high(self) -> bool:
        """Twice the floor is 100% or more: no accuracy gap can ever clear it."""
        return self.floor is not None and FLOOR_MULTIPLE * self.floor >= 1

    @property
    def verdict(self) -> ComparisonVerdict:
        """The noise gate on the corrected gap where both runs have one (the scorer's errors
        would otherwise decide), else on the raw gap."""
        return noise_gate(self.corrected.gap if self.corrected else self.gap, self.floor)

    def to_json(self) -> dict[str, Any]:
        c = self.corrected
        return {"metric": TypeNames.of(self.test_type).accuracy, "a": self.a, "b": self.b,
                "gap": self.gap, "noise_floor": self.floor,
                "required_gap": None if self.floor is None else FLOOR_MULTIPLE * self.floor,
                "shared_items": self.shared_items, "right_in_a_only": list(self.right_in_a_only),
                "right_in_b_only": list(self.right_in_b_only),
                "undecided_items": self.undecided_items,
                "paired_gap": None if self.paired is None else self.paired.to_json(),
                "corrected_gap": None if c is None else {
                    "gap": c.gap, "standard_error": c.standard_error, "low": c.low,
                    "high": c.high},
                "verdict": str(self.verdict),
                "margin": None if self.margin is None else self.margin.to_json()}


def compare(a: Side, b: Side, margins: Margins | None = None
            ) -> tuple[MetricComparison, ...]:
    """Compare every test type the two sides share; a type with a margin is also checked for
    B no worse than A by more than it. A margin named for a type the sides do not share is
    refused (:class:`ConfigError`)."""
    margins = margins or Margins()
    shared_types = [t for t in a.accuracy if t in b.accuracy]
    unknown = sorted(set(margins.per_type) - set(shared_types))
    if unknown:
        raise ConfigError(f"--margin names {', '.join(unknown)}, which A and B do not both "
                          f"have an accuracy for; the types they share: "
                          f"{', '.join(shared_types) or 'none'}")
    results = []
    for test_type in shared_types:
        floors = [s.noise_floor[test_type] for s in (a, b) if test_type in s.noise_floor]
        items_a, items_b = a.items.get(test_type, {}), b.items.get(test_type, {})
        on_both = [i for i in items_a if i in items_b]
        shared = [i for i in on_both if items_a[i] is not None and items_b[i] is not None]
        a_only = tuple(sorted(i for i in shared if items_a[i] and not items_b[i]))
        b_only = tuple(sorted(i for i in shared if items_b[i] and not items_a[i]))
        both_right = sum(bool(items_a[i] and items_b[i]) for i in shared)
        neither = len(shared) - both_right - len(a_only) - len(b_only)
        margin = margins.of(test_type)
        b_minus_a = paired_gap(both_right, len(b_only), len(a_only), neither)
        sequence = b.sequences.get(test_type) if b.against == a.run_id else None
        if sequence is not None:
            check: MarginCheck | None = sequence_margin_check(b_minus_a, *sequence)
        else:
            check = None if margin is None else margin_check(b_minus_a, margin)
        results.append(MetricComparison(
            test_type, a.accuracy[test_type], b.accuracy[test_type],
            max(floors) if floors else None, len(shared), a_only, b_only,
            CorrectedGap.of(a.corrected[test_type], b.corrected[test_type])
            if test_type in a.corrected and test_type in b.corrected else None,
            undecided_items=len(on_both) - len(shared),
            paired=paired_gap(both_right, len(a_only), len(b_only), neither),
            margin=check))
    return tuple(results)


def margin_verdict(results: Sequence[MetricComparison]) -> MarginVerdict | None:
    """The non-inferiority answer over every type given a margin: worse when any type is
    worse by more than its margin, no worse when every one is no worse, else INCONCLUSIVE;
    ``None`` when no type was given a margin."""
    verdicts = {r.margin.verdict for r in results if r.margin is not None}
    if not verdicts:
        return None
    if MarginVerdict.WORSE in verdicts:
        return MarginVerdict.WORSE
    if verdicts == {MarginVerdict.NO_WORSE}:
        return MarginVerdict.NO_WORSE
    return MarginVerdict.INCONCLUSIVE


def no_winner(results: Sequence[MetricComparison]) -> bool:
    """No type's gap clears its noise floor and at least one was gated ("inside the noise"):
    the comparison cannot call a winner. A type that clears its floor decides, so a type
    inside the noise beside it (one that did not change) does not make it inconclusive."""
    verdicts = [r.verdict for r in results]
    return not any(v.decided for v in verdicts) and any(v.refused for v in verdicts)


def load_side(reader: RunReader, reference: str) -> Side:
    """A side from MLflow: a run id, or an experiment name (its latest finished run)."""
    run_id = reader.resolve(reference)
    record = reader.fetch(run_id)
    types = [t for t in record.tags.get(names.TEST_TYPES_TAG, "").split(",") if t]
    accuracy = {n.test_type: record.metrics[n.accuracy] for n in map(TypeNames.of, types)
                if n.accuracy in record.metrics}
    floors: Mapping[str, float] = {}
    corrected = {t: c.corrected for t, c in judge_checks(record).items()
                 if c.corrected is not None}
    if record.mode == Mode.REPLICATES:
        series = SeriesItems.from_json(record.documents[names.STABILITY_ITEMS_ARTIFACT])
        items = {t: {item: _majority(row) for item, row in rows.items()}
                 for t, rows in series.types.items()}
        floors = shared_item_floors(record)
    else:
        assert record.evaluation is not None
        items = {r.test_type: {i.id: i.correct for i in r.items}
                 for r in record.evaluation.types}
        parent = record.tags.get(names.PARENT_RUN_TAG)
        if parent:
            floors = shared_item_floors(reader.fetch(parent))
    label = f"{record.experiment_name} / {record.run_name}"
    return Side(run_id, label, accuracy, items,
                {t: floor for t, floor in floors.items() if t in types}, corrected,
                RunUsage.from_metrics(record.metrics), record.tags.get(names.RUN_URL_TAG),
                record.tags.get(names.AGAINST_TAG), _sequences(record))


def _sequences(record: RunRecord) -> dict[str, tuple[Look, float]]:
    """A run against a baseline: type -> its sequence at the stop and its margin."""
    doc = record.documents.get(names.SEQUENTIAL_ARTIFACT)
    settled = None if doc is None else SequentialOutcome.from_json(doc)
    if settled is None or settled.against is None:
        return {}
    return {t.test_type: (t.look, t.margin) for t in settled.types if t.margin is not None}


def shared_item_floors(parent: RunRecord) -> dict[str, float]:
    """test type -> noise floor of a replicate series: the largest disagreement rate over the
    pairs of replicates that observed at least one common item. A type whose replicates share
    no item has no floor (its stored rate of 0 over 0 items would wave any gap through)."""
    floors = {}
    for metric in StabilityDocument.from_json(parent.documents[names.STABILITY_ARTIFACT]).metrics:
        rates = [p.rate for p in metric.pairwise if p.shared]
        if rates:
            floors[TypeNames.of_accuracy(metric.metric).test_type] = max(rates)
    return floors


def _majority(cells: Sequence[ItemCell | None]) -> bool | None:
    votes = [c.correct for c in cells if c is not None]
    right = sum(votes)
    if 2 * right == len(votes):
        return None
    return 2 * right > len(votes)
