"""MLflow tracking: one run per evaluation, logged in batches, and read back whole.

The local store (``sqlite:///mlflow.db`` in the working directory, MLflow's default) is used
unless ``MLFLOW_TRACKING_URI`` names another, such as a team server. Everything a report needs
is written to the run, so :meth:`Tracker.fetch` can rebuild any past run's reports.

Artifact layout of a run::

    results/evaluation.json     every scored item (the reports are rendered from it)
    results/entries.json        per-entry results table (mlflow.log_table), for the UI
    raw/raw-results.jsonl       every component call as it happened
    reports/report-<type>.md    the reports of the run

and of the parent run of a replicate series (``mode`` tag ``replicates``)::

    stability/stability.json    per metric: rates, mean, sd, spread, variance split, flips
    stability/items.json        every item's result in every replicate
    stability/replicates.lock.json   the seeds of the replicates
    reports/report-stability.md

and of a calibration run (``mode`` tag ``calibration``), besides the ordinary artifacts::

    calibration/calibration.json     pass rate by repeat count k, the recommended k
    reports/report-calibration.md, reports/calibration.png
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit._errors import TrackingError
from evalkit._metrics import MetricPoint, TypeMetrics
from evalkit._scoring import ScoredRun

EVALUATION_ARTIFACT = "results/evaluation.json"
STABILITY_ARTIFACT = "stability/stability.json"
STABILITY_ITEMS_ARTIFACT = "stability/items.json"
LOCK_ARTIFACT = "stability/replicates.lock.json"
CALIBRATION_ARTIFACT = "calibration/calibration.json"
PLAN_ARTIFACT = "planning/plan.json"
MODE_DOCUMENTS: Mapping[str, tuple[str, ...]] = {
    "replicates": (STABILITY_ARTIFACT, STABILITY_ITEMS_ARTIFACT),
    "calibration": (CALIBRATION_ARTIFACT,),
    "planning": (PLAN_ARTIFACT,),
}
"""The JSON artifacts a run of each mode holds beside (or instead of) evaluation.json."""
_WITHOUT_EVALUATION = frozenset({"replicates", "planning"})
TABLE_ARTIFACT = "results/entries.json"
RAW_ARTIFACT_DIR = "raw"
REPORTS_ARTIFACT_DIR = "reports"
_MAX_PARAM_LENGTH = 6000


@dataclass(frozen=True)
class RunRecord:
    """Everything MLflow holds about one evaluation run, or one replicate series' parent."""

    run_id: str
    run_name: str
    experiment_id: str
    experiment_name: str
    start_time_ms: int
    status: str
    params: Mapping[str, str]
    tags: Mapping[str, str]
    metrics: Mapping[str, float]
    histories: Mapping[str, tuple[float, ...]]
    evaluation: ScoredRun | None
    """Scored items; ``None`` for runs that call no component (a replicate parent, a plan)."""
    documents: Mapping[str, Any] = field(default_factory=dict)
    """The JSON artifacts of the run's mode (see :data:`MODE_DOCUMENTS`), by artifact path."""

    @property
    def mode(self) -> str | None:
        """``replicates``, ``calibration``, ``planning``, or ``None`` for an ordinary run."""
        return self.tags.get("mode")


class Tracker:
    """A thin, batched layer over :class:`mlflow.MlflowClient`."""

    def __init__(self, tracking_uri: str | None = None) -> None:
        import mlflow  # ~1 s import, paid only when a run is tracked

        self.tracking_uri = tracking_uri or mlflow.get_tracking_uri()
        self._client = mlflow.MlflowClient(self.tracking_uri)

    def start_run(self, experiment_name: str, run_name: str, params: Mapping[str, str],
                  tags: Mapping[str, str]) -> str:
        """Create the run with its params and tags; return its id."""
        from mlflow.entities import Param, RunTag

        checked = [Param(k, _param(v)) for k, v in sorted(params.items())]
        try:
            experiment_id = self._experiment_id(experiment_name)
            run = self._client.create_run(experiment_id, run_name=run_name)
            self._client.log_batch(run.info.run_id, params=checked,
                                   tags=[RunTag(k, v) for k, v in sorted(tags.items())])
        except TrackingError:
            raise
        except Exception as err:  # any failure here means MLflow is unusable: say where
            raise TrackingError(f"cannot start an MLflow run at {self.tracking_uri}: {err}. "
                                "Check MLFLOW_TRACKING_URI (unset it to use the local store "
                                "sqlite:///mlflow.db)") from err
        return run.info.run_id

    def log_results(self, run_id: str, points: Sequence[MetricPoint],
                    tags: Mapping[str, str] | None = None) -> None:
        """All metric points (and closing tags) in one batched call; MLflow splits it below
        its request limits."""
        from mlflow.entities import Metric, RunTag

        timestamp = _now_ms()
        self._client.log_batch(
            run_id,
            metrics=[Metric(key, float(value), timestamp, step) for key, value, step in points],
            tags=[RunTag(k, v) for k, v in sorted((tags or {}).items())])

    def log_evaluation(self, run_id: str, evaluation: ScoredRun) -> None:
        self._client.log_text(run_id, json.dumps(evaluation.to_json(), ensure_ascii=False,
                                                 indent=1), EVALUATION_ARTIFACT)
        self._client.log_table(run_id, _table(evaluation), TABLE_ARTIFACT)

    def log_file(self, run_id: str, path: Path, artifact_dir: str) -> None:
        self._client.log_artifact(run_id, str(path), artifact_dir)

    def log_text(self, run_id: str, text: str, artifact_file: str) -> None:
        self._client.log_text(run_id, text, artifact_file)

    def finish(self, run_id: str, status: str = "FINISHED") -> None:
        self._client.set_terminated(run_id, status=status)

    def fetch(self, run_id: str) -> RunRecord:
        """Read a run back whole: params, tags, metrics, stepped histories and results."""
        run = self.run_data(run_id)
        experiment = self._client.get_experiment(run.info.experiment_id)
        tags = dict(run.data.tags)
        mode = tags.get("mode", "")
        evaluation = None if mode in _WITHOUT_EVALUATION else ScoredRun.from_json(
            self.read_json(run_id, EVALUATION_ARTIFACT))
        documents = {}
        for path in MODE_DOCUMENTS.get(mode, ()):
            # A document may not be written yet: a calibration run renders twice.
            with contextlib.suppress(TrackingError):
                documents[path] = self.read_json(run_id, path)
        histories = {}
        for result in evaluation.types if evaluation else ():
            for key in TypeMetrics.history_keys(result.test_type):
                points = self._client.get_metric_history(run_id, key)
                histories[key] = tuple(m.value for m in sorted(points, key=lambda m: m.step))
        return RunRecord(
            run_id=run_id, run_name=run.info.run_name, experiment_id=run.info.experiment_id,
            experiment_name=experiment.name, start_time_ms=run.info.start_time,
            status=run.info.status, params=dict(run.data.params), tags=tags,
            metrics=dict(run.data.metrics), histories=histories, evaluation=evaluation,
            documents=documents)

    def read_json(self, run_id: str, artifact: str) -> Any:
        """A JSON artifact of a run."""
        from mlflow.exceptions import MlflowException

        with tempfile.TemporaryDirectory() as scratch:
            try:
                local = self._client.download_artifacts(run_id, artifact, scratch)
            except (MlflowException, OSError) as err:
                raise TrackingError(f"run {run_id} has no {artifact}: it did not finish "
                                    f"({err})") from None
            return json.loads(Path(local).read_text("utf-8"))

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

    def run_data(self, run_id: str) -> Any:
        """One run's info, params, tags and latest metrics (MLflow ``Run``)."""
        from mlflow.exceptions import MlflowException

        try:
            return self._client.get_run(run_id)
        except MlflowException as err:
            raise TrackingError(f"run {run_id} not found at {self.tracking_uri}: "
                                f"{err.message}") from None

    def _experiment_id(self, name: str) -> str:
        from mlflow.exceptions import MlflowException

        experiment = self._client.get_experiment_by_name(name)
        if experiment is not None:
            if experiment.lifecycle_stage == "deleted":
                raise TrackingError(f"experiment {name!r} is deleted at {self.tracking_uri}: "
                                    "restore it in MLflow or change EXPERIMENT_NAME")
            return experiment.experiment_id
        try:
            return self._client.create_experiment(name)
        except MlflowException:  # created concurrently by another evaluation
            experiment = self._client.get_experiment_by_name(name)
            if experiment is None:
                raise
            return experiment.experiment_id


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
    tags = {"mlflow.source.name": script, "git_commit": commit or "unknown"}
    if commit:
        tags["mlflow.source.git.commit"] = commit
        dirty = git("status", "--porcelain", "--untracked-files=no")
        tags["git_dirty"] = "true" if dirty else "false"
    return tags


def _param(value: str) -> str:
    if len(value) > _MAX_PARAM_LENGTH:
        raise TrackingError(f"a param value is {len(value)} characters long; MLflow keeps at "
                            f"most {_MAX_PARAM_LENGTH}: shorten the constant")
    return value


def _now_ms() -> int:
    return int(time.time() * 1000)


def _table(evaluation: ScoredRun) -> dict[str, list[Any]]:
    columns: dict[str, list[Any]] = {name: [] for name in (
        "test_type", "id", "passed", "expected_pass", "correct", "similarity", "error",
        "input", "expected", "outputs")}
    for result in evaluation.types:
        for item in result.items:
            for name, value in (
                ("test_type", result.test_type), ("id", item.id), ("passed", item.passed),
                ("expected_pass", item.expected_pass), ("correct", item.correct),
                ("similarity", item.similarity), ("error", item.error or ""),
                ("input", json.dumps(item.input, ensure_ascii=False)),
                ("expected", json.dumps(item.expected, ensure_ascii=False)),
                ("outputs", json.dumps(list(item.outputs), ensure_ascii=False)),
            ):
                columns[name].append(value)
    return columns
