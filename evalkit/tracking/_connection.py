"""Where runs are tracked: the tracking URI, its credentials kept out of sight, a server's
health, and the lock that lets two evaluations create a fresh local store together.

The local store (``sqlite:///mlflow.db`` in the working directory) is used unless
``MLFLOW_TRACKING_URI`` names another, such as a team server. Nothing here imports MLflow.
"""

from __future__ import annotations

import base64
import contextlib
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from filelock import FileLock

from evalkit._errors import ConfigError, TrackingError

LOCAL_STORE = "sqlite:///mlflow.db"
CREDENTIAL_VARIABLES = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD",
                        "MLFLOW_TRACKING_TOKEN")
"""Where MLflow's client takes a server's credentials from (besides the URI itself)."""
_HEALTH_TIMEOUT_SECONDS = 5.0


def local_store() -> str:
    """The local store of the working folder, by its absolute path."""
    return f"sqlite:///{Path('mlflow.db').resolve()}"


@dataclass(frozen=True)
class Connection:
    """A tracking URI as given (credentials included: only MLflow's client and the health
    check see it) and as shown everywhere else (a password replaced by ``***``)."""

    uri: str
    shown: str
    password: str | None

    @classmethod
    def to(cls, uri: str) -> Connection:
        parts = urlsplit(uri)
        if parts.password is None:
            return cls(uri, uri, None)
        host = parts.netloc.rpartition("@")[2]
        return cls(uri, urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}")),
                   parts.password)

    @property
    def is_remote(self) -> bool:
        return self.uri.startswith(("http://", "https://"))

    def hide_password(self, text: str) -> str:
        """``text`` with the URI's password, if any, replaced by ``***``."""
        return text.replace(self.password, "***") if self.password else text

    def check_reachable(self) -> None:
        """For a tracking server: answer ``/health`` within seconds, or :class:`TrackingError`
        naming the URI and the fix. A local store is always there."""
        if not self.is_remote:
            return
        try:
            with urllib.request.urlopen(_health_request(self.uri),
                                        timeout=_HEALTH_TIMEOUT_SECONDS):
                return
        except urllib.error.HTTPError as err:
            if err.code < 500:  # it answered (a 401 from an auth proxy is still an answer)
                return
            problem = f"HTTP {err.code}"
        except (OSError, ValueError) as err:
            problem = self.hide_password(str(getattr(err, "reason", err)))
        raise TrackingError(f"cannot reach the MLflow tracking server at {self.shown} "
                            f"({problem}). Start the server, correct MLFLOW_TRACKING_URI, or "
                            f"unset it to use the local store {LOCAL_STORE}")

    def refusal(self, error_code: str | None, experiment: str | None,
                permission: str) -> ConfigError | None:
        """The fix, when the server refused who we are (``UNAUTHENTICATED``, HTTP 401) or
        what we asked of ``experiment`` without ``permission`` (``PERMISSION_DENIED``, 403);
        ``None`` for any other error. Names the credential variables set, never a value."""
        if error_code == "UNAUTHENTICATED":
            given = [name for name in CREDENTIAL_VARIABLES if os.environ.get(name)]
            if urlsplit(self.uri).username is not None:
                given.append("a user in MLFLOW_TRACKING_URI")
            return ConfigError(
                f"the MLflow tracking server at {self.shown} refused the credentials (HTTP "
                f"401; set: {', '.join(given) or 'none'}). Set MLFLOW_TRACKING_USERNAME and "
                "MLFLOW_TRACKING_PASSWORD, or MLFLOW_TRACKING_TOKEN, to an account of that "
                "server")
        if error_code == "PERMISSION_DENIED":
            user = (os.environ.get("MLFLOW_TRACKING_USERNAME") or urlsplit(self.uri).username
                    or "this client's user")
            where = f"experiment {experiment!r}" if experiment else "the run's experiment"
            return ConfigError(
                f"user {user} lacks {permission} permission on {where} at {self.shown} "
                f"(HTTP 403): an admin of the server grants it (or use another user)")
        return None

    def answers(self) -> bool:
        try:
            self.check_reachable()
        except TrackingError:
            return False
        return True


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


def local_store_lock(tracking_uri: str) -> contextlib.AbstractContextManager[object]:
    """An exclusive file lock beside a local SQLite store, held while it is opened: two
    evaluations starting together on a fresh store would otherwise race on its schema."""
    if not tracking_uri.startswith("sqlite:///"):
        return contextlib.nullcontext()
    database = Path(tracking_uri.removeprefix("sqlite:///"))
    database.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(f"{database}.lock")
