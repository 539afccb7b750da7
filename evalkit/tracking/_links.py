"""Where a person opens a run: its page in the MLflow UI, never with credentials.

A tracking server's UI is the server itself. A local store's UI is what ``evalkit ui`` serves:
while it runs it records its address in ``.evalkit/ui.json`` (:class:`ServedUi`), and links
follow that address; ``EVALKIT_UI_URL`` names another (a UI behind a tunnel or proxy).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

LOCAL_UI = "http://127.0.0.1:5000"
"""What ``evalkit ui`` serves a local store (sqlite or a folder) on by default."""
UI_URL_VARIABLE = "EVALKIT_UI_URL"
"""The UI of a local store, when set: overrides what ``evalkit ui`` recorded."""
SERVED_UI = Path(".evalkit") / "ui.json"


@dataclass(frozen=True)
class ServedUi:
    """What ``evalkit ui`` serves: the store, on host:port, by the server process ``pid``."""

    store: str
    host: str
    port: int
    pid: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def record(self, path: Path = SERVED_UI) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self)) + "\n", encoding="utf-8")

    def forget(self, path: Path = SERVED_UI) -> None:
        """Remove the record, unless another ``evalkit ui`` has replaced it since."""
        if self._read(path) == self:
            path.unlink(missing_ok=True)

    @classmethod
    def recorded(cls, path: Path = SERVED_UI) -> ServedUi | None:
        """The UI recorded at ``path`` if its server still runs, else ``None``."""
        served = cls._read(path)
        return served if served is not None and _running(served.pid) else None

    @classmethod
    def _read(cls, path: Path) -> ServedUi | None:
        try:
            return cls(**json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):  # none, or not one evalkit wrote
            return None


def shown_uri(tracking_uri: str) -> str:
    """A tracking URI as it may be printed: a server's address without user, password or
    query (where a token could sit); a local store's path as it is."""
    return _without_credentials(tracking_uri) if _is_server(tracking_uri) else tracking_uri


def ui_base(tracking_uri: str, served: Path = SERVED_UI) -> str:
    """The MLflow UI of a tracking URI: a server's own address without user, password, query
    or fragment; for a local store, ``EVALKIT_UI_URL`` when set, else the address the
    ``evalkit ui`` recorded at ``served`` serves it on, else :data:`LOCAL_UI`."""
    if _is_server(tracking_uri):
        return shown_uri(tracking_uri)
    if override := os.environ.get(UI_URL_VARIABLE):
        return override.rstrip("/")
    ui = ServedUi.recorded(served)
    return ui.url if ui is not None and ui.store == tracking_uri else LOCAL_UI


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    except (OSError, OverflowError):  # not a pid at all
        return False
    return True


def _is_server(uri: str) -> bool:
    return urlsplit(uri).scheme in ("http", "https")


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def run_url(tracking_uri: str, experiment_id: str, run_id: str) -> str:
    """The run's page: ``<ui>/#/experiments/<experiment_id>/runs/<run_id>``."""
    return f"{ui_base(tracking_uri)}/#/experiments/{experiment_id}/runs/{run_id}"
