"""The connection to an MLflow tracking store: the client, reachability, experiments.

The local store (``sqlite:///mlflow.db`` in the working directory, MLflow's default) is used
unless ``MLFLOW_TRACKING_URI`` names another, such as a team server.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import logging
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from evalkit._errors import ExitStatus, TrackingError
from evalkit.tracking._bundle import BUNDLES_DIR, Point, RunJournal

logger = logging.getLogger("evalkit")


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

        self._uri = tracking_uri or mlflow.get_tracking_uri()
        """The URI as given, credentials included: only the client and the health check see
        it."""
        self.tracking_uri, self._password = _with_password_masked(self._uri)
        """The URI to show and record: a password in it is replaced by ``***``."""
        if self._password:
            # MLflow prints each run's URL, host credentials included, when a run ends.
            os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
        self.bundles_dir = bundles_dir
        with _local_store_lock(self._uri):
            self._client = mlflow.MlflowClient(self._uri)  # creates a new store's schema
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
        try:
            with urllib.request.urlopen(_health_request(self._uri),
                                        timeout=_HEALTH_TIMEOUT_SECONDS):
                return
        except urllib.error.HTTPError as err:
            if err.code < 500:  # it answered (a 401 from an auth proxy is still an answer)
                return
            problem = f"HTTP {err.code}"
        except (OSError, ValueError) as err:
            problem = self.hide_password(str(getattr(err, "reason", err)))
        raise TrackingError(f"cannot reach the MLflow tracking server at {self.tracking_uri} "
                            f"({problem}). Start the server, correct MLFLOW_TRACKING_URI, or "
                            "unset it to use the local store sqlite:///mlflow.db")

    def hide_password(self, text: str) -> str:
        """``text`` with the URI's password, if any, replaced by ``***``."""
        return text.replace(self._password, "***") if self._password else text

    def run_data(self, run_id: str) -> Any:
        """One run's info, params, tags and latest metrics (MLflow ``Run``)."""
        from mlflow.exceptions import MlflowException

        try:
            return self._client.get_run(run_id)
        except MlflowException as err:
            if err.error_code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
                raise TrackingError(f"run {run_id} not found at {self.tracking_uri}: "
                                    f"{self.hide_password(err.message)}") from None
            raise self.unreachable(err) from None

    def unreachable(self, err: BaseException) -> TrackingError:
        """The one-line error of a store that failed to answer a read."""
        return TrackingError(f"cannot read from the MLflow tracking store at "
                             f"{self.tracking_uri} ({self.hide_password(str(err))[:300]}). "
                             "Start the server, correct MLFLOW_TRACKING_URI, or unset it to "
                             "use the local store sqlite:///mlflow.db")

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
                           "saved as a local bundle", self.tracking_uri,
                           self.hide_password(str(err)))
            self._offline.add(run_id)

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


def _with_password_masked(uri: str) -> tuple[str, str | None]:
    """The URI with its password masked, and the password (``None`` when it has none)."""
    parts = urlsplit(uri)
    if parts.password is None:
        return uri, None
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}")), parts.password


def _health_request(uri: str) -> urllib.request.Request:
    """``GET /health`` of a tracking server; credentials in the URI are sent as basic auth
    (as MLflow's own client does), never as part of the URL."""
    parts = urlsplit(uri)
    host = parts.netloc.rpartition("@")[2]
    url = urlunsplit(parts._replace(netloc=host)).rstrip("/") + "/health"
    request = urllib.request.Request(url)
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        request.add_header("Authorization",
                           "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii"))
    return request


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
