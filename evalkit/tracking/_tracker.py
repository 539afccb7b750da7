"""MLflow tracking: one run per evaluation, logged in batches, and read back whole.

Everything a report needs is written to the run (the artifact layout is in
:mod:`evalkit.records`), so :meth:`Tracker.fetch` can rebuild any past run's reports.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import logging
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from evalkit._errors import TrackingError
from evalkit.records import (
    EVALUATION_ARTIFACT,
    PROBE_ARTIFACT,
    TABLE_ARTIFACT,
    MetricPoint,
    ScoredRun,
)
from evalkit.tracking._bundle import BUNDLES_DIR, RunJournal
from evalkit.tracking._dataset import log_dataset_input
from evalkit.tracking._reader import RunReader
from evalkit.tracking._store import TrackingOffline
from evalkit.tracking._sync import BundleSync
from evalkit.tracking._table import results_table, table_json
from evalkit.tracking._trace_log import TraceLog
from evalkit.tracking._traces import TRACES_TAG, Verdict

logger = logging.getLogger("evalkit")

_MAX_PARAM_LENGTH = 6000
TRACES_MISSING_METRIC = "traces_missing"


class Tracker(TraceLog, RunReader, BundleSync):
    """A thin, batched layer over :class:`mlflow.MlflowClient` that survives an outage.

    Every write is also journaled (:class:`RunJournal`). If an HTTP tracking server stops
    answering during a run, the run continues against the journal alone; when it finishes,
    the journal is written as a bundle and :class:`TrackingOffline` names it.
    """

    def __init__(self, tracking_uri: str | None = None, bundles_dir: Path = BUNDLES_DIR) -> None:
        super().__init__(tracking_uri, bundles_dir)
        self._resumed: set[str] = set()
        """Runs continued by :meth:`resume_run`: they may hold metric points already."""
        self.bundles: list[Path] = []
        self._series = 0
        """Inside :meth:`series`: runs go on past an outage, offline from their start."""

    @contextlib.contextmanager
    def series(self) -> Iterator[None]:
        """Runs of one series (the replicates): a run that finishes offline leaves its bundle
        without raising :class:`TrackingOffline`, and once the server has stopped answering
        the next runs start offline, so the series completes; whoever ends the series raises
        it (the bundles are in :attr:`bundles`)."""
        self._series += 1
        try:
            yield
        finally:
            self._series -= 1

    def start_run(self, experiment_name: str, run_name: str, params: Mapping[str, str],
                  tags: Mapping[str, str]) -> str:
        """Check the destination (reachable, experiment usable, artifacts writable), create the
        run with its params and tags, and return its id. Fails in seconds, before any
        component call, with the URI and the fix."""
        from mlflow.entities import Param, RunTag

        checked = [Param(k, _param(v)) for k, v in sorted(params.items())]
        if self._series and self._offline and not self._answers():
            return self._start_offline(experiment_name, run_name, params, tags)
        self.check_reachable()
        try:
            experiment_id = self._experiment_id(experiment_name)
            # the user is set at creation: MLflow takes the run's user_id from that tag only then
            run = self._client.create_run(experiment_id, run_name=run_name, tags={
                k: v for k, v in tags.items() if k == "mlflow.user"})
            self._client.log_batch(run.info.run_id, params=checked,
                                   tags=[RunTag(k, v) for k, v in sorted(tags.items())])
            log_dataset_input(self._client, run.info.run_id, params)
        except TrackingError:
            raise
        except Exception as err:  # any failure here means MLflow is unusable: say where
            raise TrackingError(f"cannot start an MLflow run at {self.tracking_uri}: "
                                f"{self.hide_password(str(err))}. "
                                "Check MLFLOW_TRACKING_URI (unset it to use the local store "
                                "sqlite:///mlflow.db)") from err
        run_id = run.info.run_id
        self._journals[run_id] = RunJournal(
            run_id=run_id, run_name=run.info.run_name, experiment_id=experiment_id,
            experiment_name=experiment_name, start_time_ms=run.info.start_time,
            tracking_uri=self.tracking_uri, params=dict(params), tags=dict(tags))
        try:
            self._client.log_text(run_id, json.dumps({"run_id": run_id}) + "\n", PROBE_ARTIFACT)
        except Exception as err:
            self._client.set_terminated(run_id, status="FAILED")
            raise TrackingError(f"cannot write artifacts of run {run_id} to "
                                f"{run.info.artifact_uri}: {self.hide_password(str(err))}. "
                                "Check the server's artifact store (--artifacts-destination) "
                                "and its permissions") from err
        return run_id

    def _start_offline(self, experiment_name: str, run_name: str, params: Mapping[str, str],
                       tags: Mapping[str, str]) -> str:
        """A run of a series begun while its server is down: journaled only, under an id of
        its own; ``evalkit sync`` creates it (tagged ``evalkit.synced_from_run``)."""
        experiment_id = next(j.experiment_id for j in self._journals.values()
                             if j.experiment_name == experiment_name)
        run_id = uuid.uuid4().hex
        self._journals[run_id] = RunJournal(
            run_id=run_id, run_name=run_name, experiment_id=experiment_id,
            experiment_name=experiment_name, start_time_ms=_now_ms(),
            tracking_uri=self.tracking_uri, params=dict(params), tags=dict(tags))
        self._offline.add(run_id)
        logger.warning("tracking server %s still unreachable: run %s starts offline and will "
                       "be saved as a local bundle", self.tracking_uri, run_name)
        return run_id

    def resume_run(self, run_id: str, tags: Mapping[str, str]) -> RunJournal:
        """Reopen a run to continue it (status RUNNING again) and journal it from here."""
        from mlflow.entities import RunTag

        self.check_reachable()
        run = self.run_data(run_id)
        experiment = self._client.get_experiment(run.info.experiment_id)
        self._client.update_run(run_id, status="RUNNING")
        self._client.log_batch(run_id, tags=[RunTag(k, v) for k, v in sorted(tags.items())])
        journal = RunJournal(
            run_id=run_id, run_name=run.info.run_name, experiment_id=run.info.experiment_id,
            experiment_name=experiment.name, start_time_ms=run.info.start_time,
            tracking_uri=self.tracking_uri, params=dict(run.data.params),
            tags={**run.data.tags, **tags})
        self._journals[run_id] = journal
        self._resumed.add(run_id)
        return journal

    def log_results(self, run_id: str, points: Sequence[MetricPoint],
                    tags: Mapping[str, str] | None = None) -> None:
        """All metric points (and closing tags) in one batched call; MLflow splits it below
        its request limits. Points a resumed run already holds are not logged twice."""
        from mlflow.entities import Metric, RunTag

        timestamp = _now_ms()
        journal = self._journals[run_id]
        fresh = [(key, float(value), step, timestamp) for key, value, step in points]
        journal.metrics += fresh
        journal.tags.update(tags or {})
        self._write(run_id, lambda: self._client.log_batch(
            run_id, metrics=[Metric(k, v, t, s) for k, v, s, t in self._unlogged(
                run_id, fresh, held_possible=run_id in self._resumed)],
            tags=[RunTag(k, v) for k, v in sorted((tags or {}).items())]))

    def log_evaluation(self, run_id: str, evaluation: ScoredRun) -> None:
        text = json.dumps(evaluation.to_json(), ensure_ascii=False, indent=1)
        table = results_table(evaluation)
        journal = self._journals[run_id]
        journal.artifacts[EVALUATION_ARTIFACT] = text.encode("utf-8")
        journal.artifacts[TABLE_ARTIFACT] = table_json(table).encode("utf-8")
        def upload() -> None:
            self._client.log_text(run_id, text, EVALUATION_ARTIFACT)
            self._client.log_table(run_id, table, TABLE_ARTIFACT)

        self._write(run_id, upload)

    def log_traces(self, run_id: str, evaluation: ScoredRun) -> int:
        """Add every verdict to the run's traces; a shortfall in the store's count is a
        warning and the ``traces_missing`` metric. Returns the number missing."""
        missing = super().log_traces(run_id, evaluation)
        if missing:
            self.log_results(run_id, [(TRACES_MISSING_METRIC, missing, 0)])
        return missing

    def log_stability(self, run_id: str, verdicts: Mapping[str, Sequence[Verdict]]) -> None:
        """Add assessments (entry id -> verdicts) to the traces of a run that has finished: the
        stability of each item of a replicate series, on its last replicate. They are
        journaled too: for a run that went offline, its bundle carries them to ``evalkit
        sync``."""
        journal = self._journals[run_id]
        if TRACES_TAG not in journal.tags:
            return
        journal.assessments.update({entry_id: [asdict(v) for v in items]
                                    for entry_id, items in verdicts.items()})
        offline = run_id in self._offline
        super().log_stability(run_id, verdicts)
        if run_id in self._offline:  # offline before (its bundle is written) or since
            bundle = journal.write(self.bundles_dir)
            if not offline:
                self.bundles.append(bundle)

    def log_file(self, run_id: str, path: Path, artifact_dir: str) -> None:
        self._journals[run_id].artifacts[f"{artifact_dir}/{path.name}"] = path
        self._write(run_id, lambda: self._client.log_artifact(run_id, str(path), artifact_dir))

    def log_text(self, run_id: str, text: str, artifact_file: str) -> None:
        self._journals[run_id].artifacts[artifact_file] = text.encode("utf-8")
        self._write(run_id, lambda: self._client.log_text(run_id, text, artifact_file))

    def finish(self, run_id: str, status: str = "FINISHED") -> None:
        """End the run. Offline, write its bundle instead, and for a run that finished raise
        :class:`TrackingOffline` naming it."""
        journal = self._journals.get(run_id)
        if journal is not None:
            journal.status = status
        self._write(run_id, lambda: self._client.set_terminated(run_id, status=status))
        if run_id in self._offline and journal is not None:
            bundle = journal.write(self.bundles_dir)
            self.bundles.append(bundle)
            if status == "FINISHED" and not self._series:
                raise TrackingOffline(list(self.bundles), self.tracking_uri)
            # A stopped or failed run raises its own error; this is the only word of the bundle.
            logger.warning("the tracking server at %s is unreachable: run %s (%s) is saved as a "
                           "local bundle; upload it once the server is back: evalkit sync %s",
                           self.tracking_uri, run_id, status, bundle)



def source_tags(script: str) -> dict[str, str]:
    """The script and the git commit it ran at (``unknown`` outside a git checkout)."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10,
                                  check=True)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip()

    commit = git("rev-parse", "HEAD")
    tags = {"mlflow.source.name": script, "git_commit": commit or "unknown",
            "mlflow.user": _user()}
    if commit:
        tags["mlflow.source.git.commit"] = commit
        dirty = git("status", "--porcelain", "--untracked-files=no")
        tags["git_dirty"] = "true" if dirty else "false"
    return tags


def _user() -> str:
    """Who ran it, as MLflow's own fluent API records it."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name (a container without a passwd entry)
        return "unknown"


def _param(value: str) -> str:
    if len(value) > _MAX_PARAM_LENGTH:
        raise TrackingError(f"a param value is {len(value)} characters long; MLflow keeps at "
                            f"most {_MAX_PARAM_LENGTH}: shorten the constant")
    return value


def _now_ms() -> int:
    return int(time.time() * 1000)
