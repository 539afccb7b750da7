"""Replicate mode: run the whole selection ``REPLICATES`` times and measure how far it moves.

In MLflow a parent run holds the stability figures and ``report-stability.md``; each
replicate is an ordinary nested child run with its own metrics and reports. Every replicate
gets its own seed, derived from ``ROOT_SEED``, the pack id (the experiment name) and the
replicate index, handed to the component as ``call.seed``, and recorded: as a child tag, in
the parent's params and in ``replicates.lock.json`` next to the reports. A rerun reads the
seeds back from the lock, so it matches rather than being asserted to.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit._errors import RunInterrupted
from evalkit.calls import Component, EntryOutputs, Selection
from evalkit.config import EvalConfig
from evalkit.evaluation._context import RunContext
from evalkit.evaluation._evaluate import warn_unsynced
from evalkit.evaluation._evaluation import evaluation_in
from evalkit.evaluation._outcome import EvaluationOutcome
from evalkit.evaluation._prepare import (
    PreparedEvaluation,
    RunRole,
    prepare,
    refuse_sequential_mode,
)
from evalkit.records import MetricPoint, Mode, RunUsage, SeriesItems, TypeNames, names
from evalkit.reports import render_reports
from evalkit.stats import (
    SEED_DERIVATION,
    PassK,
    ReplicateStability,
    StabilityDocument,
    StabilitySummary,
    replicate_seed,
    replicate_stability,
)
from evalkit.tracking import Assessment, TrackedRun, answers_of, stability_assessment

logger = logging.getLogger("evalkit")

LOCK_FILE = "replicates.lock.json"
_RERUN = ("a replicate series is not resumed: run --replicates again (the same ROOT_SEED "
          "gives the same seeds)")
STABILITY_FILE = "stability.json"


@dataclass(frozen=True)
class SeedLock:
    """The seeds of a pack's replicates, as recorded by an earlier run."""

    pack_id: str
    root_seed: int
    seeds: tuple[int, ...]

    @classmethod
    def load(cls, path: Path) -> SeedLock | None:
        if not path.is_file():
            return None
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> SeedLock:
        return cls(doc["pack_id"], doc["root_seed"],
                   tuple(r["seed"] for r in sorted(doc["replicates"],
                                                   key=lambda r: r["replicate"])))

    def to_json(self) -> dict[str, Any]:
        # No run ids: the lock is meant to be committed, and run ids belong to one store.
        return {"pack_id": self.pack_id, "root_seed": self.root_seed,
                "derivation": SEED_DERIVATION,
                "replicates": [{"replicate": r, "seed": seed}
                               for r, seed in enumerate(self.seeds)]}


def seeds_for(pack_id: str, root_seed: int, replicates: int,
              lock: SeedLock | None = None) -> SeedLock:
    """Seeds of replicates 0..n-1: those recorded in ``lock`` for the same pack and root seed,
    derived (see :func:`replicate_seed`) for the rest."""
    recorded: tuple[int, ...] = ()
    if lock is not None and (lock.pack_id, lock.root_seed) == (pack_id, root_seed):
        recorded = lock.seeds
    return SeedLock(pack_id, root_seed, tuple(
        recorded[r] if r < len(recorded) else replicate_seed(root_seed, pack_id, r)
        for r in range(replicates)))


@dataclass(frozen=True)
class ReplicatesOutcome:
    parent_run_id: str
    experiment_name: str
    tracking_uri: str
    replicates: tuple[EvaluationOutcome, ...]
    stability: tuple[ReplicateStability, ...]
    reports: tuple[Path, ...]
    lock_path: Path
    stability_path: Path
    run_url: str
    """The parent run's page in the MLflow UI."""

    @property
    def reliability(self) -> dict[str, PassK]:
        """Test type -> its pass@k and pass^k over the replicates."""
        return {TypeNames.of_accuracy(s.metric).test_type: s.reliability for s in self.stability}

    @property
    def failures(self) -> tuple[str, ...]:
        return tuple(f"replicate {i}: {failure}" for i, outcome in enumerate(self.replicates)
                     for failure in outcome.failures)

    @property
    def passed(self) -> bool:
        return not self.failures


def evaluate_replicates(config: EvalConfig, component: Component, selection: Selection,
                        context: RunContext | None = None) -> ReplicatesOutcome:
    """Run the selection ``config.replicates`` times under one parent MLflow run."""
    context = context or RunContext()
    refuse_sequential_mode(config, selection, "--replicates")
    prepared = prepare(config, selection)
    tracker = context.store
    lock_path = config.reports_dir / LOCK_FILE
    seeds = seeds_for(config.experiment_name, config.root_seed, config.replicates,
                      SeedLock.load(lock_path))
    tags = {**prepared.tags(), names.MODE_TAG: Mode.REPLICATES,
            names.REPLICATES_TAG: str(config.replicates),
            names.ROOT_SEED_TAG: str(config.root_seed)}
    params = {**prepared.params(), names.REPLICATES_PARAM: str(config.replicates),
              names.ROOT_SEED_PARAM: str(config.root_seed),
              **{names.seed_param(r): str(seed) for r, seed in enumerate(seeds.seeds)}}
    warn_unsynced(tracker)
    with tracker.run(config.experiment_name, prepared.run_name(f"×{config.replicates} "), params,
                     tags, traced=config.trace_calls) as parent, context.stop.open_run():
        prepared.record_source(parent)
        logger.info("replicates: parent MLflow run %s, %d replicates, seeds %s", parent.id,
                    config.replicates, ", ".join(map(str, seeds.seeds)))
        children = _replicates(parent, prepared, component, context, seeds)
        stability = _stability_of(prepared, children)
        document = StabilityDocument(seeds.pack_id, seeds.root_seed, seeds.seeds,
                                     tuple(StabilitySummary.of(s) for s in stability))
        _log_series(parent, seeds, document, stability, children)
        written = parent.publish_reports(render_reports(parent.record()), config.reports_dir)
        lock_path.write_text(_dump(seeds.to_json()), encoding="utf-8")
        stability_path = config.reports_dir / STABILITY_FILE
        stability_path.write_text(_dump(document.to_json()), encoding="utf-8")
    return ReplicatesOutcome(parent.id, config.experiment_name, tracker.tracking_uri,
                             tuple(children), stability, written, lock_path, stability_path,
                             f"{parent.url}/traces" if config.trace_calls else parent.url)


def _replicates(parent: TrackedRun, prepared: PreparedEvaluation, component: Component,
                context: RunContext, seeds: SeedLock) -> list[EvaluationOutcome]:
    """Each replicate as a child run of ``parent``, with its own seed; then every entry's
    answers across them, and the stability of the items they cover, on the parent's traces."""
    config = prepared.config
    children: list[EvaluationOutcome] = []
    calls: list[list[EntryOutputs]] = []  # each replicate's, by entry: the parent's traces
    for replicate, seed in enumerate(seeds.seeds):
        if context.stop.requested:
            raise RunInterrupted(f"interrupted: replicate series {parent.id} marked KILLED; "
                                 f"{_RERUN}")
        role = RunRole(tags={names.REPLICATE_TAG: str(replicate), names.SEED_TAG: str(seed)},
                       name_prefix=f"r{replicate}", seed=seed, replicate=replicate,
                       local_reports=False, rerun=_RERUN)
        opening = parent.child(role.name_prefix, prepared.params(),
                               {**prepared.tags(), **role.tags}, raw_dir=context.runs_dir,
                               traced=config.trace_calls)
        with evaluation_in(opening, prepared, component, context, role) as evaluation:
            children.append(evaluation.complete())
            calls.append(evaluation.outputs)
            if replicate == len(seeds.seeds) - 1:  # the run that completes the series
                evaluation.run.traces.add_assessments(_stability_assessments(children))
    parent.traces.write_series(_answers(prepared, calls), _stability_assessments(children))
    return children


def _log_series(parent: TrackedRun, seeds: SeedLock, document: StabilityDocument,
                stability: Sequence[ReplicateStability],
                children: Sequence[EvaluationOutcome]) -> None:
    """The parent run's metrics, verdict, seeds and stability documents."""
    usage = RunUsage.total(c.usage for c in children).to_metrics()
    metrics = _parent_metrics(stability, len(seeds.seeds))
    metrics += [MetricPoint(key, value) for key, value in usage.items()]
    verdict = "PASS" if all(c.passed for c in children) else "FAIL"
    parent.log(metrics, names.verdict_tags(verdict, parent.journal.run_name))
    parent.log_json(names.LOCK_ARTIFACT, seeds.to_json())
    parent.log_json(names.STABILITY_ARTIFACT, document.to_json())
    parent.log_json(names.STABILITY_ITEMS_ARTIFACT,
                    SeriesItems.of([c.scored for c in children]).to_json())


def _stability_of(prepared: PreparedEvaluation,
                  children: Sequence[EvaluationOutcome]) -> tuple[ReplicateStability, ...]:
    """One :class:`ReplicateStability` per test type, over item x replicate correctness."""
    results = []
    for test_type in prepared.plan.types:
        table: dict[str, dict[int, bool]] = {}
        for index, child in enumerate(children):
            for item in child.scored.type_result(test_type).items:
                table.setdefault(item.id, {})[index] = item.correct
        if table:
            results.append(replicate_stability(TypeNames.of(test_type).accuracy, table))
    return tuple(results)


def _parent_metrics(stability: Sequence[ReplicateStability],
                    replicates: int) -> list[MetricPoint]:
    """The parent run's metrics; ``<type>_accuracy`` is the mean over replicates, so history
    and compare read a parent like any other run."""
    # the accuracies first: MLflow's run lists show metric columns in the order logged
    points = [MetricPoint(TypeNames.of_accuracy(s.metric).accuracy, s.mean) for s in stability]
    points.append(MetricPoint(names.REPLICATES_METRIC, replicates))
    for s in stability:
        n = TypeNames.of_accuracy(s.metric)
        points += [MetricPoint(n.spread, s.spread),
                   MetricPoint(n.unstable_items, s.unstable_items),
                   MetricPoint(n.repeated_items, s.repeated_items)]
        points += [MetricPoint(n.replicate_accuracy, successes / count, r)
                   for r, (successes, count) in s.rates.items()]
        optional: dict[str, float | None] = {n.sd: s.sd, n.noise_floor: s.noise_floor}
        if s.interval is not None:
            optional |= {n.ci_lower: s.interval.low, n.ci_upper: s.interval.high,
                         n.effective_n: s.interval.n_eff}
        if s.components is not None:
            optional |= {n.completion_variance: s.components.completion,
                         n.item_variance: s.components.item,
                         n.total_variance: s.components.total}
        points += [MetricPoint(key, value) for key, value in optional.items()
                   if value is not None]
        points += _pass_k_metrics(n, s.reliability)
    return points


def _pass_k_metrics(type_names: TypeNames, reliability: PassK) -> list[MetricPoint]:
    """``<type>_pass_at_<k>`` and ``<type>_pass_hat_<k>`` with their interval bounds, k = 1
    to the replicates."""
    points = []
    for row in reliability.by_k:
        for metric, mean in ((type_names.pass_at(row.k), row.pass_at),
                             (type_names.pass_hat(row.k), row.pass_hat)):
            lower, upper = names.interval_metrics(metric)
            points += [MetricPoint(metric, mean.value), MetricPoint(lower, mean.low),
                       MetricPoint(upper, mean.high)]
    return points


def _stability_assessments(children: Sequence[EvaluationOutcome]
                           ) -> dict[str, list[Assessment]]:
    """Entry id -> the stability of each item covering it, for the last replicate's traces."""
    verdicts: dict[str, list[Assessment]] = {}
    for test_type, rows in SeriesItems.of([c.scored for c in children]).types.items():
        members = {i.id: i.entry_ids for c in children
                   for i in c.scored.type_result(test_type).items}
        for item_id, row in rows.items():
            for entry_id in members[item_id]:
                verdicts.setdefault(entry_id, []).append(stability_assessment(test_type, row))
    return verdicts


def _answers(prepared: PreparedEvaluation, replicates: Sequence[Sequence[EntryOutputs]]
             ) -> dict[str, tuple[Any, dict[str, Any]]]:
    """Entry id -> its input and each replicate's answers (``r0``...): the output of its one
    call, or every repeat's output (or error) in repeat order, so that repeats that differ
    within a replicate show as plainly as replicates that differ."""
    answers: dict[str, tuple[Any, dict[str, Any]]] = {}
    for replicate, outputs in enumerate(replicates):
        for entry in outputs:
            _, by_replicate = answers.setdefault(
                entry.entry.id, (prepared.redactor.value(entry.entry.input), {}))
            by_replicate[f"r{replicate}"] = answers_of(entry.calls)
    return answers


def _dump(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
