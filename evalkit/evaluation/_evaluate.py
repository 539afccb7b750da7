"""The two ways into an ordinary evaluation: :func:`evaluate` starts one, :func:`resume`
finishes an interrupted one with only its missing calls.

Both take what their caller owns in a :class:`RunContext` (a stop to ask the run to stop, a
progress callback to show how far the calls are). Neither touches signals, the terminal or
the process. Here too: the one check that an earlier run is an ordinary evaluation run
evalkit made, which a resume and a rescore both need.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from evalkit._errors import ConfigError
from evalkit.calls import Component, Selection
from evalkit.config import EvalConfig
from evalkit.evaluation._against import (
    DEFAULT_QUESTION,
    Against,
    load_baseline,
    recorded_against,
)
from evalkit.evaluation._context import RunContext
from evalkit.evaluation._evaluation import evaluation_in
from evalkit.evaluation._outcome import EvaluationOutcome
from evalkit.evaluation._prepare import PreparedEvaluation, prepare, with_sequential
from evalkit.records import CallRecord, Mode, names
from evalkit.tracking import RunReader, StoredRun, TrackedRun, Tracker

logger = logging.getLogger("evalkit")


def evaluate(config: EvalConfig, component: Component, selection: Selection,
             context: RunContext | None = None, against: Against | None = None
             ) -> EvaluationOutcome:
    """Run one evaluation; raise an :class:`EvalkitError` subclass on any failure.

    Everything that can be wrong with the dataset, the constants, the judge endpoint or the
    tracking destination is found before the first call. The context's stop ends the run
    early (see :class:`Stop`); its progress callback hears of every call as it is kept. A
    sequential selection (or ``SEQUENTIAL`` in the constants) stops calling once every type's
    verdict is settled (:mod:`evalkit.evaluation._sequential`); ``against`` makes it a
    sequential comparison with a recorded run (:mod:`evalkit.evaluation._against`), on the
    question of ``SEQUENTIAL`` or the selection, else ``population``."""
    context = context or RunContext()
    selection = with_sequential(config, selection)
    baseline = None
    if against is not None:
        selection = replace(selection, sequential=selection.sequential or DEFAULT_QUESTION)
        context.store.check_reachable()
        baseline = load_baseline(context.store.reader, against, config.script)
    prepared = prepare(config, selection, baseline)
    warn_unsynced(context.store)
    opening = new_run(context, prepared, prepared.run_name(), prepared.params(),
                      prepared.tags())
    with evaluation_in(opening, prepared, component, context) as evaluation:
        return evaluation.complete()


def resume(config: EvalConfig, component: Component, run_id: str,
           context: RunContext | None = None) -> EvaluationOutcome:
    """Continue an interrupted run: every call it recorded is reused, only the missing calls
    are made, and the run ends as an uninterrupted run with the same outputs would have.

    The run must have been made by this eval script with the same constants and dataset; a
    second resume of a run that is being worked on is refused."""
    context = context or RunContext()
    tracker = context.store
    tracker.check_reachable()
    run_id = tracker.reader.resolve(run_id)  # a prefix too, as the docs and the report take
    prepared = _resumable(config, tracker.reader.stored(run_id), tracker.reader)
    opening = tracker.reopen(run_id, context.runs_dir, traced=config.trace_calls)
    with evaluation_in(opening, prepared, component, context) as evaluation:
        run = evaluation.run
        saved = sum((p.entry.id, r) in run.recorded for p in prepared.plan.items
                    for r in range(p.calls))
        total = prepared.plan.total_calls
        run.log(tags={names.RESUMED_TAG: "true", names.RESUME_SAVED_TAG: str(saved),
                      names.RESUME_MADE_TAG: str(total - saved)})
        logger.info("resuming run %s: %d of %d calls recorded, %d to make", run_id, saved,
                    total, total - saved)
        return evaluation.complete()


def new_run(context: RunContext, prepared: PreparedEvaluation, name: str,
            params: Mapping[str, str], tags: Mapping[str, str],
            recorded: Sequence[CallRecord] = ()) -> TrackedRun:
    """A new run of the prepared evaluation's experiment, its raw results kept in the
    context's runs folder (``recorded``: calls it starts with, made by an earlier run)."""
    config = prepared.config
    return context.store.run(config.experiment_name, name, params, tags,
                             raw_dir=context.runs_dir, traced=config.trace_calls,
                             recorded=recorded)


def warn_unsynced(tracker: Tracker) -> None:
    for bundle in tracker.unsynced_bundles():
        logger.warning("bundle %s has not been uploaded yet: evalkit sync %s", bundle, bundle)


def prepared_again(config: EvalConfig, run: StoredRun,
                   refusal: Callable[[StoredRun], str], reader: RunReader | None = None
                   ) -> PreparedEvaluation:
    """An earlier run's evaluation prepared again by this script, with the selection its tags
    record, once it is certain that the run is an ordinary evaluation run evalkit made: not
    a replicate series nor one of its replicates, not a run of another mode or of someone
    else. Any other run is refused with ``refusal(run)``, which says why in the words of
    what was asked of it (a resume, a rescore). A run against a baseline has it read again
    with ``reader``."""
    tags = run.tags
    ordinary = (Mode.declared(tags) == Mode.EVALUATION and names.PARENT_RUN_TAG not in tags
                and names.EVAL_TYPE_TAG in tags)
    if not ordinary:
        raise ConfigError(refusal(run))
    against = recorded_against(tags)
    baseline = None if against is None or reader is None else load_baseline(
        reader, against, config.script)
    return prepare(config, recorded_selection(tags), baseline)


def _resumable(config: EvalConfig, run: StoredRun, reader: RunReader) -> PreparedEvaluation:
    """The run's evaluation prepared again by this script, once it is certain that resuming
    it is what the run was: an ordinary evaluation run, unfinished, made with these settings."""
    # Checked here before the dataset is prepared, and by reopen again under the run's lock
    # (another process may have finished it in between).
    if run.status == "FINISHED":
        raise ConfigError(f"run {run.run_id} finished: there is nothing to resume")
    prepared = prepared_again(config, run, _not_resumable, reader)
    changed = sorted(k for k, v in prepared.params().items()
                     if k in run.params and run.params[k] != v and k not in _PER_ATTEMPT)
    if changed:
        raise ConfigError(f"run {run.run_id} was made with other settings "
                          f"({', '.join(changed)} differ): resuming would mix two "
                          "evaluations. Restore them, or start a new run")
    return prepared


_PER_ATTEMPT = frozenset({"MAX_COST_USD"})
"""Constants that bound one attempt at a run, not what it computes: a resume may change them
(raise the limit that stopped the run)."""


def _not_resumable(run: StoredRun) -> str:
    """Why a run that is not an ordinary evaluation run cannot be resumed."""
    mode = Mode.declared(run.tags)
    if mode not in (None, Mode.EVALUATION) or names.PARENT_RUN_TAG in run.tags:
        part = mode if mode != Mode.EVALUATION else "replicate"
        return (f"run {run.run_id} is part of a {part} series; only ordinary runs can be "
                "resumed")
    return (f"run {run.run_id} was not made by evalkit (a mode tag of its own, or no "
            "eval_type tag): only evalkit's runs can be resumed")


def recorded_selection(tags: Mapping[str, str]) -> Selection:
    """The selection an evaluation run was made with, as its tags record it."""
    groups = tags.get(names.GROUPS_FILTER_TAG, "all")
    return Selection.parse(tags[names.EVAL_TYPE_TAG], None if groups == "all" else groups,
                           tags.get(names.HUMAN_REVIEW_ONLY_TAG) == "true",
                           tags.get(names.SEQUENTIAL_TAG))
