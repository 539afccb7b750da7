"""One evaluation, end to end: dataset -> plan -> calls -> scores -> metrics -> MLflow -> reports.

Data flows one way. Everything that can be wrong with the dataset, the constants, the judge
endpoint or the tracking destination is checked before the first component call. Once calls
start, each output is on disk the moment it is made; an interruption or a crash marks the run
(KILLED or FAILED) and still uploads the raw results, from which ``resume`` continues it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit._errors import ConfigError, RunInterrupted
from evalkit.config import EvalConfig
from evalkit.records import (
    RAW_ARTIFACT_DIR,
    REPORTS_ARTIFACT_DIR,
    MetricPoint,
    ScoredRun,
)
from evalkit.reports import DESCRIPTION_TAG, render_reports, run_description
from evalkit.run._async_loop import run_component_calls
from evalkit.run._call import CallRecord, Component
from evalkit.run._loop import EntryOutputs
from evalkit.run._prepare import PreparedEvaluation, RunRole, prepare
from evalkit.run._progress import Progress
from evalkit.run._raw import RawResultsLog, repair_raw_results, run_lock
from evalkit.run._scoring import EarlyJudging, score_run
from evalkit.run._selection import Selection
from evalkit.run._signals import stop_signals
from evalkit.stats import TypeMetrics, latency_percentiles
from evalkit.tracking import Tracker, TrackingOffline, shown_uri, unsynced_bundles

logger = logging.getLogger("evalkit")

RUNS_DIR = Path(".evalkit") / "runs"
RAW_RESULTS_FILE = "raw-results.jsonl"


@dataclass(frozen=True)
class EvaluationOutcome:
    """What a finished evaluation produced and whether it met its thresholds."""

    run_id: str
    experiment_name: str
    tracking_uri: str
    metrics: tuple[TypeMetrics, ...]
    scored: ScoredRun
    reports: tuple[Path, ...]
    """Reports written to the reports folder (none for a replicate: those stay in MLflow)."""
    raw_results: Path
    run_url: str
    """The run's page in the MLflow UI (never with credentials)."""
    timings: Mapping[str, float] = field(default_factory=dict)
    """Seconds spent per phase: calls, scoring, logging, reports, closing."""

    @property
    def failures(self) -> tuple[str, ...]:
        return tuple(f for m in self.metrics for f in m.failures)

    @property
    def passed(self) -> bool:
        return not self.failures


def evaluate(config: EvalConfig, component: Component, selection: Selection, *,
             tracker: Tracker | None = None, runs_dir: Path = RUNS_DIR) -> EvaluationOutcome:
    """Run one evaluation; raise an :class:`EvalkitError` subclass on any failure."""
    return run_prepared(prepare(config, selection), component, tracker or Tracker(), runs_dir)


def run_prepared(prepared: PreparedEvaluation, component: Component, tracker: Tracker,
                 runs_dir: Path = RUNS_DIR, role: RunRole | None = None) -> EvaluationOutcome:
    """One MLflow run of a prepared evaluation, in the given role (alone by default)."""
    role = role or RunRole()
    run_id = tracker.start_run(prepared.config.experiment_name,
                               prepared.run_name(role.name_prefix), prepared.params(),
                               {**prepared.tags(), **role.tags})
    tracker.log_prompts(run_id, {p.registry_name: p.registry_template()
                                 for p in prepared.scorers.judge_prompts.values()})
    for bundle in unsynced_bundles(tracker.bundles_dir):
        logger.warning("bundle %s has not been uploaded yet: evalkit sync %s", bundle, bundle)
    with run_lock(runs_dir / run_id, run_id):
        return _complete(prepared, component, tracker, run_id, runs_dir, role)


def resume(config: EvalConfig, component: Component, run_id: str, *,
           tracker: Tracker | None = None, runs_dir: Path = RUNS_DIR) -> EvaluationOutcome:
    """Continue an interrupted run: every call it recorded is reused, only the missing calls
    are made, and the run ends as an uninterrupted run with the same outputs would have.

    The run must have been made by this eval script with the same constants and dataset."""
    tracker = tracker or Tracker()
    tracker.check_reachable()
    # Locked before the run is read: a second resume of the same run is refused outright.
    with run_lock(runs_dir / run_id, run_id):
        prepared, recorded = _resumable(config, tracker, run_id, runs_dir)
        return _complete(prepared, component, tracker, run_id, runs_dir, RunRole(), recorded)


def _resumable(config: EvalConfig, tracker: Tracker, run_id: str, runs_dir: Path
               ) -> tuple[PreparedEvaluation, dict[tuple[str, int], CallRecord]]:
    """Check that the run can be resumed by this script, reopen it, and return its plan with
    the calls it recorded."""
    run = tracker.run_data(run_id)
    tags = run.data.tags
    if run.info.status == "FINISHED":
        raise ConfigError(f"run {run_id} finished: there is nothing to resume")
    if tags.get("mode") or "mlflow.parentRunId" in tags:
        raise ConfigError(f"run {run_id} is part of a {tags.get('mode') or 'replicate'} "
                          "series; only ordinary runs can be resumed")
    if "eval_type" not in tags:
        raise ConfigError(f"run {run_id} was not made by evalkit (no eval_type tag)")
    groups = tags.get("groups_filter", "all")
    prepared = prepare(config, Selection.parse(tags["eval_type"],
                                               None if groups == "all" else groups,
                                               tags.get("human_review_only") == "true"))
    changed = sorted(k for k, v in prepared.params().items()
                     if k in run.data.params and run.data.params[k] != v)
    if changed:
        raise ConfigError(f"run {run_id} was made with other settings ({', '.join(changed)} "
                          "differ): resuming would mix two evaluations. Restore them, or "
                          "start a new run")
    raw_path = runs_dir / run_id / RAW_RESULTS_FILE
    if not raw_path.exists():
        raw_path.parent.mkdir(parents=True, exist_ok=True)
        raw_path.write_text(tracker.read_text(run_id, f"{RAW_ARTIFACT_DIR}/{RAW_RESULTS_FILE}"),
                            encoding="utf-8")
    raw = repair_raw_results(raw_path)
    if raw.torn is not None:
        logger.warning("the last line of %s was cut mid-write (%r...): that call was not "
                       "kept and will be made again", raw_path, raw.torn[:40])
    recorded = {(c.entry_id, c.repeat): c for c in raw.records}
    total = prepared.plan.total_calls
    saved = sum((p.entry.id, r) in recorded for p in prepared.plan.items
                for r in range(p.calls))
    tracker.resume_run(run_id, {"resumed": "true", "resume_calls_saved": str(saved),
                                "resume_calls_made": str(total - saved)})
    logger.info("resuming run %s: %d of %d calls recorded, %d to make", run_id, saved, total,
                total - saved)
    return prepared, recorded


def _complete(prepared: PreparedEvaluation, component: Component, tracker: Tracker,
              run_id: str, runs_dir: Path, role: RunRole,
              recorded: Mapping[tuple[str, int], CallRecord] | None = None
              ) -> EvaluationOutcome:
    """The calls, scores, metrics and reports of a started (or resumed) run."""
    config, plan = prepared.config, prepared.plan
    recorded = recorded or {}
    raw_path = runs_dir / run_id / RAW_RESULTS_FILE
    missing = {p.entry.id: sum((p.entry.id, r) not in recorded for r in range(p.calls))
               for p in plan.items}
    logger.info("MLflow run %s in experiment %s (%s); %d entries, %d calls; raw results: %s",
                run_id, config.experiment_name, shown_uri(tracker.tracking_uri), len(plan.items),
                sum(missing.values()), raw_path)

    status = "FAILED"
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    prepared.scorers.reset_judge_stats()
    progress = Progress({entry_id: n for entry_id, n in missing.items() if n},
                        retries=prepared.scorers.judge_retries)
    judging = EarlyJudging(prepared.scorers)
    # Each entry's input and expected output as traces show them, redacted once per entry.
    shown = {p.entry.id: (prepared.redactor.value(p.entry.input),
                          prepared.redactor.value(p.entry.expected_output))
             for p in plan.items} if config.trace_calls else {}

    def traced(record: CallRecord) -> dict[str, Any]:
        given, expected = shown[record.entry_id]
        return {**record.to_json(), "input": given, "expected": expected}

    def on_call(record: CallRecord) -> None:
        progress.call_done(record.entry_id, record.error is not None)
        if config.trace_calls and not recorded:  # traces written while the calls run
            tracker.trace_call(run_id, traced(record), missing[record.entry_id])

    if config.trace_calls:
        tracker.begin_traces(run_id, sum(missing.values()), shown)
    if prepared.scorers.judge is not None:
        logger.info("judging with %s, each entry as soon as its calls are in",
                    prepared.scorers.judge.model)
    with stop_signals() as signals:
        try:
            with RawResultsLog(raw_path) as raw_log:
                try:
                    outputs = run_component_calls(
                        plan, component, config.mock_adapters, raw_log, prepared.redactor,
                        seed=role.seed, replicate=role.replicate,
                        concurrency=config.max_concurrency, call_timeout=config.call_timeout,
                        recorded=recorded, on_call=on_call, follow_ups=judging.follow_ups)
                finally:
                    progress.finish()
                clock = _lap(timings, "calls", clock)
                if config.trace_calls:  # the rest written while the calls are scored
                    tracker.start_traces(run_id, [traced(c) for o in outputs for c in o.calls])
                # Judge errors can quote the provider; nothing leaves the run unredacted.
                scored = ScoredRun.from_json(prepared.redactor.value(
                    score_run(outputs, plan.types, prepared.scorers,
                              judging.verdicts).to_json()))
            metrics = tuple(TypeMetrics.from_result(r, prepared.thresholds[r.test_type])
                            for r in scored.types)
            for result in scored.types:
                for skipped in result.skipped:
                    logger.warning("bias group %r skipped: %s", skipped.bias_group,
                                   skipped.reason)
            clock = _lap(timings, "scoring", clock)
            verdict = "PASS" if all(m.passed for m in metrics) else "FAIL"
            url = tracker.run_url(run_id)
            tracker.log_results(run_id, _run_metrics(prepared, metrics, scored, outputs),
                                {"verdict": verdict, "run_url": url})
            tracker.log_evaluation(run_id, scored)
            if config.trace_calls:
                tracker.log_traces(run_id, scored)
            clock = _lap(timings, "logging", clock)
            reports = render_reports(tracker.fetch(run_id))
            written = publish_reports(tracker, run_id, reports,
                                      config.reports_dir if role.local_reports else None)
            tracker.log_results(run_id, [], {DESCRIPTION_TAG: run_description(
                metrics, list(reports))})
            clock = _lap(timings, "reports", clock)
            status = "FINISHED"
        except KeyboardInterrupt:
            signals.closing()
            status = "KILLED"
            raise RunInterrupted(f"interrupted: run {run_id} marked KILLED; every completed "
                                 f"call is kept in {raw_path} and in the run's artifacts; "
                                 f"continue it with --resume {run_id}") from None
        finally:
            signals.closing()  # a signal now would tear the closing apart
            _close_run(tracker, run_id, raw_path, status)
    _lap(timings, "closing", clock)
    return EvaluationOutcome(run_id, config.experiment_name, tracker.tracking_uri, metrics,
                             scored, written, raw_path, url, timings)


def _lap(timings: dict[str, float], phase: str, since: float) -> float:
    now = time.perf_counter()
    timings[phase] = now - since
    return now


def publish_reports(tracker: Tracker, run_id: str, reports: Mapping[str, str],
                     folder: Path | None) -> tuple[Path, ...]:
    """Log each report to the run and, when ``folder`` is given, write it there too."""
    written = []
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    for name, text in reports.items():
        tracker.log_text(run_id, text, f"{REPORTS_ARTIFACT_DIR}/{name}")
        if folder is not None:
            (folder / name).write_text(text, encoding="utf-8")
            written.append(folder / name)
    return tuple(written)


def _run_metrics(prepared: PreparedEvaluation, metrics: tuple[TypeMetrics, ...],
                 scored: ScoredRun, outputs: list[EntryOutputs]) -> list[MetricPoint]:
    plan = prepared.plan
    points: list[MetricPoint] = [("entries", len(plan.items), 0), ("calls", scored.calls, 0),
                                 ("component_errors", scored.component_errors, 0)]
    if "repeatability" in plan.types:
        points.append(("repeat_count", prepared.config.require_repeat_count(), 0))
    latencies = [c.latency_ms for o in outputs for c in o.calls]
    points += [(f"call_latency_{name}_ms", value, 0)
               for name, value in latency_percentiles(latencies).items()]
    points += [(key, value, 0) for key, value in prepared.scorers.judge_metrics(scored).items()]
    for m in metrics:
        points += m.to_mlflow()
    return points


def _close_run(tracker: Tracker, run_id: str, raw_path: Path, status: str) -> None:
    """Upload the raw results and set the final status, even after a failure."""
    try:
        if raw_path.exists():
            tracker.log_file(run_id, raw_path, RAW_ARTIFACT_DIR)
        tracker.finish(run_id, status)
    except Exception as err:  # never mask the error that brought us here
        if status == "FINISHED" or isinstance(err, TrackingOffline):
            raise
        logger.error("could not close MLflow run %s (%s); raw results remain in %s",
                     run_id, err, raw_path)
