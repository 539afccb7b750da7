"""Uploading a bundle that a tracking outage left on local disk (``evalkit sync``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalkit._errors import TrackingError
from evalkit.records import EVALUATION_ARTIFACT, RAW_ARTIFACT_DIR, TABLE_ARTIFACT, ScoredRun
from evalkit.tracking._bundle import RunJournal, mark_synced
from evalkit.tracking._store import TrackingStore
from evalkit.tracking._table import table_from_json
from evalkit.tracking._trace_writer import TraceWriter, verdicts_on
from evalkit.tracking._traces import TRACES_TAG, RunContext, Verdict, build_traces, trace_id_for


class BundleSync(TrackingStore):
    """The syncing side of :class:`Tracker`."""

    def sync(self, folder: Path) -> str:
        """Upload a bundle: into its own run when the server still has it (a run an outage
        left RUNNING), else into a new run of the same experiment. Returns the run id."""
        from mlflow.entities import Metric, Param, RunTag
        from mlflow.exceptions import MlflowException

        journal = RunJournal.load(folder)
        self.check_reachable()
        try:
            run = self._client.get_run(journal.run_id)
            run_id, known = run.info.run_id, dict(run.data.params)
        except MlflowException:
            experiment_id = self._experiment_id(journal.experiment_name)
            run_id = self._client.create_run(
                experiment_id, start_time=journal.start_time_ms, run_name=journal.run_name,
                tags={"evalkit.synced_from_run": journal.run_id}).info.run_id
            known = {}
        clashes = {k for k, v in journal.params.items() if k in known and known[k] != v}
        if clashes:
            raise TrackingError(f"run {run_id} already holds different values for "
                                f"{', '.join(sorted(clashes))}: not the run of this bundle")
        self._client.log_batch(
            run_id, params=[Param(k, v) for k, v in sorted(journal.params.items())
                            if k not in known],
            tags=[RunTag(k, v) for k, v in sorted(journal.tags.items())])
        self._client.log_batch(run_id, metrics=[
            Metric(k, v, t, s) for k, v, s, t in self._unlogged(run_id, journal.metrics,
                                                                held_possible=bool(known))])
        for path in journal.artifacts:
            if path == TABLE_ARTIFACT:
                self._client.log_table(run_id, table_from_json(journal.artifact_bytes(path)),
                                       TABLE_ARTIFACT)
            else:
                directory = str(Path(path).parent) if "/" in path else None
                self._client.log_artifact(run_id, str(folder / "artifacts" / path), directory)
        if TRACES_TAG in journal.tags and EVALUATION_ARTIFACT in journal.artifacts:
            self._sync_traces(journal, run_id)
        self._client.set_terminated(run_id, status=journal.status
                                    if journal.status != "RUNNING" else "FAILED")
        mark_synced(folder, run_id, self.tracking_uri)
        return run_id

    def _sync_traces(self, journal: RunJournal, run_id: str) -> None:
        """The run's traces and assessments, built from the bundle as the run would have
        written them; those the server already holds are kept as they are."""
        run = self._client.get_run(run_id)
        context = RunContext(run_id, run.info.experiment_id, run.info.start_time,
                             journal.params, journal.tags)
        calls = [json.loads(line) for path in journal.artifacts
                 if path.startswith(f"{RAW_ARTIFACT_DIR}/") and path.endswith(".jsonl")
                 for line in journal.artifact_bytes(path).decode("utf-8").splitlines()]
        evaluation = ScoredRun.from_json(json.loads(journal.artifact_bytes(EVALUATION_ARTIFACT)))
        traces = build_traces(context, evaluation, calls)
        writer = TraceWriter(self._client, context)
        writer.write_calls(traces)
        writer.write_verdicts(traces)
        if journal.assessments:
            self._sync_assessments(writer, journal.assessments)

    def _sync_assessments(self, writer: TraceWriter,
                          assessments: dict[str, list[dict[str, Any]]]) -> None:
        """The assessments added after the run's own (a series' stability, on its last
        replicate), on the traces of the run synced into; those a trace holds by name (written
        before the outage, or by an earlier sync) are not written again."""
        run_id = writer.context.run_id
        held = writer.assessment_names()
        fresh = []
        for entry_id, items in assessments.items():
            trace_id = trace_id_for(run_id, entry_id)
            fresh += verdicts_on(trace_id, [Verdict(**v) for v in items
                                            if v["name"] not in held.get(trace_id, [])],
                                 run_id)
        writer.log_assessments(fresh)
