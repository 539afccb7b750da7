"""The two ways into an ordinary evaluation: :func:`evaluate` starts one, :func:`resume`
finishes an interrupted one with only its missing calls.

Both take what their caller owns: a :class:`Stop` to ask the run to stop, and a progress
callback to show how far the calls are. Neither touches signals, the terminal or the process.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from evalkit._errors import ConfigError
from evalkit.config import EvalConfig
from evalkit.records import Mode, names
from evalkit.calls import Component
from evalkit.evaluation._evaluation import Evaluation
from evalkit.calls import Executor
from evalkit.evaluation._outcome import EvaluationOutcome
from evalkit.evaluation._prepare import PreparedEvaluation, prepare
from evalkit.calls import ProgressCallback
from evalkit.calls import Selection
from evalkit.calls import Stop
from evalkit.tracking import StoredRun, Tracker

logger = logging.getLogger("evalkit")

RUNS_DIR = Path(".evalkit") / "runs"
"""Where each run's raw results are kept: ``RUNS_DIR/<run id>/raw-results.jsonl``."""


def evaluate(config: EvalConfig, component: Component, selection: Selection, *,
             tracker: Tracker | None = None, runs_dir: Path = RUNS_DIR,
             stop: Stop | None = None, progress: ProgressCallback | None = None,
             executor: Executor | None = None) -> EvaluationOutcome:
    """Run one evaluation; raise an :class:`EvalkitError` subclass on any failure.

    Everything that can be wrong with the dataset, the constants, the judge endpoint or the
    tracking destination is found before the first call. ``stop`` ends the run early (see
    :class:`Stop`); ``progress`` hears of every call as it is kept."""
    prepared = prepare(config, selection)
    tracker = tracker or Tracker()
    stop = stop or Stop()
    warn_unsynced(tracker)
    with tracker.run(config.experiment_name, prepared.run_name(), prepared.params(),
                     prepared.tags(), raw_dir=runs_dir, traced=config.trace_calls) as run, \
            stop.open_run():
        return Evaluation(run, prepared, component, stop=stop, progress=progress,
                          executor=executor).complete()


def resume(config: EvalConfig, component: Component, run_id: str, *,
           tracker: Tracker | None = None, runs_dir: Path = RUNS_DIR, stop: Stop | None = None,
           progress: ProgressCallback | None = None,
           executor: Executor | None = None) -> EvaluationOutcome:
    """Continue an interrupted run: every call it recorded is reused, only the missing calls
    are made, and the run ends as an uninterrupted run with the same outputs would have.

    The run must have been made by this eval script with the same constants and dataset; a
    second resume of a run that is being worked on is refused."""
    tracker = tracker or Tracker()
    tracker.check_reachable()
    run_id = tracker.reader.resolve(run_id)  # a prefix too, as the README and report take
    prepared = _resumable(config, tracker.reader.stored(run_id))
    stop = stop or Stop()
    with tracker.reopen(run_id, runs_dir, traced=config.trace_calls) as run, stop.open_run():
        saved = sum((p.entry.id, r) in run.recorded for p in prepared.plan.items
                    for r in range(p.calls))
        total = prepared.plan.total_calls
        run.log(tags={names.RESUMED_TAG: "true", names.RESUME_SAVED_TAG: str(saved),
                      names.RESUME_MADE_TAG: str(total - saved)})
        logger.info("resuming run %s: %d of %d calls recorded, %d to make", run_id, saved,
                    total, total - saved)
        return Evaluation(run, prepared, component, stop=stop, progress=progress,
                          executor=executor).complete()


def warn_unsynced(tracker: Tracker) -> None:
    for bundle in tracker.unsynced_bundles():
        logger.warning("bundle %s has not been uploaded yet: evalkit sync %s", bundle, bundle)


def _resumable(config: EvalConfig, run: StoredRun) -> PreparedEvaluation:
    """The run's evaluation prepared again by this script, once it is certain that resuming
    it is what the run was: an ordinary evaluation run, unfinished, made with these settings."""
    tags, run_id = run.tags, run.run_id
    # Checked here before the dataset is prepared, and by reopen again under the run's lock
    # (another process may have finished it in between).
    if run.status == "FINISHED":
        raise ConfigError(f"run {run_id} finished: there is nothing to resume")
    mode = Mode.declared(tags)
    if mode not in (None, Mode.EVALUATION) or names.PARENT_RUN_TAG in tags:
        part = mode if mode != Mode.EVALUATION else "replicate"
        raise ConfigError(f"run {run_id} is part of a {part} series; only ordinary runs can "
                          "be resumed")
    if mode is None or names.EVAL_TYPE_TAG not in tags:
        raise ConfigError(f"run {run_id} was not made by evalkit (a mode tag of its own, or no "
                          "eval_type tag): only evalkit's runs can be resumed")
    prepared = prepare(config, recorded_selection(tags))
    changed = sorted(k for k, v in prepared.params().items()
                     if k in run.params and run.params[k] != v)
    if changed:
        raise ConfigError(f"run {run_id} was made with other settings ({', '.join(changed)} "
                          "differ): resuming would mix two evaluations. Restore them, or "
                          "start a new run")
    return prepared


def recorded_selection(tags: Mapping[str, str]) -> Selection:
    """The selection an evaluation run was made with, as its tags record it."""
    groups = tags.get(names.GROUPS_FILTER_TAG, "all")
    return Selection.parse(tags[names.EVAL_TYPE_TAG], None if groups == "all" else groups,
                           tags.get(names.HUMAN_REVIEW_ONLY_TAG) == "true")
