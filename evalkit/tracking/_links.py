"""Where a person opens a run: its page in the MLflow UI, never with credentials.

A tracking server's UI is the server itself. A local store's UI is what ``evalkit ui`` serves:
it records its address in ``.evalkit/ui.json`` (:class:`ServedUi`) and the record stays after
it stops. Links follow that address whether or not the UI is serving when a run ends, and a
plain ``evalkit ui`` serves the recorded port again (:func:`ui_port`): a link a run recorded
while no UI was serving opens once ``evalkit ui`` is started, on whatever port was chosen last.
(A link only to a UI running at the time would name 5000 for those runs, for good, once
``evalkit ui --port`` had moved the UI elsewhere.) ``EVALKIT_UI_URL`` names another UI (behind
a tunnel or proxy).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

LOCAL_PORT = 5000
LOCAL_UI = f"http://127.0.0.1:{LOCAL_PORT}"
"""What ``evalkit ui`` serves a local store (sqlite or a folder) on before any other port
was chosen."""
UI_URL_VARIABLE = "EVALKIT_UI_URL"
"""The UI of a local store, when set: overrides what ``evalkit ui`` recorded."""
SERVED_UI = Path(".evalkit") / "ui.json"


@dataclass(frozen=True)
class ServedUi:
    """What ``evalkit ui`` serves or served last from this folder: the store, on host:port,
    by the server process ``pid``."""

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

    @classmethod
    def recorded(cls, path: Path = SERVED_UI) -> ServedUi | None:
        """The UI recorded at ``path``, serving or not; ``None`` without a record."""
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
    ``evalkit ui`` recorded at ``served`` serves (or last served) it on, else
    :data:`LOCAL_UI`."""
    if _is_server(tracking_uri):
        return shown_uri(tracking_uri)
    if override := os.environ.get(UI_URL_VARIABLE):
        return override.rstrip("/")
    ui = ServedUi.recorded(served)
    return ui.url if ui is not None and ui.store == tracking_uri else LOCAL_UI


def ui_port(store: str, served: Path = SERVED_UI) -> int:
    """The port a plain ``evalkit ui`` serves ``store`` on: the one recorded for it at
    ``served``, which the store's run links name, else :data:`LOCAL_UI`'s."""
    ui = ServedUi.recorded(served)
    return ui.port if ui is not None and ui.store == store else LOCAL_PORT


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
