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
import fcntl
import json
import logging
import os
import re
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit._bundle import BUNDLES_DIR, Point, RunJournal, mark_synced
from evalkit._errors import ExitStatus, TrackingError
from evalkit._metrics import MetricPoint, TypeMetrics
from evalkit._scoring import ScoredRun

logger = logging.getLogger("evalkit")

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
PROBE_ARTIFACT = "evalkit/run.json"
"""Written when the run starts: proves the artifact store takes writes before any call."""
RAW_ARTIFACT_DIR = "raw"
REPORTS_ARTIFACT_DIR = "reports"
_MAX_PARAM_LENGTH = 6000
_RUN_ID = re.compile(r"^[0-9a-f]{32}$")


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


class TrackingOffline(TrackingError):
    """The tracking server became unreachable mid-run; the run was saved as a local bundle."""

    exit_status = ExitStatus.TRACKING_OFFLINE

    def __init__(self, bundles: list[Path], tracking_uri: str) -> None:
        self.bundles = bundles
        names = ", ".join(str(b) for b in bundles)
        super().__init__(f"the tracking server at {tracking_uri} became unreachable during the "
                         f"run; nothing was lost: the run is saved as a local bundle in {names}."
                         f" Upload it once the server is back: evalkit sync {names}")


# evalkit's own tracking calls fail in seconds, not after MLflow's default of seven retries
# with exponential backoff (about four minutes against a dead server). Set these variables
# yourself to choose other bounds.
_BOUNDED_HTTP = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
                 "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
                 "MLFLOW_HTTP_REQUEST_TIMEOUT": "15"}
_HEALTH_TIMEOUT_SECONDS = 5.0


class Tracker:
    """A thin, batched layer over :class:`mlflow.MlflowClient` that survives an outage.

    Every write is also journaled (:class:`RunJournal`). If an HTTP tracking server stops
    answering during a run, the run continues against the journal alone; when it finishes,
    the journal is written as a bundle and :class:`TrackingOffline` names it.
    """

    def __init__(self, tracking_uri: str | None = None, bundles_dir: Path = BUNDLES_DIR) -> None:
        for name, value in _BOUNDED_HTTP.items():
            os.environ.setdefault(name, value)
        import mlflow  # ~1 s import, paid only when a run is tracked

        self.tracking_uri = tracking_uri or mlflow.get_tracking_uri()
        self.bundles_dir = bundles_dir
        with _local_store_lock(self.tracking_uri):
            self._client = mlflow.MlflowClient(self.tracking_uri)  # creates a new store's schema
        self._journals: dict[str, RunJournal] = {}
        self._offline: set[str] = set()
        self._resumed: set[str] = set()
        """Runs continued by :meth:`resume_run`: they may hold metric points already."""
        self.bundles: list[Path] = []

    @property
    def is_remote(self) -> bool:
        return self.tracking_uri.startswith(("http://", "https://"))

    def check_reachable(self) -> None:
        """For a tracking server: answer ``/health`` within seconds, or :class:`TrackingError`
        naming the URI and the fix."""
        if not self.is_remote:
            return
        url = self.tracking_uri.rstrip("/") + "/health"
        try:
            with urllib.request.urlopen(url, timeout=_HEALTH_TIMEOUT_SECONDS):
                return
        except urllib.error.HTTPError as err:
            if err.code < 500:  # it answered (a 401 from an auth proxy is still an answer)
                return
            problem = f"HTTP {err.code}"
        except (OSError, ValueError) as err:
            problem = str(getattr(err, "reason", err))
        raise TrackingError(f"cannot reach the MLflow tracking server at {self.tracking_uri} "
                            f"({problem}). Start the server, correct MLFLOW_TRACKING_URI, or "
                            "unset it to use the local store sqlite:///mlflow.db")

    def start_run(self, experiment_name: str, run_name: str, params: Mapping[str, str],
                  tags: Mapping[str, str]) -> str:
        """Check the destination (reachable, experiment usable, artifacts writable), create the
        run with its params and tags, and return its id. Fails in seconds, before any
        component call, with the URI and the fix."""
        from mlflow.entities import Param, RunTag

        checked = [Param(k, _param(v)) for k, v in sorted(params.items())]
        self.check_reachable()
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
                                f"{run.info.artifact_uri}: {err}. Check the server's artifact "
                                "store (--artifacts-destination) and its permissions") from err
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
        table = _table(evaluation)
        journal = self._journals[run_id]
        journal.artifacts[EVALUATION_ARTIFACT] = text.encode("utf-8")
        journal.artifacts[TABLE_ARTIFACT] = _table_json(table).encode("utf-8")
        def upload() -> None:
            self._client.log_text(run_id, text, EVALUATION_ARTIFACT)
            self._client.log_table(run_id, table, TABLE_ARTIFACT)

        self._write(run_id, upload)

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
            self.bundles.append(journal.write(self.bundles_dir))
            if status == "FINISHED":
                raise TrackingOffline(list(self.bundles), self.tracking_uri)

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
                                    f"({err})") from None
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

    def run_data(self, run_id: str) -> Any:
        """One run's info, params, tags and latest metrics (MLflow ``Run``)."""
        from mlflow.exceptions import MlflowException

        try:
            return self._client.get_run(run_id)
        except MlflowException as err:
            raise TrackingError(f"run {run_id} not found at {self.tracking_uri}: "
                                f"{err.message}") from None

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
                self._client.log_table(run_id, _table_from_json(journal.artifact_bytes(path)),
                                       TABLE_ARTIFACT)
            else:
                directory = str(Path(path).parent) if "/" in path else None
                self._client.log_artifact(run_id, str(folder / "artifacts" / path), directory)
        self._client.set_terminated(run_id, status=journal.status
                                    if journal.status != "RUNNING" else "FAILED")
        mark_synced(folder, run_id, self.tracking_uri)
        return run_id

    def _unlogged(self, run_id: str, points: Sequence[Point], held_possible: bool) -> list[Point]:
        """``points`` minus those the run already holds (a resumed or synced run may hold some
        already; logging them again would double its metric histories)."""
        if not held_possible:
            return list(points)
        held: set[tuple[str, int, float]] = set()
        for key in {p[0] for p in points}:
            held |= {(key, m.step, m.value) for m in self._client.get_metric_history(run_id, key)}
        return [p for p in points if (p[0], p[2], p[1]) not in held]

    def _write(self, run_id: str, action: Callable[[], object]) -> None:
        """Send one write to MLflow; if the server has become unreachable, keep the run going
        against its journal from now on."""
        if run_id in self._offline:
            return
        try:
            action()
        except Exception as err:
            if not self.is_remote or self._answers():
                raise
            logger.warning("tracking server %s unreachable (%s); the run goes on and will be "
                           "saved as a local bundle", self.tracking_uri, err)
            self._offline.add(run_id)

    def _answers(self) -> bool:
        try:
            self.check_reachable()
        except TrackingError:
            return False
        return True

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


@contextlib.contextmanager
def _local_store_lock(tracking_uri: str) -> Iterator[None]:
    """Hold an exclusive file lock beside a local SQLite store while it is opened: two
    evaluations starting together on a fresh store would otherwise race on its schema."""
    if not tracking_uri.startswith("sqlite:///"):
        yield
        return
    database = Path(tracking_uri.removeprefix("sqlite:///"))
    database.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{database}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


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


def _table_json(table: Mapping[str, list[Any]]) -> str:
    """The table as ``mlflow.log_table`` stores it (pandas "split" orientation)."""
    import pandas

    return str(pandas.DataFrame(table).to_json(orient="split", index=False))


def _table_from_json(content: bytes) -> Any:
    import io

    import pandas

    return pandas.read_json(io.StringIO(content.decode("utf-8")), orient="split")


def build_record(*, run_id: str, run_name: str, experiment_id: str, experiment_name: str,
                 start_time_ms: int, status: str, params: Mapping[str, str],
                 tags: Mapping[str, str], metrics: Mapping[str, float],
                 read_json: Callable[[str], Any],
                 history: Callable[[str], tuple[float, ...]]) -> RunRecord:
    """A :class:`RunRecord` from a run's data and readers of its artifacts and histories;
    the same for a run on a server, in the local store, or in a bundle."""
    mode = tags.get("mode", "")
    evaluation = None if mode in _WITHOUT_EVALUATION else ScoredRun.from_json(
        read_json(EVALUATION_ARTIFACT))
    documents = {}
    for path in MODE_DOCUMENTS.get(mode, ()):
        # A document may not be written yet: a calibration run renders twice.
        with contextlib.suppress(TrackingError):
            documents[path] = read_json(path)
    histories = {key: history(key) for result in (evaluation.types if evaluation else ())
                 for key in TypeMetrics.history_keys(result.test_type)}
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
