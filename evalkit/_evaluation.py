"""One evaluation, end to end: dataset -> plan -> calls -> scores -> metrics -> MLflow -> reports.

Data flows one way. Everything that can be wrong with the dataset or the constants is checked
before the MLflow run is created and before the first component call. Once calls start, each
output is on disk before the next call; an interruption or a crash marks the run (KILLED or
FAILED) and still uploads the raw results.
"""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from types import FrameType

from evalkit._config import EvalConfig
from evalkit._dataset import load_dataset
from evalkit._errors import RunInterrupted
from evalkit._loop import Component, EntryOutputs, RawResultsLog, run_calls
from evalkit._metrics import MetricPoint, TypeMetrics, threshold_params
from evalkit._plan import RunPlan, Selection, plan_run
from evalkit._reports import render_reports
from evalkit._scoring import Scorers, score_run
from evalkit._secrets import Redactor
from evalkit._tracking import RAW_ARTIFACT_DIR, REPORTS_ARTIFACT_DIR, Tracker, source_tags

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
    reports: tuple[Path, ...]
    raw_results: Path

    @property
    def failures(self) -> tuple[str, ...]:
        return tuple(f for m in self.metrics for f in m.failures)

    @property
    def passed(self) -> bool:
        return not self.failures


def evaluate(config: EvalConfig, component: Component, selection: Selection, *,
             tracker: Tracker | None = None, runs_dir: Path = RUNS_DIR) -> EvaluationOutcome:
    """Run one evaluation; raise an :class:`EvalkitError` subclass on any failure."""
    dataset = load_dataset(config.dataset_path)
    plan = plan_run(dataset, selection, config)
    thresholds = {t: config.threshold_for(t) for t in plan.types}
    scorers = Scorers.for_run(config, plan.types)
    redactor = Redactor.from_environment()
    tracker = tracker or Tracker()

    params = {**config.params(), "dataset_digest": dataset.digest,
              "dataset_entries": str(len(dataset.entries))}
    for test_type in plan.types:
        params.update(threshold_params(test_type, thresholds[test_type]))
        params[f"{test_type}_scorer"] = config.scorer_for(test_type)
        if config.scorer_for(test_type) == "semantic_similarity":
            params[f"{test_type}_similarity_threshold"] = repr(
                config.similarity_threshold_for(test_type))
    tags = {"test_types": ",".join(plan.types), "groups_filter": selection.groups_filter,
            "eval_type": selection.test_type,
            "human_review_only": str(selection.human_review_only).lower(),
            "evalkit_version": metadata.version("evalkit"), **source_tags(config.script)}
    run_name = f"{selection.test_type}-{datetime.now(UTC):%Y%m%d-%H%M%S}"
    run_id = tracker.start_run(config.experiment_name, run_name,
                               {k: redactor.text(v) for k, v in params.items()},
                               {k: redactor.text(v) for k, v in tags.items()})
    raw_path = runs_dir / run_id / RAW_RESULTS_FILE
    logger.info("MLflow run %s in experiment %s (%s); %d entries, %d calls; raw results: %s",
                run_id, config.experiment_name, tracker.tracking_uri, len(plan.items),
                plan.total_calls, raw_path)

    status = "FAILED"
    try:
        with _sigterm_as_interrupt(), RawResultsLog(raw_path) as raw_log:
            outputs = list(_with_progress(plan, run_calls(
                plan, component, config.mock_adapters, raw_log, redactor)))
        scored = score_run(outputs, plan.types, scorers)
        metrics = tuple(TypeMetrics.from_result(r, thresholds[r.test_type])
                        for r in scored.types)
        for result in scored.types:
            for skipped in result.skipped:
                logger.warning("bias group %r skipped: %s", skipped.bias_group, skipped.reason)
        tracker.log_metrics(run_id, _run_metrics(plan, config, metrics, scored.calls,
                                                 scored.component_errors))
        tracker.log_evaluation(run_id, scored)
        reports = render_reports(tracker.fetch(run_id))
        written = []
        config.reports_dir.mkdir(parents=True, exist_ok=True)
        for name, text in reports.items():
            path = config.reports_dir / name
            path.write_text(text, encoding="utf-8")
            tracker.log_text(run_id, text, f"{REPORTS_ARTIFACT_DIR}/{name}")
            written.append(path)
        status = "FINISHED"
    except KeyboardInterrupt:
        status = "KILLED"
        raise RunInterrupted(f"interrupted: run {run_id} marked KILLED; every completed call "
                             f"is kept in {raw_path} and in the run's artifacts") from None
    finally:
        _close_run(tracker, run_id, raw_path, status)
    return EvaluationOutcome(run_id, config.experiment_name, tracker.tracking_uri, metrics,
                             tuple(written), raw_path)


def _run_metrics(plan: RunPlan, config: EvalConfig, metrics: tuple[TypeMetrics, ...],
                 calls: int, errors: int) -> list[MetricPoint]:
    points: list[MetricPoint] = [("entries", len(plan.items), 0), ("calls", calls, 0),
                                 ("component_errors", errors, 0)]
    if "repeatability" in plan.types:
        points.append(("repeat_count", config.require_repeat_count(), 0))
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
        if status == "FINISHED":
            raise
        logger.error("could not close MLflow run %s (%s); raw results remain in %s",
                     run_id, err, raw_path)


def _with_progress(plan: RunPlan, outputs: Iterator[EntryOutputs]) -> Iterator[EntryOutputs]:
    total = len(plan.items)
    every = max(1, total // 10)
    for done, entry_outputs in enumerate(outputs, start=1):
        if done % every == 0 or done == total:
            errors = sum(c.error is not None for c in entry_outputs.calls)
            logger.info("[%d/%d] %s%s", done, total, entry_outputs.entry.id,
                        f" ({errors} error(s))" if errors else "")
        yield entry_outputs


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM like Ctrl-C while calls run, so a stopped job still closes its run."""
    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: signals stay as they are
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
