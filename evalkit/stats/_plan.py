"""How many runs a claim needs: :class:`Plan`, the typed ``planning/plan.json`` of a planning
run. It gathers results of this package (the measured p and its vote errors, the
items-vs-replicates allocation, contrast intervals) and reads back what it writes:
``Plan.from_json(plan.to_json()) == plan``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalkit.stats._budget import Allocation
from evalkit.stats._contrasts import ContrastInterval, bootstrap_coverage
from evalkit.stats._one_run import WilsonInterval
from evalkit.stats._votes import DECISION_CROSSOVER_P, Disagreement, VoteTable

ITEMS_COVERED = "the difference on the evaluated items"
POPULATION_COVERED = "the difference on the population of items (items and replicates resampled)"


@dataclass(frozen=True)
class MeasuredP:
    source: str
    """``repeats`` or ``replicates``."""
    run_id: str
    disagreement: Disagreement
    table: VoteTable
    """Vote errors at the measured p."""
    conservative: VoteTable
    """Vote errors at the upper end of p's 95% interval."""

    def to_json(self) -> dict[str, Any]:
        d = self.disagreement
        return {"source": self.source, "run_id": self.run_id, "p": d.p, "minority": d.minority,
                "observations": d.observations, "groups": d.groups,
                "ci_lower": d.interval.low, "ci_upper": d.interval.high,
                "vote_error": self.table.to_json(),
                "vote_error_at_ci_upper": self.conservative.to_json()}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> MeasuredP:
        interval = WilsonInterval(doc["minority"], doc["observations"], 0.95, doc["ci_lower"],
                                  doc["ci_upper"])
        return cls(doc["source"], doc["run_id"],
                   Disagreement(doc["source"], doc["minority"], doc["observations"],
                                doc["groups"], interval),
                   VoteTable.from_json(doc["vote_error"]),
                   VoteTable.from_json(doc["vote_error_at_ci_upper"]))


@dataclass(frozen=True)
class ContrastPlan:
    test_type: str
    differences: tuple[float, ...]
    """A_r: mean over shared items of (A minus B) in replicate r."""
    items: int
    t_interval: ContrastInterval
    """Covers the difference on the evaluated items (they are held fixed)."""
    population_interval: ContrastInterval | None
    """Also resamples items: covers the difference on the population they were drawn from
    (``None`` with a single shared item)."""
    bootstrap: ContrastInterval
    """Shown with its measured small-n coverage; it decides nothing."""
    nested_variance: float
    whole_replicate_variance: float
    replicates_needed: int | None
    """For the target half-width at the observed SD of A_r, when a half-width is given."""

    @property
    def bootstrap_coverage(self) -> float | None:
        """The bootstrap interval's measured coverage at its number of replicates."""
        return bootstrap_coverage(self.bootstrap.n)

    def to_json(self) -> dict[str, Any]:
        population = self.population_interval
        return {
            "test_type": self.test_type, "differences": list(self.differences),
            "items": self.items, "t_interval": self.t_interval.to_json(),
            "t_interval_covers": ITEMS_COVERED,
            "population_interval": None if population is None else population.to_json(),
            "population_interval_covers": POPULATION_COVERED,
            "bootstrap": self.bootstrap.to_json(),
            "bootstrap_measured_coverage": self.bootstrap_coverage,
            "nested_bootstrap_variance": self.nested_variance,
            "whole_replicate_bootstrap_variance": self.whole_replicate_variance,
            "replicates_needed": self.replicates_needed}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ContrastPlan:
        population = doc["population_interval"]
        return cls(doc["test_type"], tuple(doc["differences"]), doc["items"],
                   ContrastInterval.from_json(doc["t_interval"]),
                   None if population is None else ContrastInterval.from_json(population),
                   ContrastInterval.from_json(doc["bootstrap"]),
                   doc["nested_bootstrap_variance"], doc["whole_replicate_bootstrap_variance"],
                   doc["replicates_needed"])


@dataclass(frozen=True)
class LabelPlan:
    """The labels one type of the latest labelled or judged run needs for a corrected
    interval of ``half_width`` (see :func:`evalkit.stats.labels_for_half_width`)."""

    test_type: str
    run_id: str
    labels_drawn: int
    half_width: float
    needed: Mapping[str, int] | None
    """``pass``/``fail`` (the scorer's verdicts) -> labels in all; ``None`` when the entries,
    not the labels, keep the interval wider."""
    more: int | None

    def to_json(self) -> dict[str, Any]:
        return {"test_type": self.test_type, "run_id": self.run_id,
                "labels_drawn": self.labels_drawn, "half_width": self.half_width,
                "needed": None if self.needed is None else dict(self.needed),
                "more": self.more}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> LabelPlan:
        return cls(doc["test_type"], doc["run_id"], doc["labels_drawn"], doc["half_width"],
                   doc["needed"], doc["more"])


@dataclass(frozen=True)
class Plan:
    """Everything ``evalkit plan`` works out for an experiment."""

    experiment: str
    target_error: float
    measured: tuple[MeasuredP, ...]
    allocations: Mapping[str, Allocation]
    """test type -> the items-vs-replicates optimum of the latest replicate series."""
    allocation_run: str | None
    against: str | None
    """The second system of the contrasts, when one was named."""
    contrasts: tuple[ContrastPlan, ...]
    contrast_count: int
    half_width: float | None
    labels: tuple[LabelPlan, ...] = ()
    """The people's labels the latest labelled or judged run needs, per type."""

    def to_json(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment, "target_error": self.target_error,
            "decision_crossover_p": DECISION_CROSSOVER_P,
            "measured_p": [m.to_json() for m in self.measured],
            "items_vs_replicates": {"run_id": self.allocation_run, "types": {
                t: a.to_json() for t, a in self.allocations.items()}},
            "contrasts": None if self.against is None else {
                "against": self.against, "contrasts": self.contrast_count,
                "half_width": self.half_width,
                "types": [c.to_json() for c in self.contrasts]},
            "labels": [x.to_json() for x in self.labels],
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Plan:
        allocation, contrasts = doc["items_vs_replicates"], doc["contrasts"]
        return cls(
            experiment=doc["experiment"], target_error=doc["target_error"],
            measured=tuple(MeasuredP.from_json(m) for m in doc["measured_p"]),
            allocations={t: Allocation.from_json(a) for t, a in allocation["types"].items()},
            allocation_run=allocation["run_id"],
            against=None if contrasts is None else contrasts["against"],
            contrasts=() if contrasts is None else tuple(
                ContrastPlan.from_json(c) for c in contrasts["types"]),
            contrast_count=0 if contrasts is None else contrasts["contrasts"],
            half_width=None if contrasts is None else contrasts["half_width"],
            labels=tuple(LabelPlan.from_json(x) for x in doc.get("labels", ())))
