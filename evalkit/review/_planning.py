"""``evalkit plan``: how many runs a claim needs, computed from what MLflow already holds.

No component is called. From an experiment's runs it measures p, the per-run disagreement
rate, twice: from the repeat outputs of the latest run with repeatability entries, and from
the verdicts of the latest replicate series. It then gives the error of each vote rule for
N = 1..20 with the N each rule needs for a target error, the items-vs-replicates optimum of
every test type measured by replicates and, when a second system is named, intervals for the
contrast between the two over replicates and the replicates a target half-width needs.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from evalkit._errors import ConfigError, NotFound
from evalkit.dataset import REPEATABILITY
from evalkit.records import ItemCell, Mode, RunRecord, SeriesItems, TypeNames, names
from evalkit.reports import render_reports
from evalkit.scorers import normalise
from evalkit.stats import (
    BUDGET_HALF_WIDTH,
    Allocation,
    ContrastPlan,
    Disagreement,
    LabelPlan,
    MeasuredP,
    Plan,
    StabilityDocument,
    allocate,
    disagreement,
    items_and_replicates_t_interval,
    judge_checks,
    nested_bootstrap_variance,
    replicate_mean_t_interval,
    replicates_for_half_width,
    vote_table,
    whole_replicate_bootstrap,
    whole_replicate_bootstrap_variance,
)
from evalkit.tracking import RunReader, StoredRun, Tracker, source_state


@dataclass(frozen=True)
class PlanOptions:
    """What ``evalkit plan`` is asked besides the experiment: its options."""

    target_error: float = 0.01
    """The error each vote rule's N is chosen for."""
    max_n: int = 20
    """The largest N the vote tables go to."""
    against: str | None = None
    """A second system's replicate series (or experiment) to contrast with."""
    contrast_count: int | None = None
    """How many contrasts the intervals are adjusted for (default: the shared types)."""
    half_width: float | None = None
    """The contrast half-width the replicates needed are given for."""
    replicate_cost: float = 1.0
    item_cost: float = 1.0
    """The costs the items-vs-replicates optimum weighs."""


def build_plan(tracker: Tracker, reference: str,
               options: PlanOptions = PlanOptions()) -> Plan:
    """Everything ``evalkit plan`` prints, from the experiment's runs in MLflow.

    ``reference`` names an experiment (its latest runs are read), or a run of one by its id or
    a prefix of it: a replicate series' parent or a run with repeatability entries, read in
    place of the experiment's latest of its kind."""
    reader = tracker.reader
    experiment, runs = _runs_read(reader, reference)
    repeats_run = next((r for r in runs if Mode.of(r.tags) != Mode.REPLICATES
                        and REPEATABILITY in r.tags.get(names.TEST_TYPES_TAG, "").split(",")),
                       None)
    parent_run = next((r for r in runs if Mode.of(r.tags) == Mode.REPLICATES), None)
    measured = []
    if repeats_run is not None:
        measured += _measured_by_repeats(reader.fetch(repeats_run.run_id), options)
    parent = reader.fetch(parent_run.run_id) if parent_run is not None else None
    allocations: dict[str, Allocation] = {}
    if parent is not None:
        measured += _measured_by_replicates(parent, options)
        allocations = _allocations(parent, options)
    if not measured:
        raise NotFound(f"experiment {experiment!r} has no finished run with repeatability "
                       "entries and no replicate series: run make eval (with repeatability "
                       "entries) or make eval-replicates first")
    contrasts: tuple[ContrastPlan, ...] = ()
    if options.against is not None:
        contrasts = _contrasts_against(reader, reference, experiment, parent, options)
    return Plan(experiment, options.target_error, tuple(measured), allocations,
                None if parent is None else parent.run_id, options.against, contrasts,
                options.contrast_count or len(contrasts), options.half_width,
                _label_plans(reader, runs))


def _runs_read(reader: RunReader, reference: str) -> tuple[str, list[StoredRun]]:
    """The experiment ``reference`` names, and its finished evaluation runs, newest first (a
    run named by id first of all: it is the one read for its kind)."""
    named = None if reader.is_experiment(reference) else reader.stored(
        reader.resolve(reference))
    experiment = reference if named is None else reader.experiment_name(named)
    runs = [r for r in reader.evaluation_runs(experiment) if r.status == "FINISHED"]
    if named is not None:
        runs = [named, *(r for r in runs if r.run_id != named.run_id)]
    return experiment, runs


def _measured_by_repeats(record: RunRecord, options: PlanOptions) -> list[MeasuredP]:
    """p from the repeat outputs of a run with repeatability entries (none if it has none)."""
    found = disagreement("repeats", _repeat_answers(record))
    if found is None:
        return []
    return [_measured("repeats", record.run_id, found, options.target_error, options.max_n)]


def _measured_by_replicates(parent: RunRecord, options: PlanOptions) -> list[MeasuredP]:
    """p from the verdicts of a replicate series (none if no item was scored twice)."""
    items = SeriesItems.from_json(parent.documents[names.STABILITY_ITEMS_ARTIFACT])
    found = disagreement("replicates", [
        [c.correct for c in row if c is not None]
        for rows in items.types.values() for row in rows.values()])
    if found is None:
        return []
    return [_measured("replicates", parent.run_id, found, options.target_error, options.max_n)]


def _allocations(parent: RunRecord, options: PlanOptions) -> dict[str, Allocation]:
    """Each test type's items-vs-replicates optimum, where the series split its variance."""
    stability = StabilityDocument.from_json(parent.documents[names.STABILITY_ARTIFACT])
    return {TypeNames.of_accuracy(metric.metric).test_type: allocate(
                metric.components, options.replicate_cost, options.item_cost)
            for metric in stability.metrics if metric.components is not None}


def _contrasts_against(reader: RunReader, reference: str, experiment: str,
                       parent: RunRecord | None,
                       options: PlanOptions) -> tuple[ContrastPlan, ...]:
    """The contrasts between the experiment's series and the one ``options.against`` names."""
    assert options.against is not None
    if parent is None:
        raise NotFound(f"contrasts need replicates of {experiment!r}: run "
                       "make eval-replicates first")
    other = reader.fetch(reader.resolve(options.against, mode=Mode.REPLICATES))
    if other.run_id == parent.run_id:
        raise ConfigError(f"{reference!r} and --against {options.against!r} are the same "
                          f"replicate series ({parent.run_id}): a system contrasted with itself "
                          "differs by nothing; name the other system's series")
    return _contrasts(parent, other, options.contrast_count, options.half_width)


def _label_plans(reader: RunReader, runs: Sequence[StoredRun]) -> tuple[LabelPlan, ...]:
    """The label budget of each judged or labelled type of the latest run that has one."""
    for run in (r for r in runs if Mode.of(r.tags) == Mode.EVALUATION):
        checks = judge_checks(reader.fetch(run.run_id))
        if checks:
            return tuple(LabelPlan(
                t, run.run_id, len(c.drawn_labels), BUDGET_HALF_WIDTH,
                None if c.budget is None else {"pass" if h else "fail": n
                                               for h, n in c.budget.needed.items()},
                None if c.budget is None else c.budget.more) for t, c in checks.items())
    return ()


def record_plan(tracker: Tracker, plan: Plan, reports_dir: Path,
                parameters: Mapping[str, str]) -> tuple[str, Path, str]:
    """Log the plan as a planning run (tag ``mode=planning``) beside the experiment, render
    ``report-planning.md`` from that run, and write it to ``reports_dir``.

    Returns the run id, the report's path and its text."""
    source = tracker.reader.stored(plan.allocation_run or plan.measured[0].run_id).params
    params = {**{k: source[k] for k in (names.DATASET_PATH_PARAM, names.DATASET_DIGEST_PARAM,
                                        names.DATASET_ENTRIES_PARAM) if k in source},
              **parameters}
    tags = {names.MODE_TAG: Mode.PLANNING, **source_state("evalkit plan").tags}
    with tracker.run(names.planning_experiment(plan.experiment),
                     f"plan {datetime.now(UTC):%m-%d %H:%M}", params,
                     tags) as run:
        run.log_json(names.PLAN_ARTIFACT, plan.to_json())
        (path,) = run.publish_reports(render_reports(run.record()), reports_dir)
    return run.id, path, path.read_text(encoding="utf-8")


def _measured(source: str, run_id: str, found: Disagreement, target: float,
              max_n: int) -> MeasuredP:
    return MeasuredP(source, run_id, found, vote_table(found.p, target, max_n),
                     vote_table(found.interval.high, target, max_n))


def _repeat_answers(record: RunRecord) -> list[list[str]]:
    """Each repeatability entry's outputs as comparable answers (exact-normalised)."""
    assert record.evaluation is not None
    result = next((t for t in record.evaluation.types if t.test_type == REPEATABILITY), None)
    if result is None:
        return []
    return [[json.dumps(normalise(o), sort_keys=True) for o in item.outputs]
            for item in result.items if item.error is None]


def _contrasts(a: RunRecord, b: RunRecord, contrast_count: int | None,
               half_width: float | None) -> tuple[ContrastPlan, ...]:
    """A minus B per shared test type, replicate r of A paired with replicate r of B."""
    if b.mode != Mode.REPLICATES:
        raise ConfigError(f"run {b.run_id} is not a replicate series' parent: --against takes "
                          "a series' parent run id, or an experiment (its latest series)")
    items_a = SeriesItems.from_json(a.documents[names.STABILITY_ITEMS_ARTIFACT]).types
    items_b = SeriesItems.from_json(b.documents[names.STABILITY_ITEMS_ARTIFACT]).types
    shared_types = [t for t in items_a if t in items_b]
    k = contrast_count or len(shared_types)
    plans = []
    for test_type in shared_types:
        rows_a, rows_b = items_a[test_type], items_b[test_type]
        n = min(len(next(iter(rows_a.values()))), len(next(iter(rows_b.values()))))
        shared = sorted(i for i in rows_a if i in rows_b
                        and all(rows_a[i][r] is not None and rows_b[i][r] is not None
                                for r in range(n)))
        if n < 2 or not shared:
            continue
        matrix = [[float(_cell(rows_a[i][r]).correct) - float(_cell(rows_b[i][r]).correct)
                   for i in shared] for r in range(n)]
        differences = tuple(statistics.fmean(row) for row in matrix)
        t_interval = replicate_mean_t_interval(differences, k)
        plans.append(ContrastPlan(
            test_type, differences, len(shared), t_interval,
            items_and_replicates_t_interval(matrix, k) if len(shared) >= 2 else None,
            whole_replicate_bootstrap(differences, k), nested_bootstrap_variance(matrix),
            whole_replicate_bootstrap_variance(matrix),
            None if half_width is None else replicates_for_half_width(
                statistics.stdev(differences), half_width, k)))
    return tuple(plans)


def _cell(cell: ItemCell | None) -> ItemCell:
    assert cell is not None  # only items every replicate of both sides scored are shared
    return cell
