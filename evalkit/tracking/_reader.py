"""Reading runs back: a whole run as a :class:`RunRecord`, its artifacts, an experiment's runs.

A record is built the same way from a run on a server, in the local store, or in a bundle, so
reports render identically from any of them.
"""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evalkit._errors import TrackingError
from evalkit.records import (
    EVALUATION_ARTIFACT,
    MODE_DOCUMENTS,
    WITHOUT_EVALUATION,
    RunRecord,
    ScoredRun,
    history_keys,
)
from evalkit.tracking._bundle import RunJournal
from evalkit.tracking._store import TrackingStore

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")


class RunReader(TrackingStore):
    """The reading side of :class:`Tracker`."""

    def fetch(self, run_id: str) -> RunRecord:
        """Read a run back whole: params, tags, metrics, stepped histories and results (from
        the journal while the server is unreachable)."""
        if run_id in self._offline:
            return journal_record(self._journals[run_id])
        run = self.run_data(run_id)
        experiment = self._client.get_experiment(run.info.experiment_id)
        return build_record(
            run_id=run_id, run_name=run.info.run_name, experiment_id=run.info.experiment_id,
            experiment_name=experiment.name, start_time_ms=run.info.start_time,
            status=run.info.status, params=dict(run.data.params), tags=dict(run.data.tags),
            metrics=dict(run.data.metrics),
            read_json=lambda path: self.read_json(run_id, path),
            history=lambda key: tuple(m.value for m in sorted(
                self._client.get_metric_history(run_id, key), key=lambda m: m.step)))

    def read_text(self, run_id: str, artifact: str) -> str:
        """A text artifact of a run."""
        from mlflow.exceptions import MlflowException

        with tempfile.TemporaryDirectory() as scratch:
            try:
                local = self._client.download_artifacts(run_id, artifact, scratch)
            except (MlflowException, OSError) as err:
                raise TrackingError(f"run {run_id} has no {artifact}: it did not finish "
                                    f"({self.hide_password(str(err))})") from None
            return Path(local).read_text("utf-8")

    def read_json(self, run_id: str, artifact: str) -> Any:
        """A JSON artifact of a run."""
        return json.loads(self.read_text(run_id, artifact))

    def runs(self, experiment_name: str, limit: int = 1000) -> list[Any]:
        """Runs of an experiment, newest first (MLflow ``Run`` objects, without artifacts)."""
        experiment = self._client.get_experiment_by_name(experiment_name)
        if experiment is None:
            raise TrackingError(f"no experiment {experiment_name!r} at {self.tracking_uri}")
        return list(self._client.search_runs([experiment.experiment_id], max_results=limit,
                                             order_by=["attributes.start_time DESC"]))

    def evaluation_runs(self, experiment_name: str) -> list[Any]:
        """Top-level evaluation runs, newest first: replicate children (folded into their
        parent) and planning runs (they evaluate nothing) left out."""
        return [run for run in self.runs(experiment_name)
                if "mlflow.parentRunId" not in run.data.tags
                and run.data.tags.get("mode") != "planning"]

    def resolve(self, reference: str, mode: str | None = None) -> str:
        """A run id as given, or the latest finished evaluation run of the experiment named
        ``reference`` (of the given ``mode`` tag, e.g. ``replicates``, when one is asked)."""
        if _RUN_ID.match(reference):
            return reference
        for run in self.evaluation_runs(reference):
            if run.info.status == "FINISHED" and (mode is None
                                                  or run.data.tags.get("mode") == mode):
                return str(run.info.run_id)
        kind = f"{mode} run" if mode else "run"
        raise TrackingError(f"experiment {reference!r} has no finished {kind}"
                            + (": run make eval-replicates for it first"
                               if mode == "replicates" else ""))


def build_record(*, run_id: str, run_name: str, experiment_id: str, experiment_name: str,
                 start_time_ms: int, status: str, params: Mapping[str, str],
                 tags: Mapping[str, str], metrics: Mapping[str, float],
                 read_json: Callable[[str], Any],
                 history: Callable[[str], tuple[float, ...]]) -> RunRecord:
    """A :class:`RunRecord` from a run's data and readers of its artifacts and histories;
    the same for a run on a server, in the local store, or in a bundle."""
    mode = tags.get("mode", "")
    evaluation = None if mode in WITHOUT_EVALUATION else ScoredRun.from_json(
        read_json(EVALUATION_ARTIFACT))
    documents = {}
    for path in MODE_DOCUMENTS.get(mode, ()):
        # A document may not be written yet: a calibration run renders twice.
        with contextlib.suppress(TrackingError):
            documents[path] = read_json(path)
    histories = {key: history(key) for result in (evaluation.types if evaluation else ())
                 for key in history_keys(result.test_type)}
    return RunRecord(
        run_id=run_id, run_name=run_name, experiment_id=experiment_id,
        experiment_name=experiment_name, start_time_ms=start_time_ms, status=status,
        params=dict(params), tags=dict(tags), metrics=dict(metrics), histories=histories,
        evaluation=evaluation, documents=documents)


def journal_record(journal: RunJournal) -> RunRecord:
    """The :class:`RunRecord` a journal (or a bundle) holds."""
    return build_record(
        run_id=journal.run_id, run_name=journal.run_name, experiment_id=journal.experiment_id,
        experiment_name=journal.experiment_name, start_time_ms=journal.start_time_ms,
        status=journal.status, params=journal.params, tags=journal.tags,
        metrics=journal.latest_metrics(),
        read_json=lambda path: json.loads(journal.artifact_bytes(path).decode("utf-8")),
        history=journal.history)
