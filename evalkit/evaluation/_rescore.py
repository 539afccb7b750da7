"""Scoring a run again without calling again: :func:`rescore`.

The outputs a run recorded are scored with the script's current scorers, judge prompts,
thresholds and ``COMPARED_FIELDS``, in a new run of the script's experiment tagged
``rescored_from`` the source run (its reports say so); the source run is left as it is. It is
the resume path with every call reused: the source's raw results become the new run's
recorded calls, so the call window has none to make and the component is never called. The
judge is asked again: a changed judge prompt is a reason to rescore.

Only outputs that match the plan can be rescored: the source must be an ordinary evaluation
run made from the same dataset (digest) and, with repeatability in scope, the same
``REPEAT_COUNT``; its selection is its own (``--type``, ``--groups``, ``--human-review``), and
it must have recorded every call of it. A replicate series (or one of its replicates) is
refused: its stability compares every replicate, which a rescore of one run cannot keep.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from evalkit._errors import ConfigError
from evalkit.calls import Call, InProcess
from evalkit.config import EvalConfig
from evalkit.dataset import REPEATABILITY, Entry
from evalkit.evaluation._context import RunContext
from evalkit.evaluation._evaluate import new_run, prepared_again
from evalkit.evaluation._evaluation import evaluation_in
from evalkit.evaluation._outcome import EvaluationOutcome
from evalkit.evaluation._prepare import PreparedEvaluation, RunRole
from evalkit.evaluation._recorded import recorded_calls
from evalkit.records import Mode, names
from evalkit.tracking import StoredRun

logger = logging.getLogger("evalkit")

RESCORE_PREFIX = "rescore "
"""Leads a rescored run's name."""


def rescore(config: EvalConfig, run: str,
            context: RunContext | None = None) -> EvaluationOutcome:
    """Score the outputs ``run`` (a run id, its first 4 or more characters, or an experiment
    name for its latest finished run) recorded, as a new run; no component call is made.

    Raises :class:`ConfigError` when its outputs cannot be matched to this script's plan (see
    the module docstring) or it kept no raw results."""
    # Every call is reused: whatever executor the caller brought, the window starts none, and
    # the run records the in-process one, as a rescore always has.
    context = replace(context or RunContext(), executor=InProcess())
    tracker = context.store
    tracker.check_reachable()
    source = tracker.reader.stored(tracker.reader.resolve(run))
    # The component is the one that made the outputs: its params and declared prompts are the
    # source's (the script's may have changed since), so its prompts are not registered again.
    prepared = _rescorable(replace(config, component_prompts={}), source)
    calls = recorded_calls(tracker.reader, source, prepared.plan,
                           local=context.runs_dir / source.run_id / names.RAW_RESULTS_FILE,
                           tracking_uri=tracker.tracking_uri, script=config.script)
    made_by = (names.COMPONENT_PARAM_PREFIX, names.COMPONENT_PROMPT_PARAM_PREFIX)
    params = {**{k: v for k, v in prepared.params().items() if not k.startswith(made_by)},
              **{k: v for k, v in source.params.items() if k.startswith(made_by)}}
    tags = {**prepared.tags(), names.RESCORED_FROM_TAG: source.run_id}
    role = RunRole(rerun=f"rescore run {source.run_id} again")
    opening = new_run(context, prepared, prepared.run_name(RESCORE_PREFIX), params, tags,
                      recorded=calls)
    with evaluation_in(opening, prepared, _never_called, context, role) as evaluation:
        new = evaluation.run
        logger.info("rescoring run %s as run %s: its %d recorded calls scored again, none made",
                    source.run_id, new.id, len(calls))
        if any(k.startswith(names.COMPONENT_PROMPT_PARAM_PREFIX) for k in source.params):
            new.log_json(names.COMPONENT_PROMPTS_ARTIFACT, tracker.reader.read_json(
                source.run_id, names.COMPONENT_PROMPTS_ARTIFACT))
        return evaluation.complete()


def _never_called(entry: Entry, call: Call) -> Any:
    """The component of a rescore: every call is reused, so the call window starts none."""
    raise RuntimeError(f"evalkit bug: a rescore called the component (entry {entry.id})")


def _rescorable(config: EvalConfig, source: StoredRun) -> PreparedEvaluation:
    """The source's evaluation prepared again by this script, once it is certain that the
    source's outputs belong to it: an ordinary run, from the same dataset and repeats."""
    if names.SEQUENTIAL_TAG in source.tags:
        raise ConfigError(
            f"run {source.run_id} is a sequential run: it stopped calling once its verdicts "
            "were settled, by the scorers it had, so other scorers would need the entries it "
            f"never called. Evaluate again: python {config.script} --sequential")
    prepared = prepared_again(config, source, _not_rescorable)
    now = prepared.params()
    compared = [names.DATASET_DIGEST_PARAM]
    if REPEATABILITY in prepared.plan.types:
        compared.append(names.REPEAT_COUNT_PARAM)
    changed = [f"{key} {_short(source.params.get(key))} -> {_short(now.get(key))}"
               for key in compared if source.params.get(key) != now.get(key)]
    if changed:
        raise ConfigError(f"run {source.run_id} was made with another {', '.join(changed)}: its "
                          "outputs cannot be matched to this script's entries. Restore "
                          f"{config.script}'s dataset and constants as they were, or start a "
                          "new run")
    return prepared


def _not_rescorable(source: StoredRun) -> str:
    """Why a run that is not an ordinary evaluation run cannot be rescored."""
    tags = source.tags
    mode = Mode.declared(tags)
    if mode == Mode.REPLICATES or names.PARENT_RUN_TAG in tags:
        if mode == Mode.REPLICATES:
            part = "is a replicate series"
        else:
            part = f"is a replicate of series {tags[names.PARENT_RUN_TAG]}"
        return (f"run {source.run_id} {part}: a series cannot be rescored (its stability "
                "compares every replicate); rescore an ordinary run, or run the series again")
    kind = f"a {mode} run" if mode is not None else "not a run evalkit made"
    return f"run {source.run_id} is {kind}: only ordinary evaluation runs can be rescored"


def _short(value: str | None) -> str:
    return "(none)" if value is None else value[:12]
