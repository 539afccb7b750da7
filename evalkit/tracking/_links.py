"""Where a person opens a run: its page in the MLflow UI, never with credentials."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

LOCAL_UI = "http://127.0.0.1:5000"
"""What ``evalkit ui`` serves for the local store (sqlite or a folder) by default."""


def shown_uri(tracking_uri: str) -> str:
    """A tracking URI as it may be printed: a server's address without user, password or
    query (where a token could sit); a local store's path as it is."""
    return _without_credentials(tracking_uri) if _is_server(tracking_uri) else tracking_uri


def ui_base(tracking_uri: str) -> str:
    """The MLflow UI of a tracking URI: a server's own address without user, password, query
    or fragment; for a local store, the address ``evalkit ui`` serves it on."""
    return shown_uri(tracking_uri) if _is_server(tracking_uri) else LOCAL_UI


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
