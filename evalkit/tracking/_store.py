"""The connection to an MLflow tracking store: the client, reachability, experiments.

The local store (``sqlite:///mlflow.db`` in the working directory, MLflow's default) is used
unless ``MLFLOW_TRACKING_URI`` names another, such as a team server.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from evalkit._errors import ExitStatus, TrackingError
from evalkit.tracking._bundle import BUNDLES_DIR, Point, RunJournal


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


class TrackingStore:
    """An :class:`mlflow.MlflowClient` on one tracking URI, with the run journals of this
    process; the reading, writing and syncing sides of :class:`Tracker` build on it."""

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
        """Runs whose server became unreachable: they go on against their journal."""

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

    def run_data(self, run_id: str) -> Any:
        """One run's info, params, tags and latest metrics (MLflow ``Run``)."""
        from mlflow.exceptions import MlflowException

        try:
            return self._client.get_run(run_id)
        except MlflowException as err:
            raise TrackingError(f"run {run_id} not found at {self.tracking_uri}: "
                                f"{err.message}") from None

    def _unlogged(self, run_id: str, points: Sequence[Point], held_possible: bool) -> list[Point]:
        """``points`` minus those the run already holds (a resumed or synced run may hold some
        already; logging them again would double its metric histories)."""
        if not held_possible:
            return list(points)
        held: set[tuple[str, int, float]] = set()
        for key in {p[0] for p in points}:
            held |= {(key, m.step, m.value) for m in self._client.get_metric_history(run_id, key)}
        return [p for p in points if (p[0], p[2], p[1]) not in held]

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
