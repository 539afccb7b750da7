"""Uploading a bundle that a tracking outage left on local disk (``evalkit sync``): into its own
run when the server still has it (an outage left it RUNNING), else into a new run of the same
experiment, tagged ``evalkit.synced_from_run``. Afterwards the server holds what an
uninterrupted run would have: params, tags, every metric point once, the artifacts, and the
traces with their assessments (those it holds already are kept as they are)."""

from __future__ import annotations

import json
from pathlib import Path

from evalkit._errors import NotFound, TrackingError
from evalkit.records import ScoredRun, names
from evalkit.tracking._backend import Backend, StoredRun
from evalkit.tracking._journal import RunJournal, mark_synced
from evalkit.tracking._table import table_from_json
from evalkit.tracking._traces import Assessment, TraceContext, build_traces, trace_id_for


def upload_bundle(backend: Backend, folder: Path) -> str:
    """Upload the bundle in ``folder``; returns the id of the run it went into."""
    journal = RunJournal.load(folder)
    backend.check_reachable()
    try:
        known: StoredRun | None = backend.run(journal.run_id)
    except (NotFound, TrackingError):  # the server lost the run (or it began offline)
        known = None
    if known is not None and known.status == "FINISHED" and journal.status != "FINISHED":
        raise TrackingError(f"run {known.run_id} was resumed and finished after the bundle in "
                            f"{folder} was saved: the bundle is out of date and was not "
                            "uploaded (the run holds all of it); delete the folder")

    if known is not None:
        run_id = known.run_id
        held = dict(known.params)
        start_time_ms = known.start_time_ms
    else:
        experiment_id = backend.experiment_id(journal.experiment_name)
        assert experiment_id is not None
        created = backend.create_run(experiment_id, journal.run_name,
                                     {names.SYNCED_FROM_TAG: journal.run_id},
                                     start_time_ms=journal.start_time_ms)
        run_id = created.run_id
        held = {}
        start_time_ms = created.start_time_ms

    clashes = {k for k, v in journal.params.items() if k in held and held[k] != v}
    if clashes:
        raise TrackingError(f"run {run_id} already holds different values for "
                            f"{', '.join(sorted(clashes))}: not the run of this bundle")
    backend.log_batch(run_id, params={k: v for k, v in journal.params.items() if k not in held},
                      tags=journal.tags)

    logged = {(p.key, p.step, p.value) for key in {p.key for p in journal.metrics}
              for p in backend.metric_history(run_id, key)} if held else set()
    backend.log_batch(run_id, metrics=[p for p in journal.metrics
                                       if (p.key, p.step, p.value) not in logged])

    for path in journal.artifacts:
        if path == names.TABLE_ARTIFACT:
            backend.log_table(run_id, path, table_from_json(journal.artifact_bytes(path)))
        else:
            backend.log_artifact(run_id, path, folder / "artifacts" / path)

    if names.TRACES_TAG in journal.tags and names.EVALUATION_ARTIFACT in journal.artifacts:
        experiment_id = backend.run(run_id).experiment_id
        _upload_traces(backend, journal, TraceContext(run_id, experiment_id, start_time_ms,
                                                    journal.params, journal.tags))

    backend.set_status(run_id, journal.status if journal.status != "RUNNING" else "FAILED")
    mark_synced(folder, run_id, backend.tracking_uri)
    return run_id


def _upload_traces(backend: Backend, journal: RunJournal, context: TraceContext) -> None:
    """The run's traces and assessments, built from the bundle as the run would have written
    them; then the assessments added after the run's own (a series' stability, on its last
    replicate), except those a trace holds by name already."""
    calls = [json.loads(line) for path in journal.artifacts
             if path.startswith(f"{names.RAW_ARTIFACT_DIR}/") and path.endswith(".jsonl")
             for line in journal.artifact_bytes(path).decode("utf-8").splitlines()]
    evaluation = ScoredRun.from_json(
        json.loads(journal.artifact_bytes(names.EVALUATION_ARTIFACT)))
    traces = build_traces(context, evaluation, calls)
    store = backend.trace_store()
    store.write_calls(context, traces, check_held=True)
    store.write_verdicts(context, traces)
    if not journal.assessments:
        return
    held = store.assessment_names(context)
    fresh = []
    for entry_id, items in journal.assessments.items():
        trace_id = trace_id_for(context.run_id, entry_id)
        fresh += [(trace_id, Assessment(**a)) for a in items
                  if a["name"] not in held.get(trace_id, [])]
    store.add_assessments(context, fresh)
