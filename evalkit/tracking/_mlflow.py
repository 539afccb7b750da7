"""MLflow as evalkit's :class:`~evalkit.tracking._backend.Backend`, through
:class:`mlflow.MlflowClient`'s public API (the few private calls are in
:mod:`evalkit.tracking._mlflow_private`, each with its reason).

Every failure to reach the store becomes one :class:`TrackingError` line that names the URI
and the fix, with any password in it masked.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalkit._errors import ConfigError, NotFound, TrackingError
from evalkit.records import ReviewerVerdict
from evalkit.tracking import _mlflow_genai as genai
from evalkit.tracking import _mlflow_private as private
from evalkit.tracking._backend import PromptTemplate, StoredRun, TraceStore
from evalkit.tracking._connection import LOCAL_STORE, Connection, local_store_lock
from evalkit.tracking._journal import LoggedPoint


class MlflowBackend:
    """An MLflow tracking store (a local SQLite file or a tracking server) at one URI."""

    def __init__(self, connection: Connection) -> None:
        import mlflow  # ~1 s import, paid only when a run is tracked

        self._connection = connection
        self.tracking_uri = connection.shown
        self.is_remote = connection.is_remote
        with local_store_lock(connection.uri):
            self._client = mlflow.MlflowClient(connection.uri)  # creates a new store's schema
        private.quiet_run_urls(self._client)
        self._traces: genai.MlflowTraceStore | None = None

    def check_reachable(self) -> None:
        self._connection.check_reachable()

    def answers(self) -> bool:
        return self._connection.answers()

    def hide_password(self, text: str) -> str:
        return self._connection.hide_password(text)

    def refusal(self, err: BaseException, experiment: str | None,
                permission: str) -> ConfigError | None:
        from mlflow.exceptions import MlflowException

        code = err.error_code if isinstance(err, MlflowException) else None
        return self._connection.refusal(code, experiment, permission)

    def experiment_id(self, name: str, create: bool = True) -> str | None:
        from mlflow.exceptions import MlflowException

        experiment = self._client.get_experiment_by_name(name)
        if experiment is not None:
            if experiment.lifecycle_stage == "deleted":
                raise TrackingError(f"experiment {name!r} is deleted at {self.tracking_uri}: "
                                    "restore it in MLflow or change EXPERIMENT_NAME")
            return str(experiment.experiment_id)
        if not create:
            return None
        try:
            return str(self._client.create_experiment(name))
        except MlflowException:  # created concurrently by another evaluation
            experiment = self._client.get_experiment_by_name(name)
            if experiment is None:
                raise
            return str(experiment.experiment_id)

    def experiment_name(self, experiment_id: str) -> str:
        return str(self._client.get_experiment(experiment_id).name)

    def create_run(self, experiment_id: str, run_name: str, tags: Mapping[str, str],
                   start_time_ms: int | None = None) -> StoredRun:
        run = self._client.create_run(experiment_id, start_time=start_time_ms,
                                      run_name=run_name, tags=dict(tags))
        return _stored(run)

    def log_batch(self, run_id: str, *, metrics: Sequence[LoggedPoint] = (),
                  params: Mapping[str, str] | None = None,
                  tags: Mapping[str, str] | None = None) -> None:
        from mlflow.entities import Metric, Param, RunTag

        self._client.log_batch(
            run_id, metrics=[Metric(p.key, p.value, p.timestamp_ms, p.step) for p in metrics],
            params=[Param(k, v) for k, v in sorted((params or {}).items())],
            tags=[RunTag(k, v) for k, v in sorted((tags or {}).items())])

    def log_artifact(self, run_id: str, path: str, content: bytes | Path) -> None:
        directory, _, name = path.rpartition("/")
        if isinstance(content, Path) and content.name == name:
            self._client.log_artifact(run_id, str(content), directory or None)
            return
        with tempfile.TemporaryDirectory() as scratch:
            local = Path(scratch) / name
            local.write_bytes(content if isinstance(content, bytes) else content.read_bytes())
            self._client.log_artifact(run_id, str(local), directory or None)

    def log_table(self, run_id: str, path: str, table: Any) -> None:
        self._client.log_table(run_id, table, path)

    def log_dataset_input(self, run_id: str, params: Mapping[str, str]) -> None:
        genai.log_dataset_input(self._client, run_id, params)

    def set_status(self, run_id: str, status: str) -> None:
        if status == "RUNNING":
            self._client.update_run(run_id, status="RUNNING")
        else:
            self._client.set_terminated(run_id, status=status)

    def run(self, run_id: str) -> StoredRun:
        from mlflow.exceptions import MlflowException

        try:
            return _stored(self._client.get_run(run_id))
        except MlflowException as err:
            if err.error_code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
                raise NotFound(f"run {run_id} not found at {self.tracking_uri} (is "
                               "MLFLOW_TRACKING_URI the store it was logged to? evalkit "
                               "history EXPERIMENT lists an experiment's runs): "
                               f"{self.hide_password(err.message)}") from None
            raise self._unreachable(err) from None

    def metric_history(self, run_id: str, key: str) -> list[LoggedPoint]:
        return [LoggedPoint(m.key, m.value, m.step, m.timestamp)
                for m in self._client.get_metric_history(run_id, key)]

    def artifact(self, run_id: str, path: str) -> bytes:
        from mlflow.exceptions import MlflowException

        with tempfile.TemporaryDirectory() as scratch:
            try:
                local = self._client.download_artifacts(run_id, path, scratch)
            except (MlflowException, OSError) as err:
                raise TrackingError(f"run {run_id} has no {path}: it did not finish "
                                    f"({self.hide_password(str(err))})") from None
            return Path(local).read_bytes()

    def runs(self, experiment_id: str, limit: int) -> list[StoredRun]:
        return [_stored(r) for r in self._client.search_runs(
            [experiment_id], max_results=limit, order_by=["attributes.start_time DESC"])]

    def run_ids(self, prefix: str) -> list[str]:
        from mlflow.entities import ViewType

        experiments = [e.experiment_id for e in self._client.search_experiments(
            view_type=ViewType.ALL)]
        return [run.info.run_id for run in self._client.search_runs(
            experiments, run_view_type=ViewType.ALL, max_results=50000)
            if run.info.run_id.startswith(prefix)]

    def human_feedback(self, experiment_id: str, run_id: str) -> tuple[ReviewerVerdict, ...]:
        return genai.human_feedback(self._client, experiment_id, run_id)

    def register_dataset(self, experiment_id: str, params: Mapping[str, str],
                         entries: Mapping[str, tuple[Any, Any]]) -> None:
        genai.register_evaluation_dataset(self._client, experiment_id, params, entries)

    def register_prompts(self, run_id: str,
                         prompts: Mapping[str, PromptTemplate]) -> None:
        genai.register_prompts(self._client, run_id, prompts)

    def trace_store(self) -> TraceStore:
        if self._traces is None:
            self._traces = genai.MlflowTraceStore(self._client, self._connection.uri)
        return self._traces

    def _unreachable(self, err: BaseException) -> ConfigError | TrackingError:
        if refused := self.refusal(err, None, "READ"):
            return refused
        return TrackingError(f"cannot read from the MLflow tracking store at "
                             f"{self.tracking_uri} ({self.hide_password(str(err))[:300]}). "
                             "Start the server, correct MLFLOW_TRACKING_URI, or unset it to "
                             f"use the local store {LOCAL_STORE}")


def _stored(run: Any) -> StoredRun:
    return StoredRun(
        run_id=run.info.run_id, run_name=run.info.run_name,
        experiment_id=str(run.info.experiment_id), start_time_ms=run.info.start_time,
        status=run.info.status, params=dict(run.data.params), tags=dict(run.data.tags),
        metrics=dict(run.data.metrics))
